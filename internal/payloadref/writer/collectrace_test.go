// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runagain/runagain/internal/payloadref/collect"
)

// racePool builds values that share content: value n belongs to session n/1000 and is a JSON
// array of 3 to 6 messages drawn from that session's 8 messages, sometimes with one of 8 shared
// by every session (so values split into manifests naming shared elements, and the same value
// recurs: a dedup hit on its root manifest).
type racePool struct{ msgs []string }

const raceSessions = 6

func newRacePool() *racePool {
	p := &racePool{}
	for i := 0; i < 8*(raceSessions+1); i++ {
		p.msgs = append(p.msgs, msg("user", fmt.Sprintf("message %02d %s", i, strings.Repeat("agent history ", 30))))
	}
	return p
}

// value returns value number n (deterministic: the same n gives the same bytes in any process).
func (p *racePool) value(n uint64) []byte {
	r := rand.New(rand.NewPCG(n, 7))
	session := int(n/1000) % raceSessions
	parts := make([]string, 3+r.IntN(4))
	for i := range parts {
		parts[i] = p.msgs[8*session+r.IntN(8)]
		if r.IntN(6) == 0 {
			parts[i] = p.msgs[8*raceSessions+r.IntN(8)]
		}
	}
	return []byte("[" + strings.Join(parts, ",") + "]")
}

// pick returns a value of session (one of 8), or now and then another session's.
func (p *racePool) pick(r *rand.Rand, session int) uint64 {
	if r.IntN(10) == 0 {
		session = r.IntN(raceSessions)
	}
	return uint64(session*1000 + r.IntN(8))
}

// raceAck is an acknowledged payload: its reference, the value it must read back as, and the
// session whose row holds it.
type raceAck struct {
	uri     string
	n       uint64
	session int
}

// raceLedger is the test's model of the hot tier: the references of acknowledged payloads still
// live, per session. Writers add to it in the same critical section as their Commit (read-locked)
// and Collect's live enumeration copies it under the write lock, so a payload is either among the
// live references or was acknowledged after the mark began (as a row reaches the hot tier after
// payload_offload acknowledged it, with Grace covering the gap in production).
type raceLedger struct {
	mu    sync.RWMutex // Commit+add read-locked, the live enumeration write-locked
	addMu sync.Mutex   // appends to live
	live  []raceAck
	// atMark, when set, runs in the live enumeration after the copy: after the mark began.
	atMark func()
}

func (l *raceLedger) add(a raceAck) {
	l.addMu.Lock()
	l.live = append(l.live, a)
	l.addMu.Unlock()
}

func (l *raceLedger) erase(session int) (erased []raceAck) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.live[:0]
	for _, a := range l.live {
		if a.session == session {
			erased = append(erased, a)
		} else {
			kept = append(kept, a)
		}
	}
	l.live = kept
	return erased
}

func (l *raceLedger) refs(yield func(string) bool) error {
	l.mu.Lock()
	uris := make([]string, len(l.live))
	for i, a := range l.live {
		uris[i] = a.uri
	}
	l.mu.Unlock()
	if l.atMark != nil {
		l.atMark()
	}
	for _, u := range uris {
		if !yield(u) {
			break
		}
	}
	return nil
}

func (l *raceLedger) snapshot() []raceAck {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]raceAck(nil), l.live...)
}

// checkAcked reads every acknowledged live payload back through a fresh Resolver and counts
// those missing or different.
func checkAcked(t *testing.T, pool *racePool, acks []raceAck) (missing int) {
	t.Helper()
	r := newResolver(t)
	seen := map[string]bool{}
	for _, a := range acks {
		if seen[a.uri] {
			continue // the same reference (same content) acknowledged again
		}
		seen[a.uri] = true
		got, err := r.Fetch(context.Background(), a.uri)
		if err != nil || !bytes.Equal(got, pool.value(a.n)) {
			missing++
			if missing <= 3 {
				t.Errorf("acknowledged payload %s (value %d, session %d) does not read back: %v", a.uri, a.n, a.session, err)
			}
		}
	}
	return missing
}

