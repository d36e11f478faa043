// SPDX-License-Identifier: Apache-2.0

package collect

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/runagain/runagain/internal/payloadref/digestindex"
	"github.com/runagain/runagain/internal/payloadref/packfile"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

// packSweep is one pack under the store's prefix as Collect sees it: its trailer, and the
// objects Collect decided to remove from it.
type packSweep struct {
	id      string
	obj     *blob.ListObject
	entries []packfile.Entry
	size    map[ref.Object]int64 // e.size() of each entry
	total   int64
	drop    []ref.Object
}

// dead returns the objects of p no marked location names.
func (p *packSweep) dead(marked map[ref.Location]struct{}) []ref.Object {
	var dead []ref.Object
	for _, e := range p.entries {
		if _, ok := marked[ref.Location{Object: e.Object, Pack: p.id}]; !ok {
			dead = append(dead, e.Object)
		}
	}
	return dead
}

// singleSweep is one single object (the layout before packs) no live reference named when it
// was listed.
type singleSweep struct {
	key  string
	l    ref.Location
	size int64
	mod  time.Time
	drop bool
}

// stagedManifests returns the manifests in the staging area's pack files (sealed or the open
// segment, as far as its records are written): a writer finds them (pending, or indexed before
// their pack is uploaded) and deduplicates against them, so what they name must stay although
// Collect does not sweep their packs.
func (s *collector) stagedManifests() ([]ref.Location, error) {
	if s.Staging == "" {
		return nil, nil
	}
	names, err := packfile.DirNames(s.Staging)
	if err != nil && !errorsIsNotExist(err) {
		return nil, err
	}
	var out []ref.Location
	for _, name := range names {
		id, ok := strings.CutSuffix(name, ref.PackSuffix)
		if !ok || !ref.ValidPackID(id) {
			continue
		}
		f, err := os.Open(filepath.Join(s.Staging, name))
		if errorsIsNotExist(err) {
			continue // uploaded meanwhile: listed with the bucket's packs
		}
		if err != nil {
			return nil, err
		}
		var entries []packfile.Entry
		if st, err := f.Stat(); err == nil {
			if entries, err = packfile.ReadLocalTrailer(f, st.Size()); err != nil {
				entries, _ = packfile.ScanRecords(f, st.Size())
			}
		}
		_ = f.Close()
		for _, e := range entries {
			if e.Manifest {
				out = append(out, ref.Location{Object: e.Object, Pack: id})
			}
		}
	}
	return out, nil
}

// listPacks reads the trailer of every pack under this store's prefix that holds an object the
// mark did not reach.
func (s *collector) listPacks(ctx context.Context, marked map[ref.Location]struct{}, st *Stats) ([]*packSweep, error) {
	it := s.Bucket.List(&blob.ListOptions{Prefix: s.Prefix + ref.PackDir})
	restarts := 0
	var out []*packSweep
	seen := map[string]bool{}
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if gcerrors.Code(err) == gcerrors.NotFound && restarts < 3 {
			// An entry vanished while listed (file:// lists an upload's temporary file, renamed
			// a moment later): list again.
			restarts++
			it = s.Bucket.List(&blob.ListOptions{Prefix: s.Prefix + ref.PackDir})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("payloadref: listing packs: %w", err)
		}
		id, ok := strings.CutSuffix(strings.TrimPrefix(obj.Key, s.Prefix+ref.PackDir), ref.PackSuffix)
		if !ok || !ref.ValidPackID(id) || seen[id] {
			continue
		}
		seen[id] = true
		st.PacksScanned++
		key := s.Prefix + ref.PackKey(id)
		entries, err := packfile.ReadTrailer(ctx, s.Bucket, key)
		if gcerrors.Code(err) == gcerrors.NotFound {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("payloadref: pack %s: %w", key, err)
		}
		p := &packSweep{id: id, obj: obj, entries: entries, size: make(map[ref.Object]int64, len(entries))}
		for _, e := range entries {
			p.total += e.Size()
			p.size[e.Object] = e.Size()
		}
		if len(p.dead(marked)) > 0 {
			out = append(out, p)
		}
	}
}

