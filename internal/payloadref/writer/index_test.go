// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runagain/runagain/internal/payloadref/collect"
	"github.com/runagain/runagain/internal/payloadref/digestindex"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

// testClock is an injected clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock { return &testClock{t: time.Unix(1_800_000_000, 0)} }

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *testClock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// indexDB opens the index file of data directory dir on its own connection (as another process).
func indexDB(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, digestindex.IndexFile)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// lastRef is the index row's last_ref of value v (stored whole), or -1 without a row.
func lastRef(t *testing.T, db *sql.DB, v []byte) int64 {
	t.Helper()
	sum := sha256.Sum256(v)
	var last int64
	err := db.QueryRow(`SELECT last_ref FROM objects WHERE digest = ? AND manifest = 0`, sum[:]).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	return last
}

// TestCoarsenedTouch: a dedup hit updates the object's last_ref in the index only when the writer
// has not written it for TouchWindow, or when a Collect began since the writer last wrote it.
func TestCoarsenedTouch(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	dir := t.TempDir()
	clock := newTestClock()
	s := newPackStore(t, url, dir, StoreOptions{Now: clock.Now, PackMaxAge: time.Hour})
	db := indexDB(t, dir)
	v := []byte("TOUCHED " + strings.Repeat("t", 600))
	put := func(wantHit bool) {
		t.Helper()
		res, err := s.Put(ctx, v, false)
		if err != nil || (res.DedupHits == 1) != wantHit {
			t.Fatalf("put: %+v %v, want hit %v", res, err, wantHit)
		}
	}
	first, err := s.Put(ctx, v, false)
	if err != nil || first.Written != 1 {
		t.Fatalf("first put: %+v %v", first, err)
	}
	if got := lastRef(t, db, v); got != -1 {
		t.Fatalf("indexed on the request path (last_ref %d): want it indexed in the background", got)
	}
	if err := s.Flush(ctx); err != nil { // uploading indexes first
		t.Fatal(err)
	}
	t0 := clock.Now().UnixNano()
	if got := lastRef(t, db, v); got != t0 {
		t.Fatalf("last_ref after indexing: %d, want %d", got, t0)
	}

	clock.advance(time.Minute)
	put(true)
	if got := lastRef(t, db, v); got != t0 {
		t.Fatalf("a hit within TouchWindow updated last_ref to %d", got)
	}

	clock.advance(digestindex.TouchWindow)
	put(true)
	t1 := clock.Now().UnixNano()
	if got := lastRef(t, db, v); got != t1 {
		t.Fatalf("a hit after TouchWindow: last_ref %d, want %d", got, t1)
	}

	// A Collect begins (v is live, so it stays): the next hit touches at once.
	clock.advance(time.Second)
	if st, err := s.Collect(ctx, liveOf(first.URI), collect.Options{}); err != nil || st.PacksDeleted != 0 {
		t.Fatal(err)
	}
	clock.advance(time.Second)
	put(true)
	t2 := clock.Now().UnixNano()
	if got := lastRef(t, db, v); got != t2 {
		t.Fatalf("a hit after a Collect began: last_ref %d, want %d", got, t2)
	}
	clock.advance(time.Second)
	put(true)
	if got := lastRef(t, db, v); got != t2 {
		t.Fatalf("the second hit after the Collect touched again: last_ref %d", got)
	}
}

