// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestIndexBacklogBounded: while the digest index does not take the objects waiting for it (here
// the background indexer is stopped, as when the index cannot be written), Put refuses new
// objects once MaxPendingObjects wait (ErrIndexBacklog, counted in Stats) instead of holding
// more and more of them in memory; every value acknowledged before stays readable, and once the
// index catches up new values are stored again. Without the bound the fourth Put succeeded and
// the pending set grew with every object.
func TestIndexBacklogBounded(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	s := newPackStore(t, url, t.TempDir(), StoreOptions{PackMaxAge: time.Hour, MaxPendingObjects: 3})
	s.ix.halt()
	r := newResolver(t)
	value := func(i int) []byte { return []byte(fmt.Sprintf("tool result %d %s", i, bytes.Repeat([]byte("x"), 300))) }
	var uris []string
	for i := 0; i < 3; i++ {
		res, err := s.Put(ctx, value(i), false)
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		uris = append(uris, res.URI)
	}
	if _, err := s.Put(ctx, value(3), false); !errors.Is(err, ErrIndexBacklog) {
		t.Fatalf("fourth put with 3 objects waiting: %v, want ErrIndexBacklog", err)
	}
	// A value already stored (pending) is still a dedup hit: nothing new to hold.
	if res, err := s.Put(ctx, value(1), false); err != nil || res.URI != uris[1] {
		t.Fatalf("dedup hit on a pending object: %v %+v", err, res)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.PendingObjects != 3 || st.RefusedObjects != 1 {
		t.Fatalf("stats: %d pending, %d refused; want 3 and 1", st.PendingObjects, st.RefusedObjects)
	}
	for i, u := range uris {
		if got, err := r.Fetch(ctx, u); err != nil || !bytes.Equal(got, value(i)) {
			t.Fatalf("acknowledged value %d unreadable while the index lags: %v", i, err)
		}
	}
	if err := s.ix.flush(ctx, s.pw); err != nil { // the index caught up
		t.Fatal(err)
	}
	res, err := s.Put(ctx, value(3), false)
	if err != nil {
		t.Fatalf("put after the index caught up: %v", err)
	}
	if got, err := r.Fetch(ctx, res.URI); err != nil || !bytes.Equal(got, value(3)) {
		t.Fatalf("fetch after catching up: %v", err)
	}
}

// TestStatsAtOpen: the count of indexed objects the processor logs at start is the one NewStore
// read building the digest filter (StatsAtOpen), equal to what a scan of the index gave then, and
// not read again: rows another connection adds afterwards show in Stats (a scan), not in
// StatsAtOpen.
func TestStatsAtOpen(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	dir := t.TempDir()
	s := openPackStore(t, url, dir)
	for i := 0; i < 3; i++ {
		if _, err := s.Put(ctx, []byte(fmt.Sprintf("value %d %s", i, bytes.Repeat([]byte("y"), 300))), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := newPackStore(t, url, dir, StoreOptions{PackMaxAge: time.Hour})
	at := s2.StatsAtOpen()
	st, err := s2.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if at.IndexedObjects != 3 || st.IndexedObjects != 3 || at.FilterCapacity == 0 {
		t.Fatalf("at open %+v, now %+v; want 3 indexed objects", at, st)
	}
	// Another process (or a scan StatsAtOpen must not do) would see these.
	db := indexDB(t, dir)
	for i := 0; i < 2; i++ {
		sum := sha256.Sum256([]byte(fmt.Sprint("added later ", i)))
		if _, err := db.Exec(`INSERT INTO objects (digest, manifest, pack, last_ref) VALUES (?, 0, 1, 0)`, sum[:]); err != nil {
			t.Fatal(err)
		}
	}
	at = s2.StatsAtOpen()
	if st, err = s2.Stats(ctx); err != nil {
		t.Fatal(err)
	}
	if at.IndexedObjects != 3 || st.IndexedObjects != 5 {
		t.Fatalf("after 2 rows added: at open %d, now %d indexed objects; want 3 and 5", at.IndexedObjects, st.IndexedObjects)
	}
}

// TestPendingLookupOffAppendLock: a Put's dedup lookup of an object appended but not yet indexed,
// and a Commit's pending pass, do not wait for the append lock (held here as a long append or a
// seal holds it): they were most of the contended-mutex delay of the collector under load.
func TestPendingLookupOffAppendLock(t *testing.T) {
	ctx := context.Background()
	url, _ := fileURL(t)
	s := newPackStore(t, url, t.TempDir(), StoreOptions{PackMaxAge: time.Hour})
	s.ix.halt() // keep the object pending
	v := bytes.Repeat([]byte("pending value "), 40)
	res, err := s.Put(ctx, v, false)
	if err != nil {
		t.Fatal(err)
	}
	s.pw.mu.Lock()
	done := make(chan error, 1)
	go func() {
		b := s.NewBatch()
		r, err := b.Put(ctx, v, false) // a dedup hit on the pending object
		if err == nil && (r.DedupHits != 1 || r.URI != res.URI) {
			err = fmt.Errorf("second put %+v, want a dedup hit on %s", r, res.URI)
		}
		if err == nil && func() bool { held, _ := s.pw.commitView(b, nil, nil); return len(held) != 0 }() {
			err = errors.New("the pending reference was not recognised")
		}
		done <- err
	}()
	select {
	case err := <-done:
		s.pw.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		s.pw.mu.Unlock()
		t.Fatal("a dedup lookup waited for the append lock")
	}
}
