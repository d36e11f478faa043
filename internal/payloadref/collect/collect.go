// SPDX-License-Identifier: Apache-2.0

// Package collect is the garbage collection of a payloadref store (Run, through
// writer.Store.Collect): it marks every object the live references reach, manifests followed,
// then sweeps the bucket, deleting or rewriting packs and deleting single objects no live
// reference reaches, with the digest index's last-referenced times deciding what a writer may
// still be using. It works on a Target (bucket, prefix, index, staging area, and callbacks into
// the writer's caches) and imports packages ref, packfile and digestindex, never the writer.
package collect

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/runagain/runagain/internal/payloadref/digestindex"
	"github.com/runagain/runagain/internal/payloadref/packfile"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

// LiveRefs enumerates the payload reference URIs still referenced (the K_ref values of the hot
// tier's live rows and of pinned runs): it calls yield once per URI (duplicates allowed) and stops
// early when yield returns false. URIs of other buckets, and values that are not URIs, are ignored.
type LiveRefs func(yield func(uri string) bool) error

// DefaultRewriteDeadFraction is the dead fraction (by compressed bytes) above which Collect
// rewrites a pack that still holds live objects (restic's prune uses a similar threshold).
const DefaultRewriteDeadFraction = 0.5

// Options tunes Collect.
type Options struct {
	// RewriteDeadFraction: a pack whose dead objects make more than this fraction of its object
	// bytes is rewritten without them. 0 takes DefaultRewriteDeadFraction; 1 never rewrites.
	RewriteDeadFraction float64
	// Erase rewrites every pack holding any dead object, whatever its dead fraction, so that no
	// byte of an unreferenced object remains in the bucket (a data-subject erasure).
	Erase bool
	// Grace keeps objects (last referenced, or packs and single objects written) less than this
	// long before the mark began: values on their way from payload_offload to the hot tier (in
	// a sending queue) are referenced but not yet enumerable. A Grace above 0 is widened by
	// TouchWindow (writers touch a deduplicated object at most once per TouchWindow; see
	// Batch). 0: only what was referenced after the mark began is kept (for an erasure, which
	// must not wait).
	Grace time.Duration
	// Erased are the references of rows just erased (runagain delete): the objects they reach
	// are removed whatever Grace says, unless a live reference reaches them too (KeptShared).
	Erased LiveRefs
}

// Stats tells what Collect did. Objects are counted once per copy (an object in a pack,
// or a single object).
type Stats struct {
	// LiveRefs is how many live reference URIs named this store; LiveObjects how many objects
	// they reach (manifests followed).
	LiveRefs, LiveObjects int
	// PacksScanned, PacksDeleted, PacksRewritten count packs; ObjectsDeleted the objects (in
	// packs and single ones) removed; BytesFreed the bytes the bucket no longer holds (deleted
	// packs and single objects, and what rewriting a pack saved).
	PacksScanned, PacksDeleted, PacksRewritten int
	ObjectsDeleted                             int
	BytesFreed                                 int64
	// KeptRecent is how many unreferenced objects were kept because they were referenced (or
	// written) after the mark began, or within Grace before it.
	KeptRecent int
	// KeptChildren is how many objects no live reference reaches were kept because a manifest
	// that stays names them (one kept as recent, or left in a pack that is not rewritten): a
	// writer deduplicating against a manifest references everything it names.
	KeptChildren int
	// Staged is how many packs were still in the staging area (not yet uploaded, not swept).
	Staged int
	// KeptShared is how many objects reached by opts.Erased stay because a live reference
	// reaches them too (the same content sent by another session is stored once).
	KeptShared int
	// Missing lists live references whose object could not be read (logged, never deleted for it).
	Missing int
}