// TestCollectGraceCoversSkippedTouch: an object referenced within Grace before the mark, by a
// hit that did not touch it (within TouchWindow of its last touch, whose time is before
// mark - Grace), is kept: Collect widens the grace by TouchWindow.
func TestCollectGraceCoversSkippedTouch(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	dir := t.TempDir()
	clock := newTestClock()
	s := newPackStore(t, url, dir, StoreOptions{Now: clock.Now, PackMaxAge: time.Hour})
	db := indexDB(t, dir)
	v := []byte("IN-FLIGHT " + strings.Repeat("f", 600))
	first, err := s.Put(ctx, v, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	t0 := clock.Now()
	clock.advance(digestindex.TouchWindow / 2)
	if res, err := s.Put(ctx, v, false); err != nil || res.DedupHits != 1 { // in flight to the hot tier
		t.Fatalf("hit: %+v %v", res, err)
	}
	hit := clock.Now()
	clock.advance(time.Minute)
	grace := clock.Now().Sub(hit) + time.Second // the hit is within the grace, the last touch is not
	if got := lastRef(t, db, v); got != t0.UnixNano() || !time.Unix(0, got).Before(clock.Now().Add(-grace)) {
		t.Fatalf("last_ref %d: the test needs it before mark - Grace", got)
	}
	st, err := s.Collect(ctx, liveOf(), collect.Options{Grace: grace})
	if err != nil {
		t.Fatal(err)
	}
	if st.PacksDeleted != 0 || st.KeptRecent != 1 {
		t.Fatalf("collect: %+v, want the object referenced within the grace kept", st)
	}
	if got, err := newResolver(t).Fetch(ctx, first.URI); err != nil || !bytes.Equal(got, v) {
		t.Fatalf("fetch: %v", err)
	}
	// Past the grace and TouchWindow it goes.
	clock.advance(grace + digestindex.TouchWindow)
	if st, err := s.Collect(ctx, liveOf(), collect.Options{Grace: grace}); err != nil || st.PacksDeleted != 1 {
		t.Fatalf("collect after the grace: %+v %v", st, err)
	}
}

// TestCollectConcurrentWriterCoarse: a writer deduplicating the same few values in a loop (its
// hits mostly within TouchWindow, not touched) while Collect erases (Grace 0) everything not live
// again and again: every reference a batch committed stays readable. The live set is what the
// writer committed before the mark began (the writer publishes a batch's references under the
// lock it commits with); anything committed after must survive through the collect generation
// (touched at once after a Collect began) or be written again after ErrStale.
func TestCollectConcurrentWriterCoarse(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	s := newPackStore(t, url, t.TempDir(), StoreOptions{PackMaxAge: 5 * time.Millisecond})
	values := make([][]byte, 12)
	for i := range values {
		values[i] = []byte(fmt.Sprintf("VALUE-%02d %s", i, strings.Repeat("c", 500)))
	}
	var mu sync.Mutex // held over a batch's Commit and the publication of its references
	committed := map[string][]byte{}
	live := func(yield func(string) bool) error {
		mu.Lock()
		uris := make([]string, 0, len(committed))
		for u := range committed {
			uris = append(uris, u)
		}
		mu.Unlock()
		for _, u := range uris {
			if !yield(u) {
				break
			}
		}
		return nil
	}
	stop := make(chan struct{})
	werr := make(chan error, 1)
	var stale int
	go func() {
		rng := rand.New(rand.NewSource(1))
		defer close(werr)
		for {
			select {
			case <-stop:
				return
			default:
			}
			idx := []int{rng.Intn(len(values)), rng.Intn(len(values))}
			for {
				b := s.NewBatch()
				uris := map[string][]byte{}
				for _, i := range idx {
					res, err := b.Put(ctx, values[i], false)
					if err != nil {
						werr <- err
						return
					}
					uris[res.URI] = values[i]
				}
				mu.Lock()
				err := b.Commit(ctx)
				if err == nil {
					committed = uris // the hot tier holds the newest batch
				}
				mu.Unlock()
				if errors.Is(err, ErrStale) {
					stale++
					continue
				}
				if err != nil {
					werr <- err
					return
				}
				break
			}
		}
	}()
	var deleted int
	for range 40 {
		st, err := s.Collect(ctx, live, collect.Options{Erase: true})
		if err != nil {
			t.Fatal(err)
		}
		deleted += st.ObjectsDeleted
		mu.Lock()
		for u, v := range committed {
			if got, err := newResolver(t).Fetch(ctx, u); err != nil || !bytes.Equal(got, v) {
				mu.Unlock()
				t.Fatalf("committed reference %s after a Collect: %v", u, err)
			}
		}
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
	}
	close(stop)
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	t.Logf("objects collected %d, batches redone after ErrStale %d", deleted, stale)
	if deleted == 0 {
		t.Fatal("nothing was ever collected: the test proves nothing")
	}
}

// TestFilterRebuilt: the digest filter is filled from the index at open (a reopened store finds
// every object through it) and rebuilt larger when the objects pass its capacity; a new object
// never reaches the index (the filter answers first).
func TestFilterRebuilt(t *testing.T) {
	saved := digestindex.FilterMinEntries
	defer func() { digestindex.FilterMinEntries = saved }()
	digestindex.FilterMinEntries = 16
	ctx := context.Background()
	url, _ := fileURL(t)
	dir := t.TempDir()
	s := openPackStore(t, url, dir)
	st0, _ := s.Stats(ctx)
	if st0.FilterCapacity != 16 || st0.FilterBytes <= 0 {
		t.Fatalf("empty index: filter %+v", st0)
	}
	const n = 60
	for i := range n {
		if _, err := s.Put(ctx, randomText(1000+i, 400), false); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			if err := s.ix.flush(ctx, s.pw); err != nil {
				t.Fatal(err)
			}
		}
	}
	st, _ := s.Stats(ctx)
	if st.FilterCapacity <= 16 || st.IndexedObjects != n {
		t.Fatalf("after %d objects: %+v, want the filter rebuilt larger", n, st)
	}
	s.locs.Purge()
	for i := range n {
		if res, err := s.Put(ctx, randomText(1000+i, 400), false); err != nil || res.DedupHits != 1 {
			t.Fatalf("object %d after the rebuild: %+v %v", i, res, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := NewStore(ctx, url, StoreOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	staged(t, s2)
	if st, _ := s2.Stats(ctx); st.FilterCapacity != 2*n {
		t.Fatalf("reopened: %+v, want a filter for %d objects", st, 2*n)
	}
	for i := range n {
		if !s2.idx.MayHave(ref.Object{Sum: sha256.Sum256(randomText(1000+i, 400))}) {
			t.Fatalf("object %d: the filter of the reopened store says absent", i)
		}
		if res, err := s2.Put(ctx, randomText(1000+i, 400), false); err != nil || res.DedupHits != 1 {
			t.Fatalf("object %d after reopening: %+v %v", i, res, err)
		}
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}

	// New objects never reach SQLite: with the index's lookups failing, storing new
	// values still works, while looking up a stored one (not cached) fails. The default size
	// (1,000,000 entries for 60) makes a false positive on these keys practically impossible.
	digestindex.FilterMinEntries = saved
	testHookIndex = func(x digestIndex) digestIndex { return lookupFails{x} }
	s3 := newPackStore(t, url, dir, StoreOptions{})
	testHookIndex = nil
	for i := range 20 {
		if res, err := s3.Put(ctx, randomText(9000+i, 400), false); err != nil || res.Written != 1 {
			t.Fatalf("new object %d with the lookup closed: %+v %v", i, res, err)
		}
	}
	if _, err := s3.Put(ctx, randomText(1000, 400), false); err == nil {
		t.Fatal("a stored object was found without the index: the check above proves nothing")
	}
}

// TestIndexMigratedFromV1: an index written by the schema before pack numbers (pack id text,
// frame offset and length in every row) is migrated at open: every object is still found (a dedup
// hit naming its pack), Collect works on it, and the file shrinks.
func TestIndexMigratedFromV1(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	dir := t.TempDir()
	s := openPackStore(t, url, dir)
	var uris []string
	for i := range 200 {
		res, err := s.Put(ctx, randomText(5000+i, 300), false)
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, res.URI)
		if i == 99 {
			if err := s.Flush(ctx); err != nil { // two packs
				t.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Rewrite the index in the version 1 layout, as an older collector left it.
	db := indexDB(t, dir)
	for _, q := range []string{
		`CREATE TABLE objects1 (digest BLOB NOT NULL, manifest INTEGER NOT NULL, pack TEXT NOT NULL,
			off INTEGER NOT NULL, len INTEGER NOT NULL, last_ref INTEGER NOT NULL, PRIMARY KEY (digest, manifest)) WITHOUT ROWID`,
		`INSERT INTO objects1 SELECT o.digest, o.manifest, p.id, 48, 100, o.last_ref FROM objects o JOIN packs p ON p.n = o.pack`,
		`CREATE TABLE packs1 (id TEXT PRIMARY KEY, uploaded INTEGER NOT NULL, size INTEGER NOT NULL, created INTEGER NOT NULL)`,
		`INSERT INTO packs1 SELECT id, uploaded, size, created FROM packs WHERE uploaded = 1 LIMIT 1`, // one pack without its row
		`DROP TABLE objects`, `DROP TABLE packs`,
		`ALTER TABLE objects1 RENAME TO objects`, `ALTER TABLE packs1 RENAME TO packs`,
		`CREATE INDEX objects_pack ON objects (pack)`, `DELETE FROM meta WHERE k = 'schema'`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	_ = db.Close()

	s2 := newPackStore(t, url, dir, StoreOptions{})
	db2 := indexDB(t, dir)
	var off int
	if err := db2.QueryRow(`SELECT count(*) FROM pragma_table_info('objects') WHERE name = 'off'`).Scan(&off); err != nil || off != 0 {
		t.Fatalf("objects still has off (%d, %v): not migrated", off, err)
	}
	var schema string
	if err := db2.QueryRow(`SELECT v FROM meta WHERE k = 'schema'`).Scan(&schema); err != nil || schema != digestindex.SchemaVersion {
		t.Fatalf("schema %q %v", schema, err)
	}
	s2.locs.Purge()
	for i := range 200 {
		res, err := s2.Put(ctx, randomText(5000+i, 300), false)
		if err != nil || res.DedupHits != 1 || res.URI != uris[i] {
			t.Fatalf("object %d after migration: %+v %v, want a hit on %s", i, res, err, uris[i])
		}
	}
	st, err := s2.Collect(ctx, liveOf(uris[:100]...), collect.Options{})
	if err != nil || st.PacksDeleted != 1 {
		t.Fatalf("collect after migration: %+v %v, want the unreferenced pack deleted", st, err)
	}
	for _, u := range uris[:100] {
		if _, err := newResolver(t).Fetch(ctx, u); err != nil {
			t.Fatalf("live %s: %v", u, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, digestindex.IndexFile)); err != nil {
		t.Fatal(err)
	}
}

// lookupFails is a digest index whose lookups fail (as with its lookup statement closed).
type lookupFails struct{ digestIndex }

func (lookupFails) Lookup(context.Context, ref.Object) (string, error) {
	return "", errors.New("lookup: statement is closed")
}
