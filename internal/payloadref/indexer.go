// SPDX-License-Identifier: Apache-2.0

package payloadref

import (
	"context"
	"sync"
	"time"
)

// Background indexing: a Batch's new objects are durable once Commit returns (their staged pack
// is fsynced, and a restart re-reads the staged packs' records: packWriter.recover), so their
// index rows are not written on the request path. The indexer inserts them in one transaction
// per indexInterval, or as soon as indexMaxPending objects wait; until then they are found
// through packWriter.lookupPending. A pack is uploaded only once every object in it is indexed
// (the uploader flushes the indexer first), so Collect, which sweeps uploaded packs, never meets
// an object a batch acknowledged that the index does not list yet; the exception is a manifest
// whose batch had not committed when the pack was uploaded (unconfirmed, see Batch: indexed once
// a Commit confirms it), which Collect leaves alone for orphanAge after the upload.
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

// TouchWindow is how long a dedup hit may go without updating its object's last-referenced time
// in the index: a Batch touches a hit only when the writer has not touched (or indexed) it for
// TouchWindow, or when a Collect began since (see Batch). Collect keeps objects last referenced
// within opts.Grace plus TouchWindow before its mark began, so that the coarser touch never
// shortens the grace (see CollectOptions.Grace).
const TouchWindow = 10 * time.Minute

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
	gen, ts, err := s.idx.insert(ctx, es, s.now)
	if err != nil {
		ix.gate.Unlock()
		return err
	}
	full := s.idx.addFiltered(es)
	for _, e := range es {
		s.locs.Add(e.objKey, cachedLoc{pack: e.pack, touched: ts, gen: gen})
	}
	w.indexed(es)
	ix.gate.Unlock()
	if full {
		return s.idx.buildFilter(ctx)
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
	deps  []location
}

// commitView is a Commit's one pass over the pending set (under its lock, not the append lock):
// it appends to held the references of b to check in the index (those not found pending, or
// found pending and no longer: indexed or dropped since), plus every location that an
// unconfirmed pending manifest b references names, directly or through other unconfirmed pending
// manifests of other Batches (b's own name only what b references: they are b's references
// already); conf gets those unconfirmed pending manifests (b's own and the others), which the
// Commit confirms if it succeeds. The caller holds the indexer's gate (shared) from this pass
// until it confirmed: nothing leaves the pending set meanwhile.
func (w *packWriter) commitView(b *Batch, held, conf []location) ([]location, []location) {
	w.pmu.RLock()
	defer w.pmu.RUnlock()
	var walk []location
	// pendingNow tells whether l is pending (same pack); an unconfirmed manifest goes to conf
	// and, when another Batch appended it (its Commit has not succeeded, and may fail), what it
	// names to walk: checked as if b referenced it.
	pendingNow := func(l location) bool {
		if e, ok := w.pending[l.objKey]; !ok || e.pack != l.pack {
			return false
		}
		if m, ok := w.manifests[l.objKey]; ok && l.manifest && m.owner != nil {
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
	seen := map[location]bool{}
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
func (w *packWriter) confirm(conf []location) {
	if len(conf) == 0 {
		return
	}
	w.pmu.Lock()
	defer w.pmu.Unlock()
	for _, l := range conf {
		if m, ok := w.manifests[l.objKey]; ok && m.pack == l.pack && m.owner != nil {
			m.owner = nil
			w.manifests[l.objKey] = m
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
func (w *packWriter) dropManifests(gone []location, owner *Batch) int {
	gate := &w.s.ix.gate
	gate.Lock()
	defer gate.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pmu.Lock()
	bad := make(map[location]bool, len(gone))
	for _, l := range gone {
		bad[l] = true
	}
	drop := map[location]bool{}
	for changed := true; changed; {
		changed = false
		for k, m := range w.manifests {
			l := location{k, m.pack}
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
		delete(w.manifests, l.objKey)
		delete(w.pending, l.objKey)
		if w.cur != nil && w.cur.id == l.pack {
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
func (w *packWriter) pendingSnapshot() []packEntryAt {
	w.pmu.RLock()
	defer w.pmu.RUnlock()
	out := make([]packEntryAt, 0, len(w.pending))
	for k, e := range w.pending {
		if k.manifest {
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
func (w *packWriter) stillPending(es []packEntryAt) []packEntryAt {
	w.pmu.RLock()
	defer w.pmu.RUnlock()
	out := es[:0]
	for _, e := range es {
		if p, ok := w.pending[e.objKey]; ok && p.pack == e.pack {
			out = append(out, e)
		}
	}
	return out
}
