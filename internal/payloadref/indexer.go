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
// an object a batch acknowledged that the index does not list yet.
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

// notPending appends to dst the references of refs except those a Put found pending (appended,
// not yet indexed) that still are (same object, same pack), and returns it: the pending set is
// read in one pass under one lock (Commit took the lock once per pending reference), not the
// append lock.
func (w *packWriter) notPending(refs map[location]batchRef, dst []location) []location {
	w.pmu.RLock()
	defer w.pmu.RUnlock()
	for l, r := range refs {
		if r.pending {
			if e, ok := w.pending[l.objKey]; ok && e.pack == l.pack {
				continue
			}
		}
		dst = append(dst, l)
	}
	return dst
}

// pendingSnapshot returns the objects appended and not yet indexed.
func (w *packWriter) pendingSnapshot() []packEntryAt {
	w.pmu.RLock()
	defer w.pmu.RUnlock()
	out := make([]packEntryAt, 0, len(w.pending))
	for _, e := range w.pending {
		out = append(out, e)
	}
	return out
}
