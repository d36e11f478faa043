// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"gocloud.dev/gcerrors"

	"github.com/klauspost/compress/zstd"

	"github.com/runagain/runagain/internal/payloadref"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

func newStore(t *testing.T, url string, opts StoreOptions) *Store {
	t.Helper()
	s, err := NewStore(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	staged(t, s)
	return s
}

// stagingOf holds, per top-level test, the staging areas of the Stores it opened (staged), so
// that its resolvers (newResolver) read packs not yet uploaded, as the CLI's and the UI's read
// the configured store's (WithStagingDir).
var stagingOf = struct {
	sync.Mutex
	dirs map[string][]string
}{dirs: map[string][]string{}}

func topTest(t testing.TB) string { return strings.SplitN(t.Name(), "/", 2)[0] }

// staged makes t's resolvers read s's staging area.
func staged(t testing.TB, s *Store) {
	if s.staging == "" {
		return
	}
	stagingOf.Lock()
	defer stagingOf.Unlock()
	k := topTest(t)
	if !slices.Contains(stagingOf.dirs[k], s.staging) {
		stagingOf.dirs[k] = append(stagingOf.dirs[k], s.staging)
	}
}

func newResolver(t *testing.T, opts ...payloadref.Option) *payloadref.Resolver {
	t.Helper()
	stagingOf.Lock()
	for _, d := range stagingOf.dirs[topTest(t)] {
		opts = append(opts, payloadref.WithStagingDir(d))
	}
	stagingOf.Unlock()
	r := payloadref.NewResolver(opts...)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func msg(role, text string) string {
	b, _ := json.Marshal(map[string]any{"role": role, "parts": []any{map[string]any{"type": "text", "content": text}}})
	return string(b)
}

var shapes = map[string]string{
	"empty":             "",
	"plain text":        strings.Repeat("the quick brown fox ", 300),
	"empty array":       "[]",
	"array compact":     "[" + msg("system", strings.Repeat("a", 400)) + "," + msg("user", strings.Repeat("b", 500)) + "]",
	"array pretty":      "[\n  " + msg("system", strings.Repeat("a", 400)) + " ,\r\n\t" + msg("user", strings.Repeat("b", 500)) + "\n]\n\n",
	"array mixed sizes": "[1, \"x\", " + msg("user", strings.Repeat("c", 300)) + ", null, " + msg("assistant", strings.Repeat("d", 700)) + ", {\"k\": [1,2,3]}]",
	"object with messages": `{ "model" : "gpt-4o",  "system": "` + strings.Repeat("s", 600) + `", "messages": [` +
		msg("user", strings.Repeat("u", 300)) + ",   " + msg("assistant", strings.Repeat("v", 300)) + `], "stream": true, "tools": []}`,
	"key order kept":    `{"z":1,"a":[` + msg("user", strings.Repeat("z", 280)) + `,` + msg("user", strings.Repeat("y", 280)) + `],"m":{"b":2,"a":1}}`,
	"invalid json":      "[" + msg("user", strings.Repeat("x", 500)) + "," + msg("user", strings.Repeat("y", 500)) + ",",
	"trailing garbage":  "[" + msg("user", strings.Repeat("x", 500)) + "," + msg("user", strings.Repeat("y", 500)) + "] tail",
	"two values":        "[" + msg("user", strings.Repeat("x", 500)) + "] [" + msg("user", strings.Repeat("y", 500)) + "]",
	"unicode":           "[" + msg("user", strings.Repeat("héllo wörld ✓ 🤖 ", 40)) + "," + msg("user", strings.Repeat("日本語 ", 100)) + "]",
	"invalid utf8":      "[\"" + strings.Repeat("\xff\xfe", 300) + "\",\"" + strings.Repeat("\xc3", 300) + "\"]",
	"escapes":           "[\"" + strings.Repeat(`\"\\\u00e9\n`, 100) + "\",\"" + strings.Repeat(`\/\t`, 200) + "\"]",
	"deep nesting":      "[" + strings.Repeat("[", 200) + strings.Repeat("1,", 200) + "1" + strings.Repeat("]", 200) + ",[" + strings.Repeat("2,", 300) + "2]]",
	"binary":            string([]byte{0, 1, 2, 3, 0xff, 0x28, 0xb5, 0x2f, 0xfd}),
	"huge element list": "[" + strings.TrimSuffix(strings.Repeat(msg("user", strings.Repeat("m", 260))+",", 1), ",") + hugeList(3000) + "]",
}

// hugeList returns ",e1,e2,..." with n distinct elements of ~300 bytes, enough for several manifest levels.
func hugeList(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString(",")
		b.WriteString(msg("user", fmt.Sprintf("%06d %s", i, strings.Repeat("w", 280))))
	}
	return b.String()
}

// TestPutFetchShapes stores every shape split and unsplit on mem:// and file:// and reads it back
// byte for byte.
func TestPutFetchShapes(t *testing.T) {
	ctx := context.Background()
	for _, url := range []string{"mem://shapes", "file://" + t.TempDir() + "?create_dir=true&metadata=skip", "mem://shapes?prefix=pfx/"} {
		s := newStore(t, url, StoreOptions{})
		r := newResolver(t)
		for name, v := range shapes {
			for _, split := range []bool{false, true} {
				res, err := s.Put(ctx, []byte(v), split)
				if err != nil {
					t.Fatalf("%s %s split=%v: %v", url, name, split, err)
				}
				got, err := r.Fetch(ctx, res.URI)
				if err != nil {
					t.Fatalf("%s %s split=%v: fetch %s: %v", url, name, split, res.URI, err)
				}
				if !bytes.Equal(got, []byte(v)) {
					t.Fatalf("%s %s split=%v: fetched %d bytes differ from the %d stored", url, name, split, len(got), len(v))
				}
				sum := sha256.Sum256([]byte(v))
				if !strings.Contains(res.URI, fmt.Sprintf("/sha256/%x", sum)) {
					t.Errorf("%s %s: URI %s is not named by the SHA-256 of the value", url, name, res.URI)
				}
			}
		}
	}
}

// TestSplitDecisions checks which shapes become manifests (JSON with at least two large elements)
// and that the split parts are not bigger than the unsplit value would be.
func TestSplitDecisions(t *testing.T) {
	want := map[string]bool{
		"empty": false, "plain text": false, "empty array": false, "array compact": true, "array pretty": true,
		"array mixed sizes": true, "object with messages": true, "key order kept": true, "invalid json": false,
		"trailing garbage": false, "two values": false, "unicode": true, "invalid utf8": true, "escapes": true,
		"deep nesting": true, "binary": false, "huge element list": true,
	}
	s := newStore(t, "file://"+t.TempDir()+"?metadata=skip", StoreOptions{}) // a fresh bucket: objects already there are not written again
	for name, v := range shapes {
		res, err := s.Put(context.Background(), []byte(v), true)
		if err != nil {
			t.Fatal(err)
		}
		w, ok := want[name]
		if !ok {
			t.Fatalf("no expectation for shape %q", name)
		}
		if res.Split != w {
			t.Errorf("%s: split=%v, want %v", name, res.Split, w)
		}
		if w && res.Objects < 3 {
			t.Errorf("%s: split into %d objects, want at least two parts and a manifest", name, res.Objects)
		}
	}
}

// TestManifestLevels checks that a long element list is grouped into sub-manifests (no manifest
// lists more than Fanout parts) and that appending one element to it re-writes only a few objects.
func TestManifestLevels(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := newStore(t, "file://"+dir+"?metadata=skip", StoreOptions{})
	v1 := "[" + hugeList(3000)[1:] + "]"
	res1, err := s.Put(ctx, []byte(v1), true)
	if err != nil {
		t.Fatal(err)
	}
	if !res1.Split || res1.Objects < 3000+3000/64 {
		t.Fatalf("first put: %+v, want >= %d objects (3000 elements and their manifests)", res1, 3000+3000/64)
	}
	// Every manifest respects the fanout.
	n := 0
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(p, ref.ManifestSuffix) {
			return err
		}
		z, _ := os.ReadFile(p)
		dec, _ := zstd.NewReader(nil)
		raw, err := dec.DecodeAll(z, nil)
		dec.Close()
		if err != nil {
			return err
		}
		m, err := ref.DecodeManifest(raw)
		if err != nil {
			return err
		}
		if len(m.Parts) > 64 {
			t.Errorf("%s has %d parts, fanout is 64", p, len(m.Parts))
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 3000/64 {
		t.Fatalf("%d manifests for 3000 elements, want at least %d", n, 3000/64)
	}
	// Next turn: same list plus one element. Only the new element and the manifests on the path
	// to the end of the list are new.
	v2 := "[" + hugeList(3001)[1:] + "]"
	res2, err := s.Put(ctx, []byte(v2), true)
	if err != nil {
		t.Fatal(err)
	}
	if res2.Written > 8 || res2.Written < 2 {
		t.Fatalf("second put wrote %d objects (%+v), want the new element plus a few manifests", res2.Written, res2)
	}
	got, err := newResolver(t).Fetch(ctx, res2.URI)
	if err != nil || string(got) != v2 {
		t.Fatalf("fetch v2: err=%v equal=%v", err, string(got) == v2)
	}
}

// TestWrittenOnce checks the dedup paths: the known set, the bucket check for a fresh Store on the
// same bucket, and the IfNotExist precondition.
func TestWrittenOnce(t *testing.T) {
	ctx := context.Background()
	url := "file://" + t.TempDir() + "?metadata=skip"
	v := []byte(shapes["object with messages"])
	s1 := newStore(t, url, StoreOptions{})
	r1, err := s1.Put(ctx, v, true)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Written != r1.Objects || r1.DedupHits != 0 || r1.BytesWritten == 0 {
		t.Fatalf("first put %+v: want every object written", r1)
	}
	r2, err := s1.Put(ctx, v, true)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Written != 0 || r2.DedupHits != 1 || r2.URI != r1.URI {
		t.Fatalf("second put %+v: want one dedup hit from the known set", r2)
	}
	s2 := newStore(t, url, StoreOptions{}) // cold known set: asks the bucket
	r3, err := s2.Put(ctx, v, true)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Written != 0 || r3.DedupHits != 1 || r3.URI != r1.URI {
		t.Fatalf("fresh store put %+v: want one dedup hit from the bucket", r3)
	}
	// Same elements in another arrangement: the elements are found, only the manifest is new.
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(v, &doc); err != nil {
		t.Fatal(err)
	}
	v2, _ := json.Marshal(doc) // sorted keys, compact: different bytes, same messages
	r4, err := s2.Put(ctx, v2, true)
	if err != nil {
		t.Fatal(err)
	}
	if r4.Written != 1 || r4.DedupHits != r4.Objects-1 {
		t.Fatalf("re-arranged put %+v: want only the manifest written", r4)
	}
	// The precondition path: an object written behind the Store's back.
	s3 := newStore(t, url, StoreOptions{})
	other := []byte(strings.Repeat("precondition ", 100))
	if err := s3.bucket.WriteAll(ctx, ref.ValueKey(sha256.Sum256(other)), s3.enc.EncodeAll(other, nil), nil); err != nil {
		t.Fatal(err)
	}
	res := PutResult{}
	if err := s3.writeObject(ctx, ref.ValueKey(sha256.Sum256(other)), other, false, &res); err != nil || res.DedupHits != 1 || res.Written != 0 {
		t.Fatalf("IfNotExist path: err=%v res=%+v, want a dedup hit", err, res)
	}
}

// TestTamperDetected corrupts a message object and a manifest and expects ErrHashMismatch or a
// decode error, never wrong bytes.
func TestTamperDetected(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := newStore(t, "file://"+dir+"?metadata=skip", StoreOptions{})
	v := []byte(shapes["array compact"])
	res, err := s.Put(ctx, v, true)
	if err != nil {
		t.Fatal(err)
	}
	// Replace the first element object by a valid zstd frame of other bytes.
	var elems []json.RawMessage
	_ = json.Unmarshal(v, &elems)
	key := ref.ValueKey(sha256.Sum256(elems[0]))
	if err := os.WriteFile(filepath.Join(dir, key), s.enc.EncodeAll([]byte(`{"role":"user","parts":[]}`), nil), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = newResolver(t).Fetch(ctx, res.URI)
	if !errors.Is(err, ref.ErrHashMismatch) {
		t.Fatalf("tampered element: err=%v, want ErrHashMismatch", err)
	}
	// An unsplit value replaced wholesale.
	res2, _ := s.Put(ctx, []byte("original value"), false)
	_, key2, _ := ref.SplitURI(res2.URI)
	_ = os.WriteFile(filepath.Join(dir, key2), s.enc.EncodeAll([]byte("forged value"), nil), 0o644)
	if _, err := newResolver(t).Fetch(ctx, res2.URI); !errors.Is(err, ref.ErrHashMismatch) {
		t.Fatalf("tampered value: err=%v, want ErrHashMismatch", err)
	}
	// Not zstd at all.
	_ = os.WriteFile(filepath.Join(dir, key2), []byte("garbage"), 0o644)
	if _, err := newResolver(t).Fetch(ctx, res2.URI); err == nil {
		t.Fatal("garbage object fetched without error")
	}
	// Missing object.
	missing, _ := ref.ObjectURI("file://"+dir, ref.ValueKey(sha256.Sum256([]byte("never stored"))))
	if _, err := newResolver(t).Fetch(ctx, missing); gcerrors.Code(err) != gcerrors.NotFound {
		t.Fatalf("missing object: err=%v (code %v), want NotFound", err, gcerrors.Code(err))
	}
}

// TestRehydrate covers RehydrateMap, Rehydrated (copy) and RehydrateLogRecord.
func TestRehydrate(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, "mem://rehydrate", StoreOptions{})
	r := newResolver(t)
	in := shapes["array pretty"]
	res, err := s.Put(ctx, []byte(in), true)
	if err != nil {
		t.Fatal(err)
	}
	m := pcommon.NewMap()
	m.PutStr("gen_ai.input.messages_ref", res.URI)
	m.PutStr("gen_ai.request.model", "gpt-4o")
	m.PutStr("not_a_uri_ref", "plain label")
	m.PutStr("broken_ref", "mem://rehydrate/sha256/"+strings.Repeat("00", 32)+".zst")

	cp, err := r.Rehydrated(ctx, m)
	if err == nil || !strings.Contains(err.Error(), "broken_ref") {
		t.Fatalf("want an error naming broken_ref, got %v", err)
	}
	if _, ok := m.Get("gen_ai.input.messages"); ok {
		t.Fatal("Rehydrated changed its input")
	}
	if v, _ := cp.Get("gen_ai.input.messages"); v.Str() != in {
		t.Fatal("copy not rehydrated")
	}
	if _, ok := cp.Get("gen_ai.input.messages_ref"); ok {
		t.Fatal("ref kept after rehydration")
	}
	if v, _ := cp.Get("broken_ref"); v.Str() == "" {
		t.Fatal("unreadable ref was removed")
	}
	if v, _ := cp.Get("not_a_uri_ref"); v.Str() != "plain label" {
		t.Fatal("non-URI _ref attribute changed")
	}

	lr := plog.NewLogRecord()
	body, _ := s.Put(ctx, []byte("a long body"), false)
	lr.Attributes().PutStr(ref.LogBodyRefKey, body.URI)
	lr.Attributes().PutStr("gen_ai.output.messages_ref", res.URI)
	if err := r.RehydrateLogRecord(ctx, lr); err != nil {
		t.Fatal(err)
	}
	if lr.Body().Str() != "a long body" || lr.Attributes().Len() != 1 {
		t.Fatalf("log record: body %q, %d attributes", lr.Body().Str(), lr.Attributes().Len())
	}
	if v, _ := lr.Attributes().Get("gen_ai.output.messages"); v.Str() != in {
		t.Fatal("log attribute not rehydrated")
	}
}

// TestRelativeFileURL: a relative file:// storage URL (the embedded default
// file://${env:RUNAGAIN_DATA_DIR:-./data}/blobs) gives absolute references that resolve from any
// working directory.
func TestRelativeFileURL(t *testing.T) {
	base := t.TempDir()
	t.Chdir(base)
	ctx := context.Background()
	for _, url := range []string{"file://./data/blobs?create_dir=true", "file://data2/blobs?create_dir=true"} {
		s := newStore(t, url, StoreOptions{})
		res, err := s.Put(ctx, []byte(shapes["array compact"]), true)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(res.URI, "file://"+base+"/") || strings.Contains(res.URI, "?") {
			t.Fatalf("%s: URI %s is not absolute under %s, or carries writer parameters", url, res.URI, base)
		}
		t.Chdir(t.TempDir())
		got, err := newResolver(t).Fetch(ctx, res.URI)
		if err != nil || string(got) != shapes["array compact"] {
			t.Fatalf("%s: fetch from another directory: %v", url, err)
		}
		t.Chdir(base)
	}
}
