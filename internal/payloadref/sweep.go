// SPDX-License-Identifier: Apache-2.0

package payloadref

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
)

// packSweep is one pack under the store's prefix as Collect sees it: its trailer, and the
// objects Collect decided to remove from it.
type packSweep struct {
	id      string
	obj     *blob.ListObject
	entries []packEntry
	size    map[objKey]int64 // e.size() of each entry
	total   int64
	drop    []objKey
}

// dead returns the objects of p no marked location names.
func (p *packSweep) dead(marked map[location]struct{}) []objKey {
	var dead []objKey
	for _, e := range p.entries {
		if _, ok := marked[location{e.objKey, p.id}]; !ok {
			dead = append(dead, e.objKey)
		}
	}
	return dead
}

// singleSweep is one single object (the layout before packs) no live reference named when it
// was listed.
type singleSweep struct {
	key  string
	l    location
	size int64
	mod  time.Time
	drop bool
}

// stagedManifests returns the manifests in the staging area's pack files (sealed or the open
// segment, as far as its records are written): a writer finds them (pending, or indexed before
// their pack is uploaded) and deduplicates against them, so what they name must stay although
// Collect does not sweep their packs.
func (s *Store) stagedManifests() ([]location, error) {
	if s.staging == "" {
		return nil, nil
	}
	names, err := readDirNames(s.staging)
	if err != nil && !errorsIsNotExist(err) {
		return nil, err
	}
	var out []location
	for _, name := range names {
		id, ok := strings.CutSuffix(name, PackSuffix)
		if !ok || !validPackID(id) {
			continue
		}
		f, err := os.Open(filepath.Join(s.staging, name))
		if errorsIsNotExist(err) {
			continue // uploaded meanwhile: listed with the bucket's packs
		}
		if err != nil {
			return nil, err
		}
		var entries []packEntry
		if st, err := f.Stat(); err == nil {
			if entries, err = readLocalTrailer(f, st.Size()); err != nil {
				entries, _ = scanRecords(f, st.Size())
			}
		}
		_ = f.Close()
		for _, e := range entries {
			if e.manifest {
				out = append(out, location{e.objKey, id})
			}
		}
	}
	return out, nil
}

// listPacks reads the trailer of every pack under this store's prefix that holds an object the
// mark did not reach.
func (s *Store) listPacks(ctx context.Context, marked map[location]struct{}, st *CollectStats) ([]*packSweep, error) {
	it := s.bucket.List(&blob.ListOptions{Prefix: s.prefix + PackDir})
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
			it = s.bucket.List(&blob.ListOptions{Prefix: s.prefix + PackDir})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("payloadref: listing packs: %w", err)
		}
		id, ok := strings.CutSuffix(strings.TrimPrefix(obj.Key, s.prefix+PackDir), PackSuffix)
		if !ok || !validPackID(id) || seen[id] {
			continue
		}
		seen[id] = true
		st.PacksScanned++
		key := s.prefix + packKey(id)
		entries, err := readTrailer(ctx, s.bucket, key)
		if gcerrors.Code(err) == gcerrors.NotFound {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("payloadref: pack %s: %w", key, err)
		}
		p := &packSweep{id: id, obj: obj, entries: entries, size: make(map[objKey]int64, len(entries))}
		for _, e := range entries {
			p.total += e.size()
			p.size[e.objKey] = e.size()
		}
		if len(p.dead(marked)) > 0 {
			out = append(out, p)
		}
	}
}

// listSingles lists the single objects no marked location names.
func (s *Store) listSingles(ctx context.Context, marked map[location]struct{}) ([]*singleSweep, error) {
	it := s.bucket.List(&blob.ListOptions{Prefix: s.prefix + KeyDir})
	var out []*singleSweep
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("payloadref: listing objects: %w", err)
		}
		sum, manifest, err := ParseKey(obj.Key)
		if err != nil {
			continue
		}
		l := location{objKey{sum, manifest}, ""}
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
func (s *Store) decide(ctx context.Context, packs []*packSweep, singles []*singleSweep, marked map[location]struct{}, cut cutoffs, opts CollectOptions, st *CollectStats) error {
	before := len(marked)
	recent := map[location]bool{}
	promoted := map[location]bool{}
	for attempt := 0; attempt < maxDecideAttempts; attempt++ {
		for {
			var q rowReader
			if s.idx != nil {
				q = s.idx.db
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
		if s.idx == nil {
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
			s.logger("payloadref: collect removed nothing: writers kept referencing dead manifests (%d attempts)", maxDecideAttempts)
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
func (s *Store) decideTx(ctx context.Context, packs []*packSweep, singles []*singleSweep, marked map[location]struct{}, cut cutoffs, opts CollectOptions, recent map[location]bool) (bool, error) {
	tx, err := s.idx.db.BeginTx(ctx, nil)
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
func (s *Store) plan(ctx context.Context, q rowReader, del *sql.Tx, packs []*packSweep, singles []*singleSweep, marked map[location]struct{}, cut cutoffs, opts CollectOptions, recent map[location]bool) ([]location, error) {
	var roots []location
	for _, p := range packs {
		p.drop = nil
		if q == nil {
			continue // without the index nothing in a pack is known to be unreferenced for long
		}
		dead := p.dead(marked)
		if len(dead) == 0 {
			continue
		}
		at := func(k objKey) time.Time { return cut.of(location{k, p.id}) }
		kept, unindexed, n, err := refStates(ctx, q, p.id, dead, at)
		if err != nil {
			return nil, err
		}
		drop, dropBytes := s.droppable(p.id, p.obj, dead, p.size, cut, kept, unindexed)
		for k := range kept {
			recent[location{k, p.id}] = true
		}
		whole := len(drop) == len(p.entries)
		if len(drop) > 0 && (whole || opts.Erase || float64(dropBytes) > opts.RewriteDeadFraction*float64(p.total)) {
			p.drop = drop
		}
		dropped := make(map[objKey]bool, len(p.drop))
		for _, k := range p.drop {
			dropped[k] = true
		}
		var indexed []objKey
		for _, k := range dead {
			switch {
			case dropped[k] && !unindexed[k]:
				indexed = append(indexed, k)
			case !dropped[k] && k.manifest:
				roots = append(roots, location{k, p.id})
			}
		}
		if del != nil {
			if err := deleteRows(ctx, del, n, indexed); err != nil {
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
			if o.l.manifest {
				roots = append(roots, o.l)
			}
			continue
		}
		o.drop = true
	}
	return roots, nil
}

// applyPack deletes p, or rewrites it without the objects decide dropped (their rows are gone).
func (s *Store) applyPack(ctx context.Context, p *packSweep, st *CollectStats) error {
	if len(p.drop) == 0 {
		return nil
	}
	key := s.prefix + packKey(p.id)
	dropBytes := p.obj.Size // what the bucket no longer holds: the pack, or what its rewrite saved
	s.locsForget(p.id, p.drop)
	if len(p.drop) == len(p.entries) {
		if err := s.bucket.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return fmt.Errorf("payloadref: deleting %s: %w", key, err)
		}
		if s.idx != nil {
			if err := s.idx.moved(ctx, p.id, p.entries, true, 0); err != nil {
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
func (s *Store) deleteSingles(ctx context.Context, singles []*singleSweep, st *CollectStats) error {
	for _, o := range singles {
		if !o.drop {
			continue
		}
		if err := s.bucket.Delete(ctx, o.key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return fmt.Errorf("payloadref: deleting %s: %w", o.key, err)
		}
		s.known.Remove(o.key)
		st.ObjectsDeleted++
		st.BytesFreed += o.size
	}
	return nil
}
