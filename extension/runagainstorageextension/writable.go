// SPDX-License-Identifier: Apache-2.0

package runagainstorageextension // import "github.com/runagain/runagain/extension/runagainstorageextension"

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// validateWritable checks that the local SQLite files of the hot and warm tiers can be written
// (writableSQLite); each error names the field.
func (c *Config) validateWritable() error {
	var errs []error
	if c.Hot.HasValue() && c.Hot.Get().SQLite.HasValue() && !c.Hot.Get().ClickHouse.HasValue() {
		errs = append(errs, writableSQLite("hot::sqlite::path", c.Hot.Get().SQLite.Get().Path))
	}
	if c.Warm.HasValue() && c.Warm.Get().SQLite.HasValue() && !c.Warm.Get().ClickHouse.HasValue() {
		errs = append(errs, writableSQLite("warm::sqlite::path", c.Warm.Get().SQLite.Get().Path))
	}
	return errors.Join(errs...)
}

// writableSQLite checks, without changing anything, that Start can open path as a SQLite file
// for writing: an existing path must be a writable regular file; its directory, or when that does
// not exist yet the nearest existing ancestor (Start creates the rest), must be a writable
// directory, since SQLite creates the -wal and -shm files and Start the LOCK file beside it.
// Writability is the effective process's access(2) (W_OK) on Unix, so a read-only file system
// fails for root too; elsewhere only the kinds of file are checked. access(2) lets root pass on
// file systems that refuse new files all the same (/proc, /sys), so the directory is also tried
// with one empty file, created and removed at once (canCreateIn). An empty path is left to
// ValidateForReading.
func writableSQLite(field, path string) error {
	if path == "" {
		return nil
	}
	fi, err := os.Stat(path)
	switch {
	case err == nil:
		if fi.IsDir() {
			return fmt.Errorf("%s %q: is a directory; name the SQLite file in it", field, path)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s %q: not a regular file; name the SQLite file", field, path)
		}
		if err := canWrite(path); err != nil {
			return fmt.Errorf("%s %q: cannot be written: %w", field, path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s %q: %w", field, path, err)
	}
	dir := filepath.Dir(path)
	for {
		fi, err := os.Stat(dir)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%s %q: %s is not a directory", field, path, dir)
			}
			if err := canWrite(dir); err != nil {
				return fmt.Errorf("%s %q: directory %s cannot be written: %w", field, path, dir, err)
			}
			if err := canCreateIn(dir); err != nil {
				return fmt.Errorf("%s %q: no file can be created in %s: %w", field, path, dir, err)
			}
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s %q: %w", field, path, err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

// canCreateIn creates and removes an empty file in dir: what Start will do there (the LOCK file,
// SQLite's -wal and -shm), tried, since permission bits do not say it for every file system.
func canCreateIn(dir string) error {
	f, err := os.CreateTemp(dir, ".runagain-validate-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return pe.Err
		}
		return err
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}