// listSingles lists the single objects no marked location names.
func (s *collector) listSingles(ctx context.Context, marked map[ref.Location]struct{}) ([]*singleSweep, error) {
	it := s.Bucket.List(&blob.ListOptions{Prefix: s.Prefix + ref.KeyDir})
	var out []*singleSweep
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("payloadref: listing objects: %w", err)
		}
		sum, manifest, err := ref.ParseKey(obj.Key)
		if err != nil {
			continue
		}
		l := ref.Location{Object: ref.Object{Sum: sum, Manifest: manifest}, Pack: ""}
		if _, ok := marked[l]; !ok {
			out = append(out, &singleSweep{key: obj.Key, l: l, size: obj.Size, mod: obj.ModTime})
		}
	}
}

// maxDecideAttempts bounds how often decide plans again because a writer referenced a manifest
// between the plan and the decision; past it, this Collect removes nothing.
const maxDecideAttempts = 4

// decide chooses what Collect removes, so that no object an indexed or kept manifest names goes
// (a manifest is only as good as what it names: a writer deduplicating against it references
// all of it):
//
//   - A dead manifest that stays (referenced within its cutoff, in a pack that is not rewritten,
//     or not droppable yet as an unindexed object) is a root: what it names is marked as live,
//     and the plan is made again until no such manifest is left unmarked.
//   - The decision is then taken again in one transaction of the index (under its write lock, so
//     no writer's touch interleaves), which deletes the rows of the objects to remove. If a
//     writer referenced a dead manifest between the plan and the transaction, the transaction is
//     rolled back and the plan made again (at most maxDecideAttempts times, then nothing is
//     removed); a writer that references one of the removed objects afterwards finds no row and
//     gets ErrStale at Commit.
func (s *collector) decide(ctx context.Context, packs []*packSweep, singles []*singleSweep, marked map[ref.Location]struct{}, cut cutoffs, opts Options, st *Stats) error {
	before := len(marked)
	recent := map[ref.Location]bool{}
	promoted := map[ref.Location]bool{}
	for attempt := 0; attempt < maxDecideAttempts; attempt++ {
		for {
			var q digestindex.RowReader
			if s.Index != nil {
				q = s.Index.Reader()
			}
			roots, err := s.plan(ctx, q, nil, packs, singles, marked, cut, opts, recent)
			if err != nil {
				return err
			}
			if len(roots) == 0 {
				break
			}
			for _, l := range roots {
				promoted[l] = true
			}
			if err := s.markFrom(ctx, roots, marked, st); err != nil {
				return err
			}
		}
		if s.Index == nil {
			break
		}
		done, err := s.decideTx(ctx, packs, singles, marked, cut, opts, recent)
		if err != nil {
			return fmt.Errorf("payloadref: digest index: %w", err)
		}
		if done {
			break
		}
		if attempt == maxDecideAttempts-1 {
			s.Logf("payloadref: collect removed nothing: writers kept referencing dead manifests (%d attempts)", maxDecideAttempts)
			for _, p := range packs {
				p.drop = nil
			}
			for _, o := range singles {
				o.drop = false
			}
		}
	}
	for l := range recent {
		if _, ok := marked[l]; !ok || promoted[l] {
			st.KeptRecent++
		}
	}
	st.KeptChildren += len(marked) - before - len(promoted)
	return nil
}

// decideTx takes the plan again in one index transaction and deletes the rows of what it
// removes; false (rolled back): a dead manifest that stays is not marked yet.
func (s *collector) decideTx(ctx context.Context, packs []*packSweep, singles []*singleSweep, marked map[ref.Location]struct{}, cut cutoffs, opts Options, recent map[ref.Location]bool) (bool, error) {
	tx, err := s.Index.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback() }()
	roots, err := s.plan(ctx, tx, tx, packs, singles, marked, cut, opts, recent)
	if err != nil || len(roots) > 0 {
		return false, err
	}
	return true, tx.Commit()
}

