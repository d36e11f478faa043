// SPDX-License-Identifier: Apache-2.0

package dataset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// FileManifest is the name of the exported manifest.
const FileManifest = "manifest.json"

// Export writes version m to dir in the exported layout (package comment). dir must not exist,
// be empty, or hold a previous export (a manifest.json); a previous export is replaced whole.
func (s *Store) Export(ctx context.Context, m *Manifest, dir string) error {
	cases, err := s.Cases(ctx, m)
	if err != nil {
		return err
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		if _, err := os.Stat(filepath.Join(dir, FileManifest)); err != nil {
			return fmt.Errorf("export to %s: the directory is not empty and holds no %s (not a previous export); choose another", dir, FileManifest)
		}
		if err := os.RemoveAll(filepath.Join(dir, "cases")); err != nil {
			return err
		}
	}
	for _, c := range cases {
		for p, b := range c.Files {
			f := filepath.Join(dir, "cases", c.ID, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(f, b, 0o644); err != nil {
				return err
			}
		}
	}
	b, err := writeJSON(m)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, FileManifest), b, 0o644)
}

// ImportResult says what Import did.
type ImportResult struct {
	Manifest *Manifest
	Created  bool     // false: the store already held this version
	Edited   []string // cases whose expect.yaml differs from the exported one (a new version)
	Exported string   // the version id the manifest.json named
}

// ReadDir reads an exported directory into cases, checking every file against the manifest:
// recorded files (run.json, logs.json, bodies/) must hash as listed; expect.yaml may have been
// edited (its case is reported in edited). Every error names the file or case.
func ReadDir(dir string) (*Manifest, []*Case, []string, error) {
	mf := filepath.Join(dir, FileManifest)
	raw, err := os.ReadFile(mf)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("import %s: %w", dir, err)
	}
	var m Manifest
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: not a dataset manifest: %w", mf, err)
	}
	if m.Format != Format {
		return nil, nil, nil, fmt.Errorf("%s: format %q, want %q", mf, m.Format, Format)
	}
	if err := CheckName(m.Name); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", mf, err)
	}
	if len(m.Cases) == 0 {
		return nil, nil, nil, fmt.Errorf("%s: no cases", mf)
	}
	listed := map[string]bool{}
	var cases []*Case
	var edited []string
	for i, ref := range m.Cases {
		if ref.ID == "" || strings.ContainsAny(ref.ID, `/\`) || ref.ID == "." || ref.ID == ".." {
			return nil, nil, nil, fmt.Errorf("%s: case %d: bad id %q", mf, i+1, ref.ID)
		}
		listed[ref.ID] = true
		c := &Case{ID: ref.ID, TraceID: ref.TraceID, Files: map[string][]byte{}}
		for _, f := range ref.Files {
			if strings.Contains(f.Path, "..") || filepath.IsAbs(f.Path) {
				return nil, nil, nil, fmt.Errorf("%s: case %s: bad file path %q", mf, ref.ID, f.Path)
			}
			p := filepath.Join(dir, "cases", ref.ID, filepath.FromSlash(f.Path))
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("case %s: %w", ref.ID, err)
			}
			if got := sum(b); got != f.SHA256 {
				if f.Path != FileExpect {
					return nil, nil, nil, fmt.Errorf("case %s: %s: its SHA-256 is %s, the manifest says %s: recorded files are frozen (only %s may be edited)", ref.ID, p, got, f.SHA256, FileExpect)
				}
				edited = append(edited, ref.ID)
			}
			c.Files[f.Path] = b
		}
		if err := c.parse(); err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", dir, err)
		}
		cases = append(cases, c)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "cases"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil, err
	}
	for _, e := range ents {
		if e.IsDir() && !listed[e.Name()] {
			return nil, nil, nil, fmt.Errorf("%s: case directory %s is not listed in %s", dir, filepath.Join(dir, "cases", e.Name()), FileManifest)
		}
	}
	return &m, cases, edited, nil
}

// Import reads an exported directory (ReadDir) and stores it as a version of the dataset the
// manifest names, keeping its note, and its creation time unless expectations were edited. Unedited, it is the same version (same
// digest) as the one exported. On any error nothing is written.
func (s *Store) Import(ctx context.Context, dir string) (*ImportResult, error) {
	m, cases, edited, err := ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if !m.Created.IsZero() && len(edited) == 0 { // an edited directory is a new version, created now
		saved := s.now
		s.now = func() time.Time { return m.Created }
		defer func() { s.now = saved }()
	}
	nm, created, err := s.Put(ctx, m.Name, m.Note, cases)
	if err != nil {
		return nil, err
	}
	return &ImportResult{Manifest: nm, Created: created, Edited: edited, Exported: m.Version}, nil
}

// LoadCaseDir reads one case directory (as `runagain test` gives it in RUNAGAIN_CASE_DIR, or
// DIR/cases/<id> of an export): every file under it, parsed like a stored case. The case id is
// the directory's name.
func LoadCaseDir(dir string) (*Case, error) {
	c := &Case{ID: filepath.Base(dir), Files: map[string][]byte{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		c.Files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		return nil, err
	}
	return c, c.parse()
}
