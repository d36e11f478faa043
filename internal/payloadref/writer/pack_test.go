// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"gocloud.dev/blob"

	"github.com/runagain/runagain/internal/payloadref"
	"github.com/runagain/runagain/internal/payloadref/collect"
	"github.com/runagain/runagain/internal/payloadref/packfile"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

// newPackStore opens a pack-layout Store on url with its data directory dir.
func newPackStore(t *testing.T, url, dir string, opts StoreOptions) *Store {
	t.Helper()
	opts.Dir = dir
	return newStore(t, url, opts)
}

// openPackStore opens a pack-layout Store on url with its data directory dir and packs sealed only
// by size or Flush, and leaves closing it to the test: for tests that close it before reopening the
// directory, or that never close it (a simulated crash).
func openPackStore(t *testing.T, url, dir string) *Store {
	t.Helper()
	s, err := NewStore(context.Background(), url, StoreOptions{Dir: dir, PackMaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	staged(t, s)
	return s
}

func fileURL(t *testing.T) (url, dir string) {
	dir = t.TempDir()
	return "file://" + dir + "?create_dir=true&metadata=skip", dir
}

// bucketKeys lists every key under prefix in the bucket at url.
func bucketKeys(t *testing.T, url, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	b, closeFn, err := ref.OpenBucket(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeFn() }()
	var keys []string
	it := b.List(&blob.ListOptions{Prefix: prefix})
	for {
		o, err := it.Next(ctx)
		if err != nil {
			break
		}
		keys = append(keys, o.Key)
	}
	return keys
}

// decodedBucket returns every byte of the bucket with every zstd frame of every pack and single
// object decompressed: what a search of the raw storage for a planted value must look through.
func decodedBucket(t *testing.T, url string) []byte {
	t.Helper()
	ctx := context.Background()
	b, closeFn, err := ref.OpenBucket(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = closeFn() }()
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	var out bytes.Buffer
	for _, k := range bucketKeys(t, url, "") {
		data, err := b.ReadAll(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(data)
		// Every zstd frame in the object, wherever it starts (packs hold many).
		for i := 0; i+4 <= len(data); i++ {
			if data[i] == 0x28 && data[i+1] == 0xb5 && data[i+2] == 0x2f && data[i+3] == 0xfd {
				if raw, err := dec.DecodeAll(data[i:], nil); err == nil {
					out.Write(raw)
				} else if d, err := zstd.NewReader(bytes.NewReader(data[i:])); err == nil {
					var one bytes.Buffer
					_, _ = one.ReadFrom(d)
					d.Close()
					out.Write(one.Bytes())
				}
			}
		}
	}
	return out.Bytes()
}

func conversation(prefix string, n int) []byte {
	var parts []string
	for i := 0; i < n; i++ {
		parts = append(parts, msg("user", fmt.Sprintf("%s message %d %s", prefix, i, strings.Repeat("lorem ipsum ", 40))))
	}
	return []byte("[" + strings.Join(parts, ",") + "]")
}

// TestPackRoundTrip: values (split and whole) are appended to one pack, readable from the
// staging area before the upload and with ranged reads after it; the bucket holds packs only.
func TestPackRoundTrip(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	s := newPackStore(t, url, t.TempDir(), StoreOptions{PackMaxAge: time.Hour})
	r := newResolver(t)
	values := map[string][]byte{}
	for name, v := range shapes {
		for _, split := range []bool{false, true} {
			res, err := s.Put(ctx, []byte(v), split)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !strings.Contains(res.URI, "/packs/") || !strings.Contains(res.URI, "#sha256/") {
				t.Fatalf("%s: reference %s does not name a pack and an object", name, res.URI)
			}
			values[res.URI] = []byte(v)
		}
	}
	if keys := bucketKeys(t, url, ""); len(keys) != 0 {
		t.Fatalf("bucket holds %v before the pack is sealed", keys)
	}
	for uri, v := range values {
		got, err := r.Fetch(ctx, uri)
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("staged fetch %s: %v", uri, err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	keys := bucketKeys(t, url, "")
	if len(keys) != 1 || !strings.HasPrefix(keys[0], ref.PackDir) {
		t.Fatalf("bucket after flush: %v, want one pack", keys)
	}
	r2 := newResolver(t) // no cached trailers, staging empty: the bucket only
	for uri, v := range values {
		got, err := r2.Fetch(ctx, uri)
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("fetch %s after upload: %v", uri, err)
		}
	}
}

// TestPackSizeLimit: a segment is sealed when the next object would take it past PackMaxSize,
// and by age.
func TestPackSizeLimit(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	s := newPackStore(t, url, t.TempDir(), StoreOptions{PackMaxSize: 64 << 10, PackMaxAge: time.Hour, Level: zstd.SpeedFastest})
	var uris []string
	for i := 0; i < 40; i++ {
		v := randomText(i, 8<<10) // incompressible enough: ~8 KiB per object
		res, err := s.Put(ctx, v, false)
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, res.URI)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	packs := bucketKeys(t, url, ref.PackDir)
	if len(packs) < 4 || len(packs) > 8 {
		t.Fatalf("%d packs for ~320 KiB at 64 KiB each", len(packs))
	}
	r := newResolver(t)
	for i, u := range uris {
		if got, err := r.Fetch(ctx, u); err != nil || !bytes.Equal(got, randomText(i, 8<<10)) {
			t.Fatalf("fetch %d: %v", i, err)
		}
	}
	// Age: one small object, sealed and uploaded without Flush.
	s2 := newPackStore(t, url, t.TempDir(), StoreOptions{PackMaxAge: 50 * time.Millisecond})
	if _, err := s2.Put(ctx, []byte("aged object "+strings.Repeat("x", 100)), false); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(bucketKeys(t, url, ref.PackDir)) == len(packs) {
		if time.Now().After(deadline) {
			t.Fatal("the aged segment was never uploaded")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func randomText(seed, n int) []byte {
	b := make([]byte, n)
	x := uint64(seed)*0x9E3779B97F4A7C15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = 'a' + byte(x%26)
	}
	return b
}

// TestPackDedupAcrossPacks: an object in an uploaded pack is found through the persistent index
// by a new Store (cold cache) and not written again; conversation turns share their messages.
func TestPackDedupAcrossPacks(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	dir := t.TempDir()
	s1, err := NewStore(ctx, url, StoreOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	staged(t, s1)
	turn1 := conversation("dedup", 10)
	res1, err := s1.Put(ctx, turn1, true)
	if err != nil || res1.Written < 10 {
		t.Fatalf("first put: %+v %v", res1, err)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := newPackStore(t, url, dir, StoreOptions{})
	st, _ := s2.Stats(ctx)
	if st.CachedLocations != 0 || st.IndexedObjects < 11 {
		t.Fatalf("new store: %+v, want a cold cache and the index of the first", st)
	}
	again, err := s2.Put(ctx, turn1, true)
	if err != nil || again.Written != 0 || again.DedupHits != 1 || again.URI != res1.URI {
		t.Fatalf("same value in a new store: %+v %v (first %s)", again, err, res1.URI)
	}
	// The next turn: the history's messages are found in the first pack.
	turn2 := append(append([]byte(nil), turn1[:len(turn1)-1]...), []byte(","+msg("assistant", strings.Repeat("reply ", 80))+"]")...)
	res2, err := s2.Put(ctx, turn2, true)
	if err != nil {
		t.Fatal(err)
	}
	if res2.Written > 3 || res2.DedupHits < 9 {
		t.Fatalf("next turn wrote %d objects, %d dedup hits: history not deduplicated across packs", res2.Written, res2.DedupHits)
	}
	if err := s2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	r := newResolver(t)
	for uri, v := range map[string][]byte{res1.URI: turn1, res2.URI: turn2} {
		if got, err := r.Fetch(ctx, uri); err != nil || !bytes.Equal(got, v) {
			t.Fatalf("fetch %s: %v", uri, err)
		}
	}
	if n := len(bucketKeys(t, url, ref.PackDir)); n != 2 {
		t.Fatalf("%d packs, want 2", n)
	}
}

// TestOldRefsResolve: references of the single-object layout, written before packs, resolve
// next to pack references on the same bucket, and a pack-layout Store does not disturb them.
func TestOldRefsResolve(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	old := newStore(t, url, StoreOptions{})
	v := conversation("old", 5)
	oldRes, err := old.Put(ctx, v, true)
	if err != nil || strings.Contains(oldRes.URI, "#") {
		t.Fatalf("old put: %+v %v", oldRes, err)
	}
	s := newPackStore(t, url, t.TempDir(), StoreOptions{})
	newRes, err := s.Put(ctx, v, true)
	if err != nil || !strings.Contains(newRes.URI, "/packs/") {
		t.Fatalf("pack put: %+v %v", newRes, err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	r := newResolver(t)
	for _, u := range []string{oldRes.URI, newRes.URI} {
		if got, err := r.Fetch(ctx, u); err != nil || !bytes.Equal(got, v) {
			t.Fatalf("fetch %s: %v", u, err)
		}
	}
}

// liveOf returns a LiveRefs over uris.
func liveOf(uris ...string) collect.LiveRefs {
	return func(yield func(string) bool) error {
		for _, u := range uris {
			if !yield(u) {
				break
			}
		}
		return nil
	}
}

// TestCollectErase: packs holding only dead objects are deleted, mostly dead ones rewritten, old
// single objects swept; with Erase no byte of a dead value remains in the bucket (searched in
// the decompressed content of every pack and object) while every live reference still resolves.
func TestCollectErase(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	clock := time.Now()
	var clockMu sync.Mutex
	now := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return clock }
	advance := func(d time.Duration) { clockMu.Lock(); clock = clock.Add(d); clockMu.Unlock() }

	old := newStore(t, url, StoreOptions{})
	oldDead, _ := old.Put(ctx, []byte("OLDSECRET "+strings.Repeat("single object ", 50)), false)
	oldLive, _ := old.Put(ctx, []byte("OLDKEEP "+strings.Repeat("single object ", 50)), false)

	s := newPackStore(t, url, t.TempDir(), StoreOptions{Now: now, PackMaxAge: time.Hour})
	put := func(v []byte, split bool) string {
		t.Helper()
		res, err := s.Put(ctx, v, split)
		if err != nil {
			t.Fatal(err)
		}
		return res.URI
	}
	// Pack 1: only dead values. Pack 2: a live conversation and one dead value (a small dead fraction).
	dead1 := put([]byte("SECRET-ONE "+strings.Repeat("dead ", 300)), false)
	deadConv := put(conversation("SECRET-CONV", 6), true)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	liveConv := put(conversation("KEEP-CONV", 30), true)
	dead2 := put([]byte("SECRET-TWO "+strings.Repeat("x", 200)), false)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	advance(time.Minute)
	live := liveOf(liveConv, oldLive.URI, "not a uri", "s3://other-bucket/packs/0.pack#"+ref.ValueKey([32]byte{}))

	// Without Erase: pack 1 goes, pack 2 stays (its dead fraction is small), the old dead object goes.
	st, err := s.Collect(ctx, live, collect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("collect: %+v", st)
	if st.PacksDeleted != 1 || st.PacksRewritten != 0 || st.LiveRefs != 2 {
		t.Fatalf("collect: %+v, want pack 1 deleted, pack 2 kept", st)
	}
	raw := decodedBucket(t, url)
	for _, planted := range []string{"SECRET-ONE", "SECRET-CONV", "OLDSECRET"} {
		if bytes.Contains(raw, []byte(planted)) {
			t.Fatalf("%s still in the bucket after collect", planted)
		}
	}
	if !bytes.Contains(raw, []byte("SECRET-TWO")) {
		t.Fatal("the test cannot tell: SECRET-TWO should remain without Erase")
	}
	// With Erase: pack 2 is rewritten without SECRET-TWO.
	st, err = s.Collect(ctx, live, collect.Options{Erase: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.PacksRewritten != 1 {
		t.Fatalf("erase: %+v, want pack 2 rewritten", st)
	}
	raw = decodedBucket(t, url)
	if bytes.Contains(raw, []byte("SECRET")) {
		t.Fatal("a dead value's bytes remain after erase")
	}
	if !bytes.Contains(raw, []byte("KEEP-CONV message 29")) || !bytes.Contains(raw, []byte("OLDKEEP")) {
		t.Fatal("live values are gone")
	}
	r := newResolver(t)
	for _, u := range []string{liveConv, oldLive.URI} {
		if _, err := r.Fetch(ctx, u); err != nil {
			t.Fatalf("live %s: %v", u, err)
		}
	}
	for _, u := range []string{dead1, deadConv, dead2, oldDead.URI} {
		if _, err := newResolver(t).Fetch(ctx, u); err == nil {
			t.Fatalf("dead %s still resolves", u)
		}
	}
	// The index forgot the dead objects: storing a dead value again writes it anew.
	again, err := s.Put(ctx, []byte("SECRET-TWO "+strings.Repeat("x", 200)), false)
	if err != nil || again.Written != 1 {
		t.Fatalf("dead value stored again: %+v %v, want written anew", again, err)
	}
}

// TestCollectConcurrentReference: a value deduplicated while Collect runs (after its mark began)
// is not deleted; a writer whose cached location was collected before its commit gets ErrStale
// and, putting again, writes the object anew.
func TestCollectConcurrentReference(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	s := newPackStore(t, url, t.TempDir(), StoreOptions{PackMaxAge: time.Hour})
	v := []byte("REFERENCED-DURING-SWEEP " + strings.Repeat("y", 500))
	first, err := s.Put(ctx, v, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	// The live references do not include v (its span has not reached the hot tier), but a
	// writer references it again while the references are enumerated (after the mark began).
	var second PutResult
	live := func(yield func(string) bool) error {
		var err error
		second, err = s.Put(ctx, v, false)
		if err != nil {
			return err
		}
		return nil
	}
	st, err := s.Collect(ctx, live, collect.Options{Erase: true})
	if err != nil {
		t.Fatal(err)
	}
	if second.DedupHits != 1 || st.KeptRecent != 1 || st.PacksDeleted != 0 {
		t.Fatalf("put during collect %+v, collect %+v: want a dedup hit kept", second, st)
	}
	if got, err := newResolver(t).Fetch(ctx, first.URI); err != nil || !bytes.Equal(got, v) {
		t.Fatalf("value referenced during the sweep: %v", err)
	}

	// Stale: a batch deduplicates against the cached location, then a Collect (no live
	// reference, the hit not yet committed) removes the object, then the batch commits.
	time.Sleep(5 * time.Millisecond)
	b := s.NewBatch()
	res, err := b.Put(ctx, v, false)
	if err != nil || res.DedupHits != 1 {
		t.Fatalf("batch put: %+v %v", res, err)
	}
	if st, err := s.Collect(ctx, liveOf(), collect.Options{}); err != nil || st.PacksDeleted != 1 {
		t.Fatalf("collect: %+v %v", st, err)
	}
	if err := b.Commit(ctx); !errors.Is(err, ErrStale) {
		t.Fatalf("commit after the object was collected: %v, want ErrStale", err)
	}
	res, err = s.Put(ctx, v, false)
	if err != nil || res.Written != 1 {
		t.Fatalf("put after ErrStale: %+v %v, want written anew", res, err)
	}
	if got, err := newResolver(t).Fetch(ctx, res.URI); err != nil || !bytes.Equal(got, v) {
		t.Fatalf("rewritten value: %v", err)
	}
}

// TestStagingLocked: a second writer on the same data directory fails at once; a CollectOnly
// Store opens beside the writer.
func TestStagingLocked(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	dir := t.TempDir()
	_ = newPackStore(t, url, dir, StoreOptions{})
	if _, err := NewStore(ctx, url, StoreOptions{Dir: dir}); !errors.Is(err, ErrStagingLocked) {
		t.Fatalf("second writer: %v, want ErrStagingLocked", err)
	}
	c := newPackStore(t, url, dir, StoreOptions{CollectOnly: true})
	if _, err := c.Put(ctx, []byte("x"), false); err == nil {
		t.Fatal("Put on a CollectOnly store succeeded")
	}
	if _, err := c.Collect(ctx, liveOf(), collect.Options{}); err != nil {
		t.Fatal(err)
	}
	// An index names one bucket: a collector on another bucket is refused (a sweep with the
	// wrong index would take every object for unindexed), never reset.
	other, _ := fileURL(t)
	if _, err := NewStore(ctx, other, StoreOptions{Dir: dir, CollectOnly: true}); err == nil || !strings.Contains(err.Error(), "indexes bucket") {
		t.Fatalf("collector on another bucket: %v", err)
	}
}

// TestRecoverTornSegment: an open segment left by a crash, with a torn record at its end, is cut
// at its last whole record, sealed, indexed and uploaded by the next Store.
func TestRecoverTornSegment(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	dir := t.TempDir()
	s := openPackStore(t, url, dir)
	v := []byte("ACKED " + strings.Repeat("z", 3000))
	res, err := s.Put(ctx, v, false)
	if err != nil {
		t.Fatal(err)
	}
	// Simulate the crash: a torn record after the committed one, and no Close (the lock is
	// released as a dead process's would be).
	s.pw.mu.Lock()
	seg := s.pw.cur
	s.pw.closed = true
	_, _ = seg.f.WriteAt(append(encodeRecordHeader(ref.Object{Sum: [32]byte{1}}, 5000, true), "torn"...), seg.size)
	s.pw.mu.Unlock()
	_ = s.pw.lock.Unlock()
	close(s.pw.stop)
	s.pw.wg.Wait()
	s.ix.halt() // the object stays unindexed: the next Store indexes it from the staged pack
	_ = s.index.Close()

	if got, err := newResolver(t, payloadref.WithStagingDir(s.staging)).Fetch(ctx, res.URI); err != nil || !bytes.Equal(got, v) {
		t.Fatalf("staged object after the crash: %v", err)
	}
	s2 := newPackStore(t, url, dir, StoreOptions{})
	if err := s2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := packfile.StagedPacks(s2.staging); n != 0 {
		t.Fatalf("%d packs still staged after recovery and flush", n)
	}
	if keys := bucketKeys(t, url, ref.PackDir); len(keys) != 1 {
		t.Fatalf("bucket: %v", keys)
	}
	if again, err := s2.Put(ctx, v, false); err != nil || again.Written != 0 {
		t.Fatalf("recovered object not indexed: %+v %v", again, err)
	}
	if got, err := newResolver(t).Fetch(ctx, res.URI); err != nil || !bytes.Equal(got, v) {
		t.Fatalf("uploaded object: %v", err)
	}
	_ = os.Remove(filepath.Join(dir, "unused"))
}

// TestPackConcurrentBatches: batches committing at once (shared fsyncs), with values repeated
// across batches and packs sealed under them (small size limit), all resolve, and every object
// is in the index once.
func TestPackConcurrentBatches(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	s := newPackStore(t, url, t.TempDir(), StoreOptions{PackMaxSize: 64 << 10, PackMaxAge: 20 * time.Millisecond})
	type ref struct {
		uri string
		v   []byte
	}
	var mu sync.Mutex
	var refs []ref
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				b := s.NewBatch()
				var mine []ref
				for j := 0; j < 3; j++ {
					v := randomText((g*20+i)%37*3+j, 2000) // repeats across goroutines
					res, err := b.Put(ctx, v, false)
					if err != nil {
						errs <- err
						return
					}
					mine = append(mine, ref{res.URI, v})
				}
				if err := b.Commit(ctx); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				refs = append(refs, mine...)
				mu.Unlock()
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	r := newResolver(t)
	for _, x := range refs {
		if got, err := r.Fetch(ctx, x.uri); err != nil || !bytes.Equal(got, x.v) {
			t.Fatalf("fetch %s: %v", x.uri, err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stats(ctx)
	if err != nil || st.IndexedObjects != 37*3 || st.StagedPacks != 0 {
		t.Fatalf("stats %+v %v: want %d objects indexed once, nothing staged", st, err, 37*3)
	}
	for _, x := range refs {
		if got, err := newResolver(t).Fetch(ctx, x.uri); err != nil || !bytes.Equal(got, x.v) {
			t.Fatalf("fetch %s after upload: %v", x.uri, err)
		}
	}
}

// encodeRecordHeader is the header of a staging record of zlen stored bytes, raw or a zstd frame
// (the tests write staging records by hand).
func encodeRecordHeader(k ref.Object, zlen int, raw bool) []byte {
	return packfile.AppendRecordHeader(make([]byte, 0, packfile.RecordHeaderSize), k, zlen, raw)
}