// Target is what Collect works on: a store's bucket and key prefix, its digest index (nil in the
// single-object layout) and staging area, and the writer's in-memory caches to forget removed
// objects in. writer.Store.Collect fills it in.
type Target struct {
	Bucket *blob.Bucket
	// Prefix is the store's key prefix (the bucket URL's prefix parameter).
	Prefix string
	// URI returns the reference URI of a full key (prefix included) in the store's bucket.
	URI func(key string) string
	// Index is the digest index (pack layout); nil for a single-object store.
	Index *digestindex.Index
	// Staging is the staging area (Dir/StagingDir); "" without a data directory.
	Staging string
	// Dec decodes objects and pack blocks; Enc compresses the blocks of rewritten packs, of
	// BlockSize original bytes.
	Dec       *zstd.Decoder
	Enc       *zstd.Encoder
	BlockSize int
	// Now is the clock of last-referenced times; Logf receives what Collect gives up on.
	Now  func() time.Time
	Logf func(format string, args ...any)
	// Forget drops removed objects of pack from the writer's location cache; ForgetKey a removed
	// single object from its set of known keys.
	Forget    func(pack string, keys []ref.Object)
	ForgetKey func(key string)
}

// collector is one Run.
type collector struct{ Target }

// Run deletes the payload objects no live reference reaches. It marks every object the live
// references reach (following manifests), then sweeps the bucket: packs holding no live object
// are deleted, packs whose dead fraction is above opts.RewriteDeadFraction (or, with opts.Erase,
// holding any dead object) are rewritten under the same key without the dead objects, and single
// objects (the layout before packs) no live reference names are deleted; the digest index rows of
// removed objects go in the same step. An object referenced after the mark began (a dedup hit
// updates its last-referenced time in the index) or written since is never deleted: Collect
// removes an index row only if it was not referenced since (one SQLite transaction), and a
// writer whose cached location was removed meanwhile gets ErrStale at Commit and writes the
// object again.
//
// A manifest that stays is a root: what it names is never removed while a writer can find it.
// That covers a dead manifest kept as recent (KeptRecent), one left in a pack that is not
// rewritten, one not droppable yet, and every manifest still in the staging area (see decide
// and stagedManifests; Stats.KeptChildren counts what they kept).
//
// Collect needs the pack layout's index (NewStore with Dir; CollectOnly suffices) for the
// last-referenced times; on a single-object store only single objects older than Grace are swept.
// Packs still staged (not uploaded) are not swept: call Flush in the writing process first when
// they matter (Stats.Staged counts them). With several writers on one bucket, give each its
// own prefix: Collect sweeps every pack under this store's prefix.
//
// Run is Collect's work on t; the caller makes sure only one Collect of t's store runs at a time
// in the process (writer.Store.Collect holds its lock).
func Run(ctx context.Context, t Target, live LiveRefs, opts Options) (Stats, error) {
	s := &collector{t}
	if opts.RewriteDeadFraction <= 0 {
		opts.RewriteDeadFraction = DefaultRewriteDeadFraction
	}
	var st Stats
	// The collect generation moves as the mark starts: every writer Commit after it touches the
	// objects it references (see Batch).
	markStart := s.Now()
	if s.Index != nil {
		var err error
		if markStart, err = s.Index.BeginCollect(ctx, s.Now); err != nil {
			return st, fmt.Errorf("payloadref: digest index: %w", err)
		}
	}
	cutoff := markStart.Add(-opts.Grace)
	if opts.Grace > 0 {
		cutoff = cutoff.Add(-digestindex.TouchWindow)
	}
	marked, err := s.mark(ctx, live, &st)
	if err != nil {
		return st, err
	}
	st.LiveObjects = len(marked)
	cut := cutoffs{grace: cutoff, now: markStart}
	if opts.Erased != nil {
		var est Stats
		if cut.erased, err = s.mark(ctx, opts.Erased, &est); err != nil {
			return st, err
		}
		for l := range cut.erased {
			if _, ok := marked[l]; ok {
				st.KeptShared++
			}
		}
	}
	if s.Staging != "" {
		n, err := packfile.StagedPacks(s.Staging)
		if err != nil && !errorsIsNotExist(err) {
			return st, err
		}
		st.Staged = n
	}
	// Manifests still staged are roots: writers deduplicate against them.
	staged, err := s.stagedManifests()
	if err != nil {
		return st, err
	}
	roots := map[ref.Location]bool{}
	for _, l := range staged {
		if _, ok := marked[l]; !ok {
			roots[l] = true
		}
	}
	before := len(marked)
	if err := s.markFrom(ctx, staged, marked, &st); err != nil {
		return st, err
	}
	st.KeptChildren += len(marked) - before - len(roots)
	packs, err := s.listPacks(ctx, marked, &st)
	if err != nil {
		return st, err
	}
	singles, err := s.listSingles(ctx, marked)
	if err != nil {
		return st, err
	}
	if err := s.decide(ctx, packs, singles, marked, cut, opts, &st); err != nil {
		return st, err
	}
	for _, p := range packs {
		if err := s.applyPack(ctx, p, &st); err != nil {
			return st, err
		}
	}
	return st, s.deleteSingles(ctx, singles, &st)
}

