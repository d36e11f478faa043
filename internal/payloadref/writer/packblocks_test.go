// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/klauspost/compress/zstd"

	"github.com/runagain/runagain/internal/payloadref"
	"github.com/runagain/runagain/internal/payloadref/collect"
	"github.com/runagain/runagain/internal/payloadref/packfile"
	"github.com/runagain/runagain/internal/payloadref/ref"
	"github.com/runagain/runagain/internal/testutil/miniotest"
)

// packFiles returns the bytes of every pack in the file bucket at dir.
func packFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	des, _ := os.ReadDir(filepath.Join(dir, ref.PackDir))
	for _, de := range des {
		if strings.HasSuffix(de.Name(), ref.PackSuffix) {
			b, err := os.ReadFile(filepath.Join(dir, ref.PackDir, de.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[de.Name()] = b
		}
	}
	return out
}

// zstdFrames counts the zstd frame magics in b.
func zstdFrames(b []byte) int { return bytes.Count(b, []byte{0x28, 0xb5, 0x2f, 0xfd}) }

// v1EntrySize is the size of a v1 trailer entry (packfile's layout doc).
const v1EntrySize = 32 + 1 + 8 + 4 + 8

// TestPackBlocksLayout: an uploaded pack is in the v2 layout: its objects share zstd blocks (far
// fewer frames than objects), it is smaller than the same objects compressed one by one, and the
// staging file held the objects raw.
func TestPackBlocksLayout(t *testing.T) {
	ctx := context.Background()
	url, bdir := fileURL(t)
	dir := t.TempDir()
	s := newPackStore(t, url, dir, StoreOptions{PackMaxAge: time.Hour})
	var uris []string
	var values [][]byte
	var perObject int
	enc, _ := zstd.NewWriter(nil)
	for c := 0; c < 20; c++ {
		v := conversation(fmt.Sprintf("conv-%d", c), 30)
		res, err := s.Put(ctx, v, true)
		if err != nil {
			t.Fatal(err)
		}
		uris, values = append(uris, res.URI), append(values, v)
	}
	staged, _ := filepath.Glob(filepath.Join(dir, packfile.StagingDir, "*"+ref.PackSuffix))
	if len(staged) != 1 {
		t.Fatalf("staging: %v", staged)
	}
	sb, _ := os.ReadFile(staged[0])
	if !bytes.Contains(sb, []byte("conv-7 message 12")) || zstdFrames(sb) != 0 {
		t.Fatal("the staging file does not hold the objects raw")
	}
	entries, _ := packfile.ScanRecords(bytes.NewReader(sb), int64(len(sb)))
	for _, e := range entries {
		perObject += len(enc.EncodeAll(sb[e.Off:e.Off+int64(e.ZLen)], nil)) + packfile.RecordHeaderSize + v1EntrySize
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	packs := packFiles(t, bdir)
	if len(packs) != 1 {
		t.Fatalf("%d packs", len(packs))
	}
	for _, p := range packs {
		if string(p[len(p)-8:]) != "RAPACK02" {
			t.Fatalf("pack ends %q", p[len(p)-8:])
		}
		if f := zstdFrames(p); f*10 > len(entries) {
			t.Fatalf("%d zstd frames for %d objects: not in blocks", f, len(entries))
		}
		if len(p)*2 > perObject {
			t.Fatalf("pack of %d bytes against %d compressed one by one (v1): less than 2x better", len(p), perObject)
		}
		t.Logf("%d objects: v2 pack %d bytes, v1 (one frame each) %d bytes", len(entries), len(p), perObject)
	}
	r := newResolver(t)
	for i, u := range uris {
		if got, err := r.Fetch(ctx, u); err != nil || !bytes.Equal(got, values[i]) {
			t.Fatalf("fetch %d: %v", i, err)
		}
	}
}

// writeV1Pack writes, at packs/<id>.pack of the file bucket at bdir, a pack in the layout before
// blocks (one zstd frame per object, v1 trailer) holding values, and returns their references.
func writeV1Pack(t testing.TB, url, bdir, id string, values [][]byte) []string {
	t.Helper()
	enc, _ := zstd.NewWriter(nil)
	var buf bytes.Buffer
	var entries []packfile.Entry
	var uris []string
	for _, v := range values {
		k := ref.Object{Sum: sha256.Sum256(v)}
		z := enc.EncodeAll(v, nil)
		buf.Write(encodeRecordHeader(k, len(z), false))
		entries = append(entries, packfile.Entry{Object: k, Off: int64(buf.Len()), ZLen: uint32(len(z)), Raw: int64(len(v))})
		buf.Write(z)
		u, _ := ref.ObjectURI(url, ref.PackKey(id))
		uris = append(uris, u+"#"+k.Name())
	}
	buf.Write(packfile.EncodeTrailer(entries, int64(buf.Len())))
	if err := os.MkdirAll(filepath.Join(bdir, ref.PackDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bdir, ref.PackKey(id)), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// Uploaded long ago (Collect sweeps unindexed objects only from packs older than collect.OrphanAge).
	old := time.Now().Add(-2 * collect.OrphanAge)
	if err := os.Chtimes(filepath.Join(bdir, ref.PackKey(id)), old, old); err != nil {
		t.Fatal(err)
	}
	return uris
}

// TestV1PackResolvesAndIsRewrittenAsV2: a pack written before blocks resolves; Collect's rewrite
// of it (one object dead) writes the v2 layout, keeps the live objects readable, and leaves no
// byte of the dead one.
func TestV1PackResolvesAndIsRewrittenAsV2(t *testing.T) {
	ctx := context.Background()
	url, bdir := fileURL(t)
	values := [][]byte{[]byte("V1-KEEP one " + strings.Repeat("a", 300)), []byte("V1-DEAD " + strings.Repeat("b", 300)), []byte("V1-KEEP two " + strings.Repeat("c", 300))}
	uris := writeV1Pack(t, url, bdir, "0123-abcd", values)
	r := newResolver(t)
	for i, u := range uris {
		if got, err := r.Fetch(ctx, u); err != nil || !bytes.Equal(got, values[i]) {
			t.Fatalf("v1 fetch %d: %v", i, err)
		}
	}
	oldSize := len(packFiles(t, bdir)["0123-abcd.pack"])
	s := newPackStore(t, url, t.TempDir(), StoreOptions{})
	st, err := s.Collect(ctx, liveOf(uris[0], uris[2]), collect.Options{Erase: true})
	if err != nil || st.PacksRewritten != 1 || st.ObjectsDeleted != 1 {
		t.Fatalf("collect: %+v %v", st, err)
	}
	p := packFiles(t, bdir)["0123-abcd.pack"]
	if string(p[len(p)-8:]) != "RAPACK02" {
		t.Fatalf("rewritten pack ends %q", p[len(p)-8:])
	}
	if st.BytesFreed != int64(oldSize-len(p)) {
		t.Fatalf("BytesFreed %d, the pack went from %d to %d bytes", st.BytesFreed, oldSize, len(p))
	}
	if raw := decodedBucket(t, url); bytes.Contains(raw, []byte("V1-DEAD")) || !bytes.Contains(raw, []byte("V1-KEEP two")) {
		t.Fatal("after the rewrite: the dead value remains or a live one is gone")
	}
	for _, i := range []int{0, 2} {
		if got, err := r.Fetch(ctx, uris[i]); err != nil || !bytes.Equal(got, values[i]) {
			t.Fatalf("fetch %d after the rewrite (cached v1 head): %v", i, err)
		}
	}
	if _, err := r.Fetch(ctx, uris[1]); err == nil {
		t.Fatal("the erased object still resolves")
	}
}

// TestRecoverOldStagingFile: a staging file left by a process of the version before blocks (zstd
// records, no trailer) is recovered, uploaded in the v2 layout, and its objects resolve.
func TestRecoverOldStagingFile(t *testing.T) {
	ctx := context.Background()
	url, bdir := fileURL(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, packfile.StagingDir), 0o755); err != nil {
		t.Fatal(err)
	}
	enc, _ := zstd.NewWriter(nil)
	var buf bytes.Buffer
	var uris []string
	var values [][]byte
	for i := 0; i < 5; i++ {
		v := []byte(fmt.Sprintf("old staged %d %s", i, strings.Repeat("x", 200)))
		k := ref.Object{Sum: sha256.Sum256(v)}
		z := enc.EncodeAll(v, nil)
		buf.Write(encodeRecordHeader(k, len(z), false))
		buf.Write(z)
		u, _ := ref.ObjectURI(url, ref.PackKey("0abc-01"))
		uris, values = append(uris, u+"#"+k.Name()), append(values, v)
	}
	if err := os.WriteFile(filepath.Join(dir, packfile.StagingDir, "0abc-01"+ref.PackSuffix), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newPackStore(t, url, dir, StoreOptions{})
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p := packFiles(t, bdir)["0abc-01.pack"]
	if len(p) < 8 || string(p[len(p)-8:]) != "RAPACK02" {
		t.Fatalf("uploaded pack: %d bytes", len(p))
	}
	for i, u := range uris {
		if got, err := newResolver(t).Fetch(ctx, u); err != nil || !bytes.Equal(got, values[i]) {
			t.Fatalf("fetch %d: %v", i, err)
		}
	}
}

// TestPackTrailerCorruptionFails: a v2 pack whose fanout or entries are damaged gives errors,
// never wrong bytes.
func TestPackTrailerCorruptionFails(t *testing.T) {
	ctx := context.Background()
	url, bdir := fileURL(t)
	s := newPackStore(t, url, t.TempDir(), StoreOptions{PackMaxAge: time.Hour})
	v := conversation("corrupt", 10)
	res, err := s.Put(ctx, v, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var name string
	var orig []byte
	for n, b := range packFiles(t, bdir) {
		name, orig = n, b
	}
	path := filepath.Join(bdir, ref.PackDir, name)
	off := int64(binary.BigEndian.Uint64(orig[len(orig)-packfile.FooterSize:]))
	for _, at := range []int64{off + 40, off + 45, off + 49, int64(len(orig)) - packfile.FooterSize - 8, 10} {
		b := bytes.Clone(orig)
		b[at] ^= 0x5a
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := newResolver(t).Fetch(ctx, res.URI)
		if err == nil && !bytes.Equal(got, v) {
			t.Fatalf("byte %d flipped: wrong bytes returned", at)
		}
	}
}

// countingProxy counts the PUT and POST requests passed to target.
type countingProxy struct {
	addr      string
	put, post atomic.Int64
}

func startCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &countingProxy{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = "http://" + l.Addr().String()
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPut:
			p.put.Add(1)
		case http.MethodPost:
			p.post.Add(1)
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return p
}

// TestS3OnePutPerPack: on MinIO a pack of ~12 MiB (below the default 16 MiB limit) is uploaded
// with one PUT request and no multipart POST, and packs stay below PackMaxSize.
func TestS3OnePutPerPack(t *testing.T) {
	srv := miniotest.Start(t)
	ctx := context.Background()
	proxy := startCountingProxy(t, srv.Endpoint)
	u := strings.Replace(srv.URL("one-put/"), url.QueryEscape(srv.Endpoint), url.QueryEscape(proxy.addr), 1)
	s := newPackStore(t, u, t.TempDir(), StoreOptions{PackMaxAge: time.Hour})
	var uris []string
	for i := 0; i < 192; i++ { // 12 MiB of incompressible objects
		v := make([]byte, 64<<10)
		_, _ = rand.Read(v)
		res, err := s.Put(ctx, v, false)
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, res.URI)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if put, post := proxy.put.Load(), proxy.post.Load(); put != 1 || post != 0 {
		t.Fatalf("one 12 MiB pack: %d PUT, %d POST requests, want 1 and 0", put, post)
	}
	// Past the limit: 20 MiB more make two packs, each below 16 MiB and each one PUT.
	for i := 0; i < 320; i++ {
		v := make([]byte, 64<<10)
		_, _ = rand.Read(v)
		if _, err := s.Put(ctx, v, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if put, post := proxy.put.Load(), proxy.post.Load(); put != 3 || post != 0 {
		t.Fatalf("after 32 MiB: %d PUT, %d POST requests, want 3 and 0", put, post)
	}
	if got, err := newResolver(t).Fetch(ctx, uris[100]); err != nil || len(got) != 64<<10 {
		t.Fatalf("fetch: %v", err)
	}
}

// BenchmarkPackRead: reading objects from a v2 pack (blocks) against the same objects in a v1 pack
// (one zstd frame each), the baseline, in the same run, on a file bucket. "object" fetches one
// message with a warm Resolver (head and trailer pages cached; a stat per Fetch), "cold" with a
// new Resolver each time (tail, trailer and block read), "conversation" a 40-message split value.
func BenchmarkPackRead(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	url := "file://" + dir + "?create_dir=true&metadata=skip"
	var msgs [][]byte
	for c := 0; c < 50; c++ {
		for i := 0; i < 40; i++ {
			msgs = append(msgs, []byte(msg("user", fmt.Sprintf("conversation %d turn %d: %s", c, i, strings.Repeat("the agent calls a tool and reads its answer ", 12)))))
		}
	}
	conv := []byte("[" + string(bytes.Join(msgs[:40], []byte(","))) + "]")
	v1 := writeV1Pack(b, url, dir, "0001-aa", msgs)
	s, err := NewStore(ctx, url, StoreOptions{Dir: b.TempDir(), PackMaxAge: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	var v2 []string
	for _, m := range msgs {
		res, err := s.Put(ctx, m, false)
		if err != nil {
			b.Fatal(err)
		}
		v2 = append(v2, res.URI)
	}
	convRes, err := s.Put(ctx, conv, true)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	// The v1 conversation: a manifest naming the v1 pack's objects.
	v1Conv := writeV1Manifest(b, url, dir, conv, msgs[:40])
	for _, layout := range []struct {
		name string
		uris []string
		conv string
	}{{"v1", v1, v1Conv}, {"v2", v2, convRes.URI}} {
		b.Run(layout.name+"/object", func(b *testing.B) {
			r := payloadref.NewResolver()
			defer func() { _ = r.Close() }()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := r.Fetch(ctx, layout.uris[(i*7919)%len(layout.uris)]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(layout.name+"/cold", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				r := payloadref.NewResolver()
				if _, err := r.Fetch(ctx, layout.uris[(i*7919)%len(layout.uris)]); err != nil {
					b.Fatal(err)
				}
				_ = r.Close()
			}
		})
		b.Run(layout.name+"/conversation", func(b *testing.B) {
			r := payloadref.NewResolver()
			defer func() { _ = r.Close() }()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Fetch(ctx, layout.conv); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// writeV1Manifest writes a v1 pack holding the manifest of value (the concatenation of parts as
// a JSON array, each part an object of pack 0001-aa) and returns its reference.
func writeV1Manifest(b testing.TB, url, dir string, value []byte, parts [][]byte) string {
	b.Helper()
	m := ref.Manifest{V: ref.ManifestVersion, Size: int64(len(value))}
	m.Parts = append(m.Parts, ref.Part{Lit: []byte("[")})
	for i, p := range parts {
		if i > 0 {
			m.Parts = append(m.Parts, ref.Part{Lit: []byte(",")})
		}
		sum := sha256.Sum256(p)
		m.Parts = append(m.Parts, ref.Part{Ref: fmt.Sprintf("%x", sum), Size: int64(len(p)), P: "0001-aa"})
	}
	m.Parts = append(m.Parts, ref.Part{Lit: []byte("]")})
	doc, err := json.Marshal(&m)
	if err != nil {
		b.Fatal(err)
	}
	enc, _ := zstd.NewWriter(nil)
	k := ref.Object{Sum: sha256.Sum256(value), Manifest: true}
	z := enc.EncodeAll(doc, nil)
	var buf bytes.Buffer
	buf.Write(encodeRecordHeader(k, len(z), false))
	buf.Write(z)
	buf.Write(packfile.EncodeTrailer([]packfile.Entry{{Object: k, Off: packfile.RecordHeaderSize, ZLen: uint32(len(z)), Raw: int64(len(doc))}}, int64(buf.Len())))
	if err := os.WriteFile(filepath.Join(dir, ref.PackKey("0002-bb")), buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	u, _ := ref.ObjectURI(url, ref.PackKey("0002-bb"))
	return u + "#" + k.Name()
}

// TestRequestSeal: a seal request (what runagain delete sends) has the writer seal and upload
// its open segment long before PackMaxAge.
func TestRequestSeal(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	dir := t.TempDir()
	s := newPackStore(t, url, dir, StoreOptions{PackMaxAge: time.Hour})
	res, err := s.Put(ctx, []byte("sealed on request "+strings.Repeat("y", 500)), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := RequestSeal(dir); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(bucketKeys(t, url, ref.PackDir)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the open segment was not sealed on request")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(dir, packfile.StagingDir, SealRequestFile)); !os.IsNotExist(err) {
		t.Fatalf("the request file is still there: %v", err)
	}
	if _, err := newResolver(t).Fetch(ctx, res.URI); err != nil {
		t.Fatal(err)
	}
	if err := RequestSeal(t.TempDir()); err != nil { // nobody writes there: a no-op
		t.Fatal(err)
	}
}

// TestSealStaged: with a writer holding the staging area, SealStaged returns once the open pack
// is in the bucket; without one it returns at once.
func TestSealStaged(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	dir := t.TempDir()
	s := newPackStore(t, url, dir, StoreOptions{PackMaxAge: time.Hour})
	if _, err := s.Put(ctx, []byte("erase me soon "+strings.Repeat("z", 500)), false); err != nil {
		t.Fatal(err)
	}
	left, err := SealStaged(ctx, dir)
	if err != nil || left != 0 {
		t.Fatalf("SealStaged: %d left, %v", left, err)
	}
	if keys := bucketKeys(t, url, ref.PackDir); len(keys) != 1 {
		t.Fatalf("bucket after SealStaged: %v", keys)
	}
	if left, err := SealStaged(ctx, t.TempDir()); err != nil || left != 0 {
		t.Fatalf("no writer: %d, %v", left, err)
	}
}

// TestPackBlocksFileLost: the blocks file beside the open segment (derived, not fsynced) is lost:
// the pack is built again from the staging file at upload, and nothing is left staged.
func TestPackBlocksFileLost(t *testing.T) {
	ctx := context.Background()
	url, bdir := fileURL(t)
	dir := t.TempDir()
	s := newPackStore(t, url, dir, StoreOptions{PackMaxAge: time.Hour})
	v := conversation("lost-blocks", 20)
	res, err := s.Put(ctx, v, true)
	if err != nil {
		t.Fatal(err)
	}
	blocks, _ := filepath.Glob(filepath.Join(dir, packfile.StagingDir, "*"+BlocksSuffix))
	if len(blocks) != 1 {
		t.Fatalf("blocks files: %v", blocks)
	}
	if err := os.Remove(blocks[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, packfile.StagingDir)); len(left) != 1 || left[0].Name() != "LOCK" {
		t.Fatalf("staging after flush: %v", left)
	}
	for _, p := range packFiles(t, bdir) {
		if string(p[len(p)-8:]) != "RAPACK02" {
			t.Fatal("not a v2 pack")
		}
	}
	if got, err := newResolver(t).Fetch(ctx, res.URI); err != nil || !bytes.Equal(got, v) {
		t.Fatalf("fetch: %v", err)
	}
}

// TestSealStagedNotUploadedInTime: a writer holds the staging area but never uploads its pack (a
// bucket down): SealStaged does not report success when its context ends; it names how many
// packs are still staged, so an erasure can say that erased objects remain.
func TestSealStagedNotUploadedInTime(t *testing.T) {
	dir := t.TempDir()
	staging := filepath.Join(dir, packfile.StagingDir)
	if err := os.MkdirAll(staging, 0o755); err != nil {
		t.Fatal(err)
	}
	lk := flock.New(filepath.Join(staging, "LOCK"))
	if ok, err := lk.TryLock(); err != nil || !ok {
		t.Fatalf("lock: %v %v", ok, err)
	}
	defer func() { _ = lk.Unlock() }()
	if err := os.WriteFile(filepath.Join(staging, "stuck"+ref.PackSuffix), []byte("staged"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	left, err := SealStaged(ctx, dir)
	if left != 1 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SealStaged with a pack never uploaded: %d left, %v; want 1 and the deadline", left, err)
	}
}
