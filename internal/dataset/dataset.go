// SPDX-License-Identifier: Apache-2.0

// Package dataset keeps versioned regression datasets: agent runs frozen as cases (their spans,
// rehydrated payloads and recorded HTTP fixtures, the log records that point at them, and the
// expectations a new run of the agent must meet), stored in any gocloud.dev/blob bucket.
//
// # Versions
//
// A version is immutable and content-addressed (docs/architecture.md "Reruns and datasets"): each case is a
// small set of files (see Case), the case digest is the SHA-256 of the sha256sum-style listing of
// its files ("<sha256 hex>  <path>\n", sorted by path), and the version id is the SHA-256 of the
// listing of its cases ("<case digest>  <case id>\n", sorted by case id). The same cases give the
// same version, whatever the dataset's note, creation time or store.
//
// # Bucket layout
//
//	objects/<sha256 hex>                 every file of every case, stored once by content
//	versions/<name>/<version id>.json    the version's Manifest (JSON)
//
// # Exported layout (Export, Import)
//
//	DIR/manifest.json                    the Manifest (indented JSON)
//	DIR/cases/<case id>/run.json         the run's spans, OTLP JSON (indented), fixture bodies moved out
//	DIR/cases/<case id>/logs.json        log records pointing at the run (alerts, divergences), OTLP JSON; only when any
//	DIR/cases/<case id>/bodies/<span id>.request|response[.json|.txt|.bin]   recorded HTTP bodies, byte for byte
//	DIR/cases/<case id>/expect.yaml      the case's expectations (editable; see Expectations)
//
// Pinning: every run in any version of any dataset is pinned (Store.PinnedTraceIDs, read by
// internal/pins); the storage extension's janitors ask internal/pins for the pinned trace ids
// before each retention pass and never delete those runs.
package dataset

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/runagain/runagain/internal/payloadref/ref"
	"github.com/runagain/runagain/internal/pins"
)

// Format is the manifest's format marker.
const Format = "runagain.dataset/v1"

// ErrNotFound is wrapped by errors for an unknown dataset or version.
var ErrNotFound = errors.New("not found")

// Manifest describes one version of a dataset.
type Manifest struct {
	Format  string    `json:"format"`  // Format
	Name    string    `json:"name"`    // dataset name
	Version string    `json:"version"` // 64 hex: SHA-256 over the case listing (package comment)
	Created time.Time `json:"created"` // when this version was first added (not part of the digest)
	Note    string    `json:"note,omitempty"`
	Cases   []CaseRef `json:"cases"` // sorted by ID
}

// CaseRef is one case of a version: its id, the run it froze and its files.
type CaseRef struct {
	ID      string    `json:"id"`       // the frozen run's trace id (32 hex) unless given otherwise
	TraceID string    `json:"trace_id"` // the frozen run's trace id (pinned in the store)
	Digest  string    `json:"digest"`   // 64 hex: SHA-256 over the file listing
	Files   []FileRef `json:"files"`    // sorted by Path
}