// cutoffs: an unreferenced object last referenced (or written) before its cutoff may go: now
// (the mark's start) for the objects of erased rows, now - Grace for the others.
type cutoffs struct {
	grace, now time.Time
	erased     map[ref.Location]struct{}
}

func (c cutoffs) of(l ref.Location) time.Time {
	if _, ok := c.erased[l]; ok {
		return c.now
	}
	return c.grace
}

// mark returns every object location (pack id, or "" for a single object) the live references
// of this store reach.
func (s *collector) mark(ctx context.Context, live LiveRefs, st *Stats) (map[ref.Location]struct{}, error) {
	ownBucket, ownPrefix, err := s.ownPrefix()
	if err != nil {
		return nil, err
	}
	var roots []ref.Location
	err = live(func(uri string) bool {
		if ctx.Err() != nil {
			return false
		}
		bu, key, err := ref.SplitURI(uri)
		if err != nil || bu != ownBucket {
			return true
		}
		u, _ := url.Parse(uri)
		if u != nil && u.Fragment != "" {
			prefix, id, k, ok, err := ref.ParsePackRef(key, u.Fragment)
			if ok && err == nil && prefix == ownPrefix {
				roots = append(roots, ref.Location{Object: k, Pack: id})
				st.LiveRefs++
			}
			return true
		}
		sum, manifest, err := ref.ParseKey(key)
		if err == nil && ref.KeyPrefixOf(key) == ownPrefix {
			roots = append(roots, ref.Location{Object: ref.Object{Sum: sum, Manifest: manifest}, Pack: ""})
			st.LiveRefs++
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("payloadref: live references: %w", err)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	marked := map[ref.Location]struct{}{}
	return marked, s.markFrom(ctx, roots, marked, st)
}

// ownPrefix returns the bucket URL and the key prefix of this store's references.
func (s *collector) ownPrefix() (bucketURL, prefix string, err error) {
	ownBucket, ownKey, err := ref.SplitURI(s.URI(s.Prefix + ref.PackKey("0")))
	if err != nil {
		return "", "", err
	}
	return ownBucket, strings.TrimSuffix(ownKey, ref.PackKey("0")), nil
}

// markFrom adds to marked every location roots reach, manifests followed (depth first; every
// location is read once).
func (s *collector) markFrom(ctx context.Context, roots []ref.Location, marked map[ref.Location]struct{}, st *Stats) error {
	ownBucket, ownPrefix, err := s.ownPrefix()
	if err != nil {
		return err
	}
	var staging []string
	if s.Staging != "" {
		staging = append(staging, s.Staging)
	}
	pr := packfile.NewReader(staging, s.Dec)
	sc := packfile.NewScope()
	stack := roots
	for len(stack) > 0 {
		l := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, ok := marked[l]; ok {
			continue
		}
		marked[l] = struct{}{}
		if !l.Manifest {
			continue
		}
		doc, err := s.readRaw(ctx, pr, sc, ownBucket, ownPrefix, l)
		if gcerrors.Code(err) == gcerrors.NotFound || errors.Is(err, packfile.ErrNotInPack) {
			// A dangling reference (its manifest is gone): nothing it names can be protected or
			// broken any further.
			st.Missing++
			continue
		}
		if err != nil {
			// A live manifest that cannot be read: its children cannot be marked, so nothing
			// it might name may be deleted. Stop rather than delete live data.
			return fmt.Errorf("payloadref: marking %s: %w", l.Name(), err)
		}
		m, err := ref.DecodeManifest(doc)
		if err != nil {
			return fmt.Errorf("payloadref: marking %s: %w", l.Name(), err)
		}
		for _, p := range m.Parts {
			if p.Ref == "" {
				continue
			}
			sum, err := ref.HexSum(p.Ref)
			if err != nil {
				return fmt.Errorf("payloadref: marking %s: %w", l.Name(), err)
			}
			stack = append(stack, ref.Location{Object: ref.Object{Sum: sum, Manifest: p.M}, Pack: p.P})
		}
	}
	return nil
}

// readRaw returns the decompressed content of one object (a manifest document).
func (s *collector) readRaw(ctx context.Context, pr *packfile.Reader, sc *packfile.Scope, bucketURL, prefix string, l ref.Location) ([]byte, error) {
	if l.Pack != "" {
		return pr.Read(ctx, s.Bucket, bucketURL, prefix, l.Pack, l.Object, sc, func([]byte) error { return nil })
	}
	z, err := s.Bucket.ReadAll(ctx, s.Prefix+l.Name())
	if err != nil {
		return nil, err
	}
	return s.Dec.DecodeAll(z, nil)
}

// droppable returns the dead objects of pack id that may be removed, and their bytes (e.size()),
// from what the index said of them: not kept (referenced since their cutoff), and, when the
// index does not list them (unindexed), only in a pack uploaded well before the cutoff. Without
// an index nothing is droppable.
func (s *collector) droppable(id string, obj *blob.ListObject, dead []ref.Object, size map[ref.Object]int64, cutoff cutoffs, kept, unindexed map[ref.Object]bool) ([]ref.Object, int64) {
	var drop []ref.Object
	var n int64
	for _, k := range dead {
		// An object the index does not list is either an orphan (its batch never committed) or
		// one whose batch has not committed yet (its pack was sealed and uploaded first): only
		// in a pack uploaded well before the cutoff can it be taken for an orphan.
		if s.Index == nil || kept[k] || unindexed[k] && !obj.ModTime.Before(cutoff.of(ref.Location{Object: k, Pack: id}).Add(-OrphanAge)) {
			continue
		}
		drop = append(drop, k)
		n += size[k]
	}
	return drop, n
}

// rewritePack writes the pack at key again, under the same key, without the objects in drop, in
// the v2 layout (blocks compressed anew: no byte of a dropped object remains) whatever the layout
// it had.
func (s *collector) rewritePack(ctx context.Context, id, key string, drop []ref.Object) (int64, error) {
	old, err := s.Bucket.ReadAll(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("payloadref: reading %s: %w", key, err)
	}
	skip := map[ref.Object]bool{}
	for _, k := range drop {
		skip[k] = true
	}
	data, _, err := packfile.Repack(old, skip, s.Enc, s.Dec, s.BlockSize)
	if err != nil {
		return 0, fmt.Errorf("payloadref: %s: %w", key, err)
	}
	if err := packfile.Write(ctx, s.Bucket, key, data); err != nil {
		return 0, fmt.Errorf("payloadref: rewriting %s: %w", key, err)
	}
	if s.Index != nil {
		if err := s.Index.Moved(ctx, id, nil, false, int64(len(data))); err != nil {
			return 0, err
		}
	}
	return int64(len(data)), nil
}

// OrphanAge: objects no index row lists are swept only from packs uploaded at least this long
// before the cutoff (longer than any batch takes between its first append and its commit: the
// processor's storage timeout is 10 s by default).
const OrphanAge = 5 * time.Minute

func errorsIsNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }
