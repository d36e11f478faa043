// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"context"
	"sync"
	"time"

	"github.com/runagain/runagain/internal/payloadref/packfile"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

// Background indexing: a Batch's new objects are durable once Commit returns (their staged pack
// is fsynced, and a restart re-reads the staged packs' records: packWriter.recover), so their
// index rows are not written on the request path. The indexer inserts them in one transaction
// per indexInterval, or as soon as indexMaxPending objects wait; until then they are found
// through packWriter.lookupPending. A pack is uploaded only once every object in it is indexed
// (the uploader flushes the indexer first), so Collect, which sweeps uploaded packs, never meets
// an object a batch acknowledged that the index does not list yet; the exception is a manifest
// whose batch had not committed when the pack was uploaded (unconfirmed, see Batch: indexed once
// a Commit confirms it), which Collect leaves alone for collect.OrphanAge after the upload.
//
// Digests are random keys: a flush dirties about min(rows, leaf pages) pages of the objects
// B-tree, all written to the WAL at its commit, so a few large flushes cost much less than many
// small ones. With 4,096 objects and 1 s the indexer flushed about three times a second under
// make bench's traffic (some 13,000 new objects/s), each rewriting most of the index's pages;
// at 32,768 and 5 s the processor's benchmark used 0.85-0.88 of the CPU per span
// (BenchmarkOffloadLoadgen, BENCHMARKS.md). Objects waiting are found in memory (about 150
// bytes each: some 5 MB at the bound).
const (
	indexInterval   = 5 * time.Second
	indexMaxPending = 32768
)

// cachedLoc is a location in the Store's in-memory cache: the pack, and what the writer knows of
// the index row's last_ref: at least touched (unix nanoseconds; 0 unknown), written while the
// collect generation was gen (-1 unknown).
type cachedLoc struct {
	pack    string
	touched int64
	gen     int64
}

// indexer inserts the objects appended to staged packs into the index in the background.
type indexer struct {
	s       *Store
	flushMu sync.Mutex // one flush at a time; the indexer is the only inserter of index rows once the store is open
	// gate: a flush holds it from its insert until the objects left the pending set; a Commit
	// holds it shared over its index step, so that "still pending" means "not inserted yet".
	gate    sync.RWMutex
	started bool
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

func newIndexer(s *Store) *indexer {
	return &indexer{s: s, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// start runs the indexer until close.
func (ix *indexer) start() {
	ix.started = true
	go func() {
		defer close(ix.done)
		t := time.NewTicker(indexInterval)
		defer t.Stop()
		for {
			select {
			case <-ix.stop:
				return
			case <-t.C:
			case <-ix.kick:
			}
			if err := ix.flush(context.Background(), ix.s.pw); err != nil {
				ix.s.logger("payloadref: indexing staged objects (will retry): %v", err)
			}
		}
	}()
}

// poke asks for a flush soon when many objects wait (pending is how many).
func (ix *indexer) poke(pending int) {
	if pending >= indexMaxPending {
		select {
		case ix.kick <- struct{}{}:
		default:
		}
	}
}

// flush indexes every object appended so far: it makes their bytes durable first (an index row
// never names bytes a crash could lose), inserts their rows in one transaction, adds them to the
// filter and the location cache, and drops them from the pending set.
// w is the store's pack writer (passed: the uploader flushes before NewStore has set s.pw).
func (ix *indexer) flush(ctx context.Context, w *packWriter) error {
	ix.flushMu.Lock()
	defer ix.flushMu.Unlock()
	s := ix.s
	es := w.pendingSnapshot()
	if len(es) == 0 {
		return nil
	}
	if _, err := w.sync(); err != nil {
		return err
	}
	ix.gate.Lock()
	// Manifests dropped since the snapshot (see dropManifests, under the gate) are never indexed.
	if es = w.stillPending(es); len(es) == 0 {
		ix.gate.Unlock()
		return nil
	}
	gen, ts, err := s.idx.Insert(ctx, es, s.now)
	if err != nil {
		ix.gate.Unlock()
		return err
	}
	full := s.idx.AddFiltered(es)
	for _, e := range es {
		s.locs.Add(e.Object, cachedLoc{pack: e.Pack, touched: ts, gen: gen})
	}
	w.indexed(es)
	ix.gate.Unlock()
	if full {
		return s.idx.BuildFilter(ctx)
	}
	return nil
}

// close stops the background loop and indexes what is left.
func (ix *indexer) close(ctx context.Context) error {
	ix.halt()
	return ix.flush(ctx, ix.s.pw)
}

// halt stops the background loop (idempotent).
func (ix *indexer) halt() {
	if !ix.started {
		return
	}
	select {
	case <-ix.stop:
	default:
		close(ix.stop)
	}
	<-ix.done
}

// pendingManifest is what the pack writer knows of a pending manifest: the locations its parts
// name (deps: the children it was written with, by pack), and the Batch that appended it while no
// Commit has confirmed it (owner; nil once confirmed). See Batch for the invariant.
type pendingManifest struct {
	pack  string
	owner *Batch
	deps  []ref.Location
}

// commitView is a Commit's one pass over the pending set (under its lock, not the append lock):
// it appends to held the references of b to check in the index (those not found pending, or
// found pending and no longer: indexed or dropped since), plus every location that an
// unconfirmed pending manifest b references names, directly or through other unconfirmed pending
// manifests of other Batches (b's own name only what b references: they are b's references
// already); conf gets those unconfirmed pending manifests (b's own and the others), which the
// Commit confirms if it succeeds. The caller holds the indexer's gate (shared) from this pass
// until it confirmed: nothing leaves the pending set meanwhile.
func (w *packWriter) commitView(b *Batch, held, conf []ref.Location) ([]ref.Location, []ref.Location) {
	w.pmu.RLock()
	defer w.pmu.RUnlock()
	var walk []ref.Location
	// pendingNow tells whether l is pending (same pack); an unconfirmed manifest goes to conf
	// and, when another Batch appended it (its Commit has not succeeded, and may fail), what it
	// names to walk: checked as if b referenced it.
	pendingNow := func(l ref.Location) bool {
		if e, ok := w.pending[l.Object]; !ok || e.Pack != l.Pack {
			return false
		}
		if m, ok := w.manifests[l.Object]; ok && l.Manifest && m.owner != nil {
			conf = append(conf, l)
			if m.owner != b {
				walk = append(walk, m.deps...)
			}
		}
		return true
	}
	for l, r := range b.refs {
		if !r.pending || !pendingNow(l) {
			held = append(held, l)
		}
	}
	if len(walk) == 0 {
		return held, conf
	}
	seen := map[ref.Location]bool{}
	for len(walk) > 0 {
		d := walk[len(walk)-1]
		walk = walk[:len(walk)-1]
		if seen[d] {
			continue
		}
		seen[d] = true
		if pendingNow(d) {
			continue
		}
		if _, ok := b.refs[d]; !ok {
			held = append(held, d)
		}
	}
	return held, conf
}

// confirm marks the pending manifests in conf (see commitView) confirmed: the indexer may index
// them, and Commits referencing them no longer check what they name.
func (w *packWriter) confirm(conf []ref.Location) {
	if len(conf) == 0 {
		return
	}
	w.pmu.Lock()
	defer w.pmu.Unlock()
	for _, l := range conf {
		if m, ok := w.manifests[l.Object]; ok && m.pack == l.Pack && m.owner != nil {
			m.owner = nil
			w.manifests[l.Object] = m
		}
	}
}

// dropManifests removes from the pending set (so that no Put finds them, and the indexer never
// indexes them) the pending manifests that name a location of gone, directly or through other
// pending manifests, and every unconfirmed one owner appended (owner's Commit failed, or its
// Batch was abandoned: nothing vouches for them). Their bytes stay in their pack, unindexed (an
// orphan for Collect). When one of them is in the open segment, the segment is sealed, so that
// the same object appended again (a retry writes it anew) goes to another pack: a pack never
// holds two objects of one key. It returns how many it removed.
// It takes the indexer's gate exclusively: no Commit is between its pending pass and its
// confirmation, and no flush between its insert and the removal of what it inserted.
func (w *packWriter) dropManifests(gone []ref.Location, owner *Batch) int {
	gate := &w.s.ix.gate
	gate.Lock()
	defer gate.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pmu.Lock()
	bad := make(map[ref.Location]bool, len(gone))
	for _, l := range gone {
		bad[l] = true
	}
	drop := map[ref.Location]bool{}
	for changed := true; changed; {
		changed = false
		for k, m := range w.manifests {
			l := ref.Location{Object: k, Pack: m.pack}
			if drop[l] {
				continue
			}
			if owner != nil && m.owner == owner {
				drop[l], changed = true, true
				continue
			}
			for _, d := range m.deps {
				if bad[d] || drop[d] {
					drop[l], changed = true, true
					break
				}
			}
		}
	}
	seal := false
	for l := range drop {
		delete(w.manifests, l.Object)
		delete(w.pending, l.Object)
		if w.cur != nil && w.cur.id == l.Pack {
			seal = true
		}
	}
	w.pmu.Unlock()
	if seal {
		if err := w.sealLocked(); err != nil {
			// The segment stays open: a same-key object appended again lands beside the dropped
			// one, and the pack lists both; log it (readers find either copy).
			w.s.logger("payloadref: sealing after dropping stale manifests: %v", err)
		}
	}
	return len(drop)
}

// pendingSnapshot returns the objects appended and not yet indexed that may be indexed (every one
// but the unconfirmed manifests).
func (w *packWriter) pendingSnapshot() []packfile.EntryAt {
	w.pmu.RLock()
	defer w.pmu.RUnlock()
	out := make([]packfile.EntryAt, 0, len(w.pending))
	for k, e := range w.pending {
		if k.Manifest {
			if m, ok := w.manifests[k]; ok && m.owner != nil {
				continue
			}
		}
		out = append(out, e)
	}
	return out
}

// stillPending keeps the entries of es still pending in the same pack (the indexer's snapshot,
// under the gate: what dropManifests removed since is left out), in place: one map lookup per
// entry per flush, instead of a drop counter kept beside the pending set.
func (w *packWriter) stillPending(es []packfile.EntryAt) []packfile.EntryAt {
	w.pmu.RLock()
	defer w.pmu.RUnlock()
	out := es[:0]
	for _, e := range es {
		if p, ok := w.pending[e.Object]; ok && p.Pack == e.Pack {
			out = append(out, e)
		}
	}
	return out
}