// FileRef is one file of a case: its path relative to the case directory, SHA-256 and size.
type FileRef struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Short is the first 12 hex characters of a version id, as listings print it.
func Short(version string) string {
	if len(version) > 12 {
		return version[:12]
	}
	return version
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// CheckName validates a dataset name: 1 to 128 of letters, digits, '.', '_', '-', starting with a
// letter or digit (it is a path element in the bucket and in exported directories).
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("dataset name %q: use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// ParseRef splits "NAME[@VERSION]".
func ParseRef(ref string) (name, version string, err error) {
	name, version, _ = strings.Cut(ref, "@")
	if err := CheckName(name); err != nil {
		return "", "", err
	}
	return name, strings.ToLower(version), nil
}

// caseDigest is the SHA-256 of the sha256sum-style listing of files (sorted by path).
func caseDigest(files []FileRef) string {
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s  %s\n", f.SHA256, f.Path)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// versionDigest is the SHA-256 of the case listing (sorted by id).
func versionDigest(cases []CaseRef) string {
	sort.Slice(cases, func(i, j int) bool { return cases[i].ID < cases[j].ID })
	h := sha256.New()
	for _, c := range cases {
		fmt.Fprintf(h, "%s  %s\n", c.Digest, c.ID)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Store is a dataset store on a gocloud.dev/blob bucket.
type Store struct {
	url    string
	bucket *blob.Bucket
	close  func() error
	now    func() time.Time
}

// DefaultURL is the embedded default's dataset bucket: <dataDir>/datasets on the local disk.
func DefaultURL(dataDir string) string {
	return "file://" + path.Clean(strings.ReplaceAll(dataDir, "\\", "/")) + "/datasets?create_dir=true&metadata=skip"
}

// Open opens the dataset store at a gocloud.dev/blob URL (file://, s3://, gs://, azblob://,
// mem://; relative file:// paths are made absolute as in internal/payloadref).
func Open(ctx context.Context, url string) (*Store, error) {
	b, closeFn, err := ref.OpenBucket(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("dataset store %s: %w", url, err)
	}
	return &Store{url: url, bucket: b, close: closeFn, now: time.Now}, nil
}

// Close closes the bucket.
func (s *Store) Close() error { return s.close() }

// URL is the bucket URL the store was opened with.
func (s *Store) URL() string { return s.url }

// Location is where the store is, for people: the directory of a file:// store (the URL
// without its scheme and bucket options), else the URL.
func (s *Store) Location() string {
	if rest, ok := strings.CutPrefix(s.url, "file://"); ok {
		dir, _, _ := strings.Cut(rest, "?")
		return dir
	}
	return s.url
}

func manifestKey(name, version string) string { return "versions/" + name + "/" + version + ".json" }
func objectKey(sha string) string             { return "objects/" + sha }

// put stores content-addressed bytes once.
func (s *Store) put(ctx context.Context, b []byte) (string, error) {
	h := sum(b)
	if ok, err := s.bucket.Exists(ctx, objectKey(h)); err == nil && ok {
		return h, nil
	}
	if err := s.bucket.WriteAll(ctx, objectKey(h), b, nil); err != nil {
		return "", fmt.Errorf("dataset store: write object %s: %w", h, err)
	}
	return h, nil
}

// object reads a stored file and verifies its SHA-256.
func (s *Store) object(ctx context.Context, sha string) ([]byte, error) {
	b, err := s.bucket.ReadAll(ctx, objectKey(sha))
	if err != nil {
		return nil, fmt.Errorf("dataset store: object %s: %w", sha, err)
	}
	if got := sum(b); got != sha {
		return nil, fmt.Errorf("dataset store: object %s is corrupt (its bytes hash to %s)", sha, got)
	}
	return b, nil
}

// Put stores a new version of name made of cases (each a set of files, see Case.Files) and
// returns its manifest. When a version with the same cases exists it is returned unchanged
// (created reports false).
func (s *Store) Put(ctx context.Context, name, note string, cases []*Case) (m *Manifest, created bool, err error) {
	if err := CheckName(name); err != nil {
		return nil, false, err
	}
	if len(cases) == 0 {
		return nil, false, errors.New("a dataset version needs at least one case")
	}
	m = &Manifest{Format: Format, Name: name, Note: note, Created: s.now().UTC()}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.ID] {
			return nil, false, fmt.Errorf("case %s is given twice", c.ID)
		}
		seen[c.ID] = true
		ref := CaseRef{ID: c.ID, TraceID: c.TraceID}
		for _, p := range c.paths() {
			h, err := s.put(ctx, c.Files[p])
			if err != nil {
				return nil, false, err
			}
			ref.Files = append(ref.Files, FileRef{Path: p, SHA256: h, Size: int64(len(c.Files[p]))})
		}
		ref.Digest = caseDigest(ref.Files)
		m.Cases = append(m.Cases, ref)
	}
	m.Version = versionDigest(m.Cases)
	if old, err := s.manifest(ctx, name, m.Version); err == nil {
		return old, false, nil
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, false, err
	}
	if err := s.bucket.WriteAll(ctx, manifestKey(name, m.Version), append(b, '\n'), nil); err != nil {
		return nil, false, fmt.Errorf("dataset store: write manifest: %w", err)
	}
	return m, true, nil
}

func (s *Store) manifest(ctx context.Context, name, version string) (*Manifest, error) {
	b, err := s.bucket.ReadAll(ctx, manifestKey(name, version))
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("dataset %s@%s: %w", name, Short(version), ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("dataset %s@%s: %w", name, Short(version), err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("dataset store: %s: %w", manifestKey(name, version), err)
	}
	return &m, nil
}

// Names lists the datasets, sorted.
func (s *Store) Names(ctx context.Context) ([]string, error) {
	var out []string
	it := s.bucket.List(&blob.ListOptions{Prefix: "versions/", Delimiter: "/"})
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("dataset store %s: %w", s.url, err)
		}
		if o.IsDir {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(o.Key, "versions/"), "/"))
		}
	}
	sort.Strings(out)
	return out, nil
}