// TestCollectEraseDedupRace interleaves, at random and for a bounded number of rounds, writers
// whose batches deduplicate against shared content (elements and whole manifests) with
// erasures (Collect with Erase, Grace 0, the erased session's references as Erased) run by a
// CollectOnly Store on the same data directory, as `runagain delete` runs beside the collector.
// After every Collect, every acknowledged payload still referenced reads back byte for byte.
func TestCollectEraseDedupRace(t *testing.T) {
	const rounds = 40
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	ctx := context.Background()
	url, _ := fileURL(t)
	dir := t.TempDir()
	// Small packs, sealed and uploaded often, so that collections meet uploaded packs.
	w := newPackStore(t, url, dir, StoreOptions{PackMaxAge: 20 * time.Millisecond, PackMaxSize: 64 << 10})
	c := newPackStore(t, url, dir, StoreOptions{CollectOnly: true})
	pool := newRacePool()
	ledger := &raceLedger{}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var acked, stale int
	var countMu sync.Mutex
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				time.Sleep(time.Duration(200+r.IntN(800)) * time.Microsecond)
				a := raceAck{session: r.IntN(raceSessions)}
				a.n = pool.pick(r, a.session)
				v := pool.value(a.n)
				for attempt := 0; ; attempt++ {
					b := w.NewBatch()
					res, err := b.Put(ctx, v, true)
					if err != nil {
						b.abort()
						t.Errorf("put: %v", err)
						return
					}
					if r.IntN(3) == 0 {
						time.Sleep(time.Duration(r.IntN(2000)) * time.Microsecond)
					}
					ledger.mu.RLock()
					err = b.Commit(ctx)
					if err == nil {
						a.uri = res.URI
						ledger.add(a)
					}
					ledger.mu.RUnlock()
					if err == nil {
						countMu.Lock()
						acked++
						countMu.Unlock()
						break
					}
					if !errors.Is(err, ErrStale) || attempt > 5 {
						t.Errorf("commit: %v", err)
						return
					}
					countMu.Lock()
					stale++
					countMu.Unlock()
				}
			}
		}(g)
	}

	r := rand.New(rand.NewPCG(seed, 99))
	var missing, erasedRefs, deleted, keptChildren, hits int
	for round := 0; round < rounds && !t.Failed(); round++ {
		time.Sleep(time.Duration(r.IntN(30)) * time.Millisecond)
		gone := r.IntN(raceSessions)
		erased := ledger.erase(gone)
		erasedRefs += len(erased)
		var uris []string
		for _, a := range erased {
			uris = append(uris, a.uri)
		}
		// Another session sends some of the erased content again while the erasure marks: a
		// dedup hit on the erased value's root manifest after the mark began.
		ledger.atMark = func() {
			for i := 0; i < len(erased) && i < 3 && r.IntN(2) == 0; i++ {
				a := raceAck{n: erased[r.IntN(len(erased))].n, session: (gone + 1 + r.IntN(raceSessions-1)) % raceSessions}
				res, err := w.Put(ctx, pool.value(a.n), true)
				if err != nil {
					t.Errorf("put at the mark: %v", err)
					return
				}
				a.uri = res.URI
				ledger.add(a)
				hits++
			}
		}
		st, err := c.Collect(ctx, ledger.refs, collect.Options{Erase: true, Erased: liveOf(uris...)})
		if err != nil {
			t.Fatalf("round %d: collect: %v", round, err)
		}
		deleted += st.ObjectsDeleted
		keptChildren += st.KeptChildren
		missing += checkAcked(t, pool, ledger.snapshot())
	}
	close(stop)
	wg.Wait()
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	missing += checkAcked(t, pool, ledger.snapshot())
	t.Logf("rounds %d: acknowledged %d (%d retried after ErrStale; %d sent again during an erasure's mark), erased references %d, objects deleted %d, kept for a kept manifest %d, acknowledged missing %d",
		rounds, acked+hits, stale, hits, erasedRefs, deleted, keptChildren, missing)
	if missing != 0 {
		t.Fatalf("%d acknowledged payloads missing", missing)
	}
	if deleted == 0 || acked == 0 {
		t.Fatalf("the test exercised nothing: %d acknowledged, %d objects deleted", acked, deleted)
	}
}
