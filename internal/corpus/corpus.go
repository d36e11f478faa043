// SPDX-License-Identifier: Apache-2.0

// Package corpus locates the shared third-party test corpus for tests.
//
// Tests read it through RUNAGAIN_CORPUS (default ../shared/corpus; a relative path is taken from
// the repository root). When it is missing the test is skipped locally and fails under CI=true, so a CI run can
// never pass by silently not reading it.
package corpus

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir returns the corpus directory, or skips/fails t when it is absent.
func Dir(tb testing.TB) string {
	tb.Helper()
	// A relative RUNAGAIN_CORPUS (and the default) is taken from the repository root, not from
	// each test's package directory.
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	dir := os.Getenv("RUNAGAIN_CORPUS")
	if dir == "" {
		dir = filepath.Join("..", "shared", "corpus")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		dir = abs
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if os.Getenv("CI") != "" {
			tb.Fatalf("corpus not found at %s: set RUNAGAIN_CORPUS", dir)
		}
		tb.Skipf("corpus not found at %s: set RUNAGAIN_CORPUS", dir)
	}
	return dir
}

// Walk returns the files under the corpus folder sub (recursively) for which match is true.
func Walk(tb testing.TB, sub string, match func(path string) bool) []string {
	tb.Helper()
	root := filepath.Join(Dir(tb), sub)
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && match(p) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("walk corpus %s: %v", root, err)
	}
	return out
}