// Versions lists the versions of name, newest first (by creation, then id). An unknown name is
// an error wrapping ErrNotFound.
func (s *Store) Versions(ctx context.Context, name string) ([]*Manifest, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	var out []*Manifest
	it := s.bucket.List(&blob.ListOptions{Prefix: "versions/" + name + "/"})
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("dataset store %s: %w", s.url, err)
		}
		if !strings.HasSuffix(o.Key, ".json") {
			continue
		}
		m, err := s.manifest(ctx, name, strings.TrimSuffix(path.Base(o.Key), ".json"))
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("dataset %q: %w (runagain dataset list shows the datasets)", name, ErrNotFound)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.After(out[j].Created)
		}
		return out[i].Version < out[j].Version
	})
	return out, nil
}

// Resolve returns the manifest of "NAME[@VERSION]": the newest version without one, else the
// unique version whose id starts with VERSION (at least 4 hex characters).
func (s *Store) Resolve(ctx context.Context, ref string) (*Manifest, error) {
	name, version, err := ParseRef(ref)
	if err != nil {
		return nil, err
	}
	vs, err := s.Versions(ctx, name)
	if err != nil {
		return nil, err
	}
	if version == "" {
		return vs[0], nil
	}
	if len(version) < 4 {
		return nil, fmt.Errorf("version %q of dataset %s: give at least 4 hex characters", version, name)
	}
	var hit []*Manifest
	for _, m := range vs {
		if strings.HasPrefix(m.Version, version) {
			hit = append(hit, m)
		}
	}
	switch len(hit) {
	case 0:
		ids := make([]string, len(vs))
		for i, m := range vs {
			ids[i] = Short(m.Version)
		}
		return nil, fmt.Errorf("dataset %s has no version %s: %w (versions: %s)", name, version, ErrNotFound, strings.Join(ids, ", "))
	case 1:
		return hit[0], nil
	}
	return nil, fmt.Errorf("version %q of dataset %s is ambiguous: give more characters", version, name)
}

// Cases loads every case of a version, verifying each file's SHA-256.
func (s *Store) Cases(ctx context.Context, m *Manifest) ([]*Case, error) {
	var out []*Case
	for _, ref := range m.Cases {
		c := &Case{ID: ref.ID, TraceID: ref.TraceID, Files: map[string][]byte{}}
		for _, f := range ref.Files {
			b, err := s.object(ctx, f.SHA256)
			if err != nil {
				return nil, fmt.Errorf("case %s file %s: %w", ref.ID, f.Path, err)
			}
			c.Files[f.Path] = b
		}
		if err := c.parse(); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Remove deletes one version (its manifest) and every object no remaining version uses.
func (s *Store) Remove(ctx context.Context, name, version string) error {
	if err := s.bucket.Delete(ctx, manifestKey(name, version)); err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			return fmt.Errorf("dataset %s@%s: %w", name, Short(version), ErrNotFound)
		}
		return fmt.Errorf("dataset store: delete %s@%s: %w", name, Short(version), err)
	}
	return s.gc(ctx)
}

// all returns every manifest of every dataset.
func (s *Store) all(ctx context.Context) ([]*Manifest, error) {
	names, err := s.Names(ctx)
	if err != nil {
		return nil, err
	}
	var out []*Manifest
	for _, n := range names {
		vs, err := s.Versions(ctx, n)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

// gc deletes objects that no manifest references.
func (s *Store) gc(ctx context.Context) error {
	ms, err := s.all(ctx)
	if err != nil {
		return err
	}
	used := map[string]bool{}
	for _, m := range ms {
		for _, c := range m.Cases {
			for _, f := range c.Files {
				used[f.SHA256] = true
			}
		}
	}
	it := s.bucket.List(&blob.ListOptions{Prefix: "objects/"})
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if !used[strings.TrimPrefix(o.Key, "objects/")] {
			if err := s.bucket.Delete(ctx, o.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
				return err
			}
		}
	}
}

// PinnedTraceIDs returns the trace ids (32 lowercase hex) of every run in any version of any
// dataset: the runs retention must never delete (docs/architecture.md "Reruns and datasets"). An empty or
// absent store pins nothing; a store that cannot be read is an error, and a janitor must then
// skip its pass rather than delete what may be pinned.
func (s *Store) PinnedTraceIDs(ctx context.Context) (map[string]bool, error) {
	out, err := pins.Read(ctx, s.bucket)
	if err != nil {
		return nil, fmt.Errorf("dataset store %s: %w", s.url, err)
	}
	return out, nil
}

// writeJSON is indented JSON with a final newline: every JSON file of the layout.
func writeJSON(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// indentJSON re-indents compact JSON (pdata's OTLP JSON) for a diff-friendly file.
func indentJSON(b []byte) ([]byte, error) {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