// plan sets each pack's drop (and each single's) from the index as q reads it, and returns the
// dead manifests that stay and are not marked. With del, it deletes the rows of the indexed
// objects dropped.
func (s *collector) plan(ctx context.Context, q digestindex.RowReader, del *sql.Tx, packs []*packSweep, singles []*singleSweep, marked map[ref.Location]struct{}, cut cutoffs, opts Options, recent map[ref.Location]bool) ([]ref.Location, error) {
	var roots []ref.Location
	for _, p := range packs {
		p.drop = nil
		if q == nil {
			continue // without the index nothing in a pack is known to be unreferenced for long
		}
		dead := p.dead(marked)
		if len(dead) == 0 {
			continue
		}
		at := func(k ref.Object) time.Time { return cut.of(ref.Location{Object: k, Pack: p.id}) }
		kept, unindexed, n, err := digestindex.RefStates(ctx, q, p.id, dead, at)
		if err != nil {
			return nil, err
		}
		drop, dropBytes := s.droppable(p.id, p.obj, dead, p.size, cut, kept, unindexed)
		for k := range kept {
			recent[ref.Location{Object: k, Pack: p.id}] = true
		}
		whole := len(drop) == len(p.entries)
		if len(drop) > 0 && (whole || opts.Erase || float64(dropBytes) > opts.RewriteDeadFraction*float64(p.total)) {
			p.drop = drop
		}
		dropped := make(map[ref.Object]bool, len(p.drop))
		for _, k := range p.drop {
			dropped[k] = true
		}
		var indexed []ref.Object
		for _, k := range dead {
			switch {
			case dropped[k] && !unindexed[k]:
				indexed = append(indexed, k)
			case !dropped[k] && k.Manifest:
				roots = append(roots, ref.Location{Object: k, Pack: p.id})
			}
		}
		if del != nil {
			if err := digestindex.DeleteRows(ctx, del, n, indexed); err != nil {
				return nil, err
			}
		}
	}
	for _, o := range singles {
		o.drop = false
		if _, ok := marked[o.l]; ok {
			continue
		}
		if !o.mod.Before(cut.of(o.l)) {
			recent[o.l] = true
			if o.l.Manifest {
				roots = append(roots, o.l)
			}
			continue
		}
		o.drop = true
	}
	return roots, nil
}

// applyPack deletes p, or rewrites it without the objects decide dropped (their rows are gone).
func (s *collector) applyPack(ctx context.Context, p *packSweep, st *Stats) error {
	if len(p.drop) == 0 {
		return nil
	}
	key := s.Prefix + ref.PackKey(p.id)
	dropBytes := p.obj.Size // what the bucket no longer holds: the pack, or what its rewrite saved
	s.Forget(p.id, p.drop)
	if len(p.drop) == len(p.entries) {
		if err := s.Bucket.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return fmt.Errorf("payloadref: deleting %s: %w", key, err)
		}
		if s.Index != nil {
			if err := s.Index.Moved(ctx, p.id, p.entries, true, 0); err != nil {
				return err
			}
		}
		st.PacksDeleted++
	} else {
		n, err := s.rewritePack(ctx, p.id, key, p.drop)
		if err != nil {
			return err
		}
		dropBytes -= n
		st.PacksRewritten++
	}
	st.ObjectsDeleted += len(p.drop)
	st.BytesFreed += dropBytes
	return nil
}

// deleteSingles deletes the single objects decide dropped.
func (s *collector) deleteSingles(ctx context.Context, singles []*singleSweep, st *Stats) error {
	for _, o := range singles {
		if !o.drop {
			continue
		}
		if err := s.Bucket.Delete(ctx, o.key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return fmt.Errorf("payloadref: deleting %s: %w", o.key, err)
		}
		s.ForgetKey(o.key)
		st.ObjectsDeleted++
		st.BytesFreed += o.size
	}
	return nil
}
