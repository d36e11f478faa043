// SPDX-License-Identifier: Apache-2.0

// Package writer is the write path of the payloadref layout: Store (NewStore) and Batch, which
// store values as single objects or, with a data directory, in packs; manifest planning (splitting
// JSON values at element boundaries, grouping, and deltas against a stream's previous value); the
// staging segment (append, group-commit fsync, seal, crash recovery) and the uploader; the
// background indexer that feeds the digest index, and the pending-manifest protocol that keeps
// Commit correct against a concurrent Collect (see Batch). Store.Collect runs package collect on
// the store. It imports packages ref, packfile, digestindex and collect.
package writer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/klauspost/compress/zstd"
	"go.uber.org/zap"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/runagain/runagain/internal/payloadref/digestindex"
	"github.com/runagain/runagain/internal/payloadref/packfile"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

// Pack defaults. A pack is sealed by size (issue 17's target: at most one PUT-class request per
// 8 MiB of payload bytes on S3), or after DefaultPackMaxAge for a slow trickle.
const (
	DefaultPackMaxSize   = 16 << 20
	DefaultPackMaxAge    = 60 * time.Second
	DefaultUploadTimeout = 2 * time.Minute
	// DefaultMaxPendingObjects: see StoreOptions.MaxPendingObjects.
	DefaultMaxPendingObjects = 1 << 18
)

// StoreOptions tunes a Store. Zero values take the defaults.
type StoreOptions struct {
	// Dir is the data directory of the pack layout: the staging area (Dir/staging: the open
	// segment and sealed packs not yet uploaded) and the digest index (Dir/payload-index.db).
	// Empty: the layout before packs, one object per digest (kept for stores without a local
	// directory; every reference of either layout resolves).
	Dir string
	// PackMaxSize: the open segment is sealed and uploaded before the pack as uploaded
	// (compressed blocks, trailer and footer) could reach this many bytes. The staging file
	// holding the same objects raw is larger (by the compression ratio). Default 16 MiB: below
	// the AWS transfer manager's 16 MiB multipart threshold, so one PutObject per pack on S3.
	PackMaxSize int64
	// PackMaxAge: the open segment is sealed and uploaded this long after its first object, so a
	// reader on another machine sees an object at most about this late (the CLI on the same
	// machine reads staged packs at once). Default 60 s.
	PackMaxAge time.Duration
	// PackBlockSize is the size before compression of the zstd blocks an uploaded pack is made
	// of: larger compresses better, smaller decodes less to read one object. Default 256 KiB.
	PackBlockSize int
	// PackLevel is the zstd level of pack blocks. Default packfile.DefaultLevel (SpeedFastest: over
	// 256 KiB blocks, the bytes SpeedDefault stored over 128 KiB blocks, in about 0.55 of the CPU).
	PackLevel zstd.EncoderLevel
	// UploadTimeout bounds one upload attempt of one pack. Default 2 min.
	UploadTimeout time.Duration
	// Logger receives upload retries and recoveries. Default: none.
	Logger *zap.Logger
	// Now is the clock of last-referenced times (tests). Default time.Now.
	Now func() time.Time
	// CollectOnly opens the index and the bucket without taking the staging area: Put fails,
	// Collect works (the CLI, while the collector writes).
	CollectOnly bool

	// KnownObjects is how many object locations are cached in memory in front of the digest
	// index (pack layout), or how many object keys known to exist are remembered (single-object
	// layout). Default 100000 (about 100 bytes each).
	KnownObjects int
	// ChunkMin is the smallest element (in bytes) of a split JSON value stored as its own object;
	// smaller elements stay literal in the manifest. Default 256.
	ChunkMin int
	// Fanout is the largest number of parts in one manifest before parts are grouped into
	// sub-manifests. Default 64.
	Fanout int
	// Level is the zstd level of single objects (the layout without Dir). Default
	// zstd.SpeedDefault. Pack blocks take PackLevel.
	Level zstd.EncoderLevel
	// MaxPendingObjects (pack layout) bounds the objects appended but not yet in the digest
	// index (indexed in the background every 5 s or 32,768 objects; found through memory until then,
	// about 150 bytes each): while that many wait (the index cannot be written), Put refuses new
	// objects with ErrIndexBacklog. Default 262144 (about 40 MB; some 20 s of make bench's
	// traffic); negative: no bound.
	MaxPendingObjects int
	// ExistsCheckMin (single-object layout): values at least this long (bytes, uncompressed) are
	// checked for existence before they are written; smaller ones are written directly with an
	// if-not-exists precondition (one request instead of two; the store refuses a duplicate).
	// Default 64 KiB; negative checks every object first.
	ExistsCheckMin int
}

// Store writes values to a bucket in the payloadref layout. It is safe for concurrent use.
type Store struct {
	uris      ref.ObjectURIs // the bucket URL, parsed once
	prefix    string         // key prefix (the URL's prefix parameter)
	bucket    *blob.Bucket
	closeFn   func() error
	known     *lru.Cache[string, struct{}]      // single-object layout
	locs      *lru.Cache[ref.Object, cachedLoc] // pack layout: object -> pack id, in front of idx
	plans     *planMemos                        // pack layout: the last plan of each stream
	enc       *zstd.Encoder                     // single objects (one frame each)
	benc      *zstd.Encoder                     // pack blocks
	dec       *zstd.Decoder
	opts      StoreOptions
	index     *digestindex.Index // pack layout: the open index (closed by Close, passed to Collect)
	idx       digestIndex        // pack layout: index, as the write path calls it
	pw        *packWriter        // pack layout, nil with CollectOnly
	ix        *indexer           // pack layout, nil with CollectOnly
	staging   string
	collectMu sync.Mutex // one Collect at a time in this process
}

// NewStore opens the bucket at bucketURL (see OpenBucket) for writing. With opts.Dir it uses the
// pack layout: it opens the digest index, locks the staging area (ErrStagingLocked when another
// process holds it), indexes and queues for upload what a previous process left staged.
func NewStore(ctx context.Context, bucketURL string, opts StoreOptions) (*Store, error) {
	if opts.KnownObjects <= 0 {
		opts.KnownObjects = 100000
	}
	if opts.ChunkMin <= 0 {
		opts.ChunkMin = 256
	}
	if opts.Fanout < 4 {
		opts.Fanout = 64
	}
	if opts.ExistsCheckMin == 0 {
		opts.ExistsCheckMin = 64 << 10
	}
	if opts.MaxPendingObjects == 0 {
		opts.MaxPendingObjects = DefaultMaxPendingObjects
	}
	if opts.Level == 0 {
		opts.Level = zstd.SpeedDefault
	}
	if opts.PackMaxSize <= 0 {
		opts.PackMaxSize = DefaultPackMaxSize
	}
	if opts.PackMaxAge <= 0 {
		opts.PackMaxAge = DefaultPackMaxAge
	}
	if opts.PackLevel == 0 {
		opts.PackLevel = packfile.DefaultLevel
	}
	if opts.PackBlockSize <= 0 {
		opts.PackBlockSize = packfile.DefaultBlockSize
	}
	if opts.UploadTimeout <= 0 {
		opts.UploadTimeout = DefaultUploadTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	uris, err := ref.NewObjectURIs(bucketURL)
	if err != nil {
		return nil, err
	}
	known, err := lru.New[string, struct{}](opts.KnownObjects)
	if err != nil {
		return nil, err
	}
	locs, err := lru.New[ref.Object, cachedLoc](opts.KnownObjects)
	if err != nil {
		return nil, err
	}
	// Lower encoder memory: smaller match tables to reset per value, same output size on agent text.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(opts.Level), zstd.WithLowerEncoderMem(true))
	if err != nil {
		return nil, err
	}
	// Blocks are compressed one at a time (under the append lock): one encoder, its window just
	// covering a block (a larger window only allocates more history per encoder).
	benc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(opts.PackLevel), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(packfile.BlockWindow(opts.PackBlockSize)))
	if err != nil {
		return nil, err
	}
	dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0))
	// The key prefix is applied here rather than by gocloud, so that object keys (and SplitURI)
	// include it whatever the scheme.
	u, err := ref.NormalizeBucketURL(bucketURL)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	prefix := q.Get("prefix")
	q.Del("prefix")
	if u.Scheme == "file" && q.Get("no_tmp_dir") == "" {
		// Temporary files next to the objects: a rename from os.TempDir fails across mounts.
		q.Set("no_tmp_dir", "true")
	}
	u.RawQuery = q.Encode()
	b, closeFn, err := ref.OpenBucket(ctx, u.String())
	if err != nil {
		return nil, err
	}
	s := &Store{uris: uris, prefix: prefix, bucket: b, closeFn: closeFn, known: known, locs: locs, enc: enc, benc: benc, dec: dec, opts: opts, plans: newPlanMemos()}
	if opts.Dir == "" {
		return s, nil
	}
	fail := func(err error) (*Store, error) {
		if s.index != nil {
			_ = s.index.Close()
		}
		_ = closeFn()
		return nil, err
	}
	base := uris.Of("")
	if s.index, err = digestindex.Open(ctx, filepath.Join(opts.Dir, digestindex.IndexFile), base, opts.CollectOnly); err != nil {
		s.index = nil
		return fail(err)
	}
	s.idx = s.index
	if testHookIndex != nil {
		s.idx = testHookIndex(s.idx)
	}
	s.staging = filepath.Join(opts.Dir, packfile.StagingDir)
	if opts.CollectOnly {
		return s, nil
	}
	s.ix = newIndexer(s)
	if s.pw, err = openPackWriter(ctx, s, s.staging); err != nil {
		return fail(err)
	}
	// After recovery indexed what a previous process left staged, before anything is looked up.
	if err := s.idx.BuildFilter(ctx); err != nil {
		_ = s.pw.close(ctx)
		return fail(err)
	}
	s.ix.start()
	return s, nil
}

func (s *Store) now() time.Time { return s.opts.Now() }

func (s *Store) logger(format string, args ...any) {
	if s.opts.Logger != nil {
		s.opts.Logger.Sugar().Warnf(format, args...)
	}
}

// Close seals the open segment, tries to upload what is staged (within ctx of at most a few
// seconds: what is not uploaded stays staged, durable, and is uploaded by the next NewStore on the
// same directory), and closes the index and the bucket.
func (s *Store) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.CloseContext(ctx)
}

// CloseContext is Close with the upload wait bounded by ctx.
func (s *Store) CloseContext(ctx context.Context) error {
	var errs []error
	if s.pw != nil {
		errs = append(errs, s.pw.close(ctx))
	}
	if s.ix != nil {
		errs = append(errs, s.ix.close(ctx))
	}
	if s.index != nil {
		errs = append(errs, s.index.Close())
	}
	errs = append(errs, s.closeFn())
	_ = s.enc.Close()
	_ = s.benc.Close()
	s.dec.Close()
	return errors.Join(errs...)
}

// Flush seals the open segment and waits until every pack this Store sealed is in the bucket
// (pack layout; nothing to do otherwise). A reader on another machine sees every object
// acknowledged before Flush once it returns.
func (s *Store) Flush(ctx context.Context) error {
	if s.pw == nil {
		return nil
	}
	return s.pw.flush(ctx)
}

// Packed tells whether the store writes the pack layout.
func (s *Store) Packed() bool { return s.idx != nil }

// StoreStats describes a Store's state. The digest index's memory is bounded: the location cache
// by KnownObjects, the filter by its capacity.
type StoreStats struct {
	// CachedLocations is how many object locations the in-memory cache holds (at most
	// KnownObjects, about 100 bytes each); IndexedObjects how many rows the digest index has.
	CachedLocations int
	IndexedObjects  int64
	// FilterCapacity is how many objects the digest filter (a Bloom filter of every indexed
	// digest, 1% false positives) is sized for before it is rebuilt larger; FilterBytes its
	// size in memory. Both 0 without a filter (CollectOnly, single-object layout).
	FilterCapacity uint
	FilterBytes    int64
	// PacksUploaded is how many packs this Store wrote to the bucket (one PUT each, or one
	// multipart upload for packs above the driver's part size); StagedPacks how many wait.
	PacksUploaded int64
	StagedPacks   int
	// PendingObjects is how many appended objects wait for the digest index (at most
	// StoreOptions.MaxPendingObjects); RefusedObjects how many appends were refused
	// (ErrIndexBacklog) because that many waited.
	PendingObjects int
	RefusedObjects int64
}

// StatsAtOpen returns the Store's state as NewStore left it, without reading the index again:
// IndexedObjects is the rows NewStore read to build the digest filter (pack layout), which Stats
// would count again with a scan of the whole table (what the processor logged at start read the
// index twice). Call it right after NewStore: later, Stats is current.
func (s *Store) StatsAtOpen() StoreStats {
	st := StoreStats{CachedLocations: s.locs.Len() + s.known.Len()}
	if s.idx == nil {
		return st
	}
	st.IndexedObjects = s.idx.Built()
	st.FilterCapacity, st.FilterBytes = s.idx.FilterStats()
	return st
}

// Stats returns the Store's state.
func (s *Store) Stats(ctx context.Context) (StoreStats, error) {
	st := StoreStats{CachedLocations: s.locs.Len() + s.known.Len()}
	if s.idx == nil {
		return st, nil
	}
	var err error
	if st.IndexedObjects, err = s.idx.ObjectCount(ctx); err != nil {
		return st, err
	}
	st.FilterCapacity, st.FilterBytes = s.idx.FilterStats()
	if s.pw != nil {
		s.pw.mu.Lock()
		st.PacksUploaded = s.pw.puts
		s.pw.mu.Unlock()
		s.pw.pmu.RLock()
		st.PendingObjects, st.RefusedObjects = len(s.pw.pending), s.pw.refused
		s.pw.pmu.RUnlock()
	}
	st.StagedPacks, err = packfile.StagedPacks(s.staging)
	return st, err
}

// PutResult tells what Put did.
type PutResult struct {
	// URI is the reference to put in K_ref.
	URI string
	// Split is true when the value was stored as a manifest of parts.
	Split bool
	// Objects is how many objects make up the value (1 when not split).
	Objects int
	// Written is how many of them were written now; DedupHits how many already existed.
	Written, DedupHits int
	// BytesWritten is the size of the objects written now: compressed in the single-object
	// layout, original bytes in the pack layout (packs are compressed in blocks when sealed).
	BytesWritten int64
}

// ErrStale is returned (wrapped) by Batch.Commit when an object that a Put of the batch found
// already stored was removed by a concurrent Collect before the batch committed: the batch's
// references may name it, so every value of the batch must be Put again (in a new Batch).
var ErrStale = errors.New("payloadref: a deduplicated object was collected meanwhile")

// Batch groups the Puts of one unit of acknowledgement (one ConsumeTraces or ConsumeLogs call).
// Its references are durable once Commit returns nil: Commit fsyncs the open segment once for
// the whole batch (its new objects are indexed in the background, see indexer) and touches
// (updates the last-referenced time in the index of) the objects the batch references that need
// it. Put is safe for concurrent use; Commit is called once, after the Puts, also when a Put
// failed: until a Commit, the manifests the batch appended stay pending (in memory, unindexed,
// counted against MaxPendingObjects; see below).
//
// Touches are coarse: resent conversation history makes dedup hits most objects of most
// batches, and one UPDATE per hit per batch was most of the index's cost. For each cached
// location the writer remembers a lower bound of the row's last_ref ("touched") and the collect
// generation it had read when it wrote the row. Commit reads the generation and the latest mark
// start (one SELECT), and touches a referenced object, with last_ref = max(now, latest mark
// start), unless (1) it is still pending (appended, not inserted yet: the indexer inserts it
// later, reading the generation in its transaction and with a last_ref at least as late), or (2)
// its cached row was written at the current generation less than TouchWindow ago. Collect's
// guarantee (an object referenced after its mark began, or within Grace before, is not deleted;
// a writer whose reference was deleted meanwhile gets ErrStale) still holds, the mark beginning
// when Collect's transaction moving the generation on commits (its mark start is read inside it):
//   - A Commit that reads the generation after that sees the new one: every reference it did
//     not write at this generation is touched (kept: last_ref >= mark start; or found gone:
//     ErrStale), and one written at this generation got last_ref >= mark start then, which this
//     Collect never deletes. A Commit that read the previous generation is ordered before the
//     mark began, as a Commit before markStart always was.
//   - An object skipped under (2) at time t has last_ref >= t - TouchWindow, and Collect's
//     grace cutoff is mark start - Grace - TouchWindow (for Grace > 0): every object referenced
//     within Grace before the mark is still kept. With Grace 0 (erased rows' objects) nothing
//     before the mark is protected, and after it the first point applies.
//
// A reference to an object still pending is not touched, but what it names is checked. A
// manifest names its parts by pack, so it is only as good as the locations it names: the
// manifest a Put appends can name an object of an older pack that a Collect removes before the
// batch commits. Its Commit then gets ErrStale for that object, but the manifest is already
// pending, where the retry's Put, or another Batch's, would find it. So:
//   - A pending manifest is unconfirmed from its append until a Commit referencing it succeeds.
//     The indexer does not index an unconfirmed manifest (it stays pending), so it is never
//     found through the location cache or the index, where no Commit checks what it names.
//   - A Commit checks, with its own references, every location an unconfirmed pending manifest it
//     references names (through other unconfirmed pending manifests too: commitView), as the
//     Batch that appended it does (those are among its own references). If none is stale it
//     confirms them: whatever an acknowledged reference reaches through a pending manifest was
//     checked by the Commit that acknowledged it, or by an earlier one that confirmed it. The
//     pending pass, the touches and the confirmation hold the indexer's gate shared: nothing
//     leaves the pending set in between.
//   - A Commit that gets ErrStale (or fails otherwise, or a Batch abandoned after a failed Put)
//     drops from the pending set every pending manifest naming a stale location, directly or
//     through other pending manifests, and every unconfirmed manifest of its own (dropManifests,
//     under the gate held exclusively). A retry finds none of them and writes them anew (into
//     another pack: the open segment holding a dropped one is sealed); a Commit of another Batch
//     that found one of them pending sees it gone, finds no index row for it and gets ErrStale
//     too.
//
// This holds for writers and Collects sharing one index file (one data directory) and one clock,
// as the index's last_ref times always assumed.
type Batch struct {
	s    *Store
	mu   sync.Mutex
	refs map[ref.Location]batchRef
	// conf backs the unconfirmed manifests Commit confirms (usually the few the batch appended).
	conf [4]ref.Location
}

// batchRef is what a Put knew of an object it referenced: its cached location (gen -1 when
// unknown), and whether it was pending (appended, not indexed) then.
type batchRef struct {
	c       cachedLoc
	pending bool
}

// NewBatch starts a Batch.
func (s *Store) NewBatch() *Batch { return &Batch{s: s, refs: map[ref.Location]batchRef{}} }

func (b *Batch) ref(k ref.Object, c cachedLoc, pending bool) {
	b.mu.Lock()
	b.refs[ref.Location{Object: k, Pack: c.pack}] = batchRef{c, pending}
	b.mu.Unlock()
}

// Put stores data in the batch (see Store.Put).
func (b *Batch) Put(ctx context.Context, data []byte, split bool) (PutResult, error) {
	return b.s.put(ctx, data, split, b, "")
}

// PutStream is Put for a value of a stream: successive values that usually extend one another,
// such as the gen_ai.input.messages of one conversation's chat calls (an agent resends its
// history), named by stream (for example the conversation id and the attribute key; "" matches
// values by their first bytes instead). When data starts with all of the stream's previous value
// but its closing bracket (checked, never assumed), only the bytes after it are hashed and parsed
// (see planMemo); the result is the same as Put's.
func (b *Batch) PutStream(ctx context.Context, data []byte, split bool, stream string) (PutResult, error) {
	return b.s.put(ctx, data, split, b, stream)
}

// Commit makes the batch durable (see Batch). After ErrStale the stale locations are forgotten,
// and the pending manifests naming them dropped, so that Putting the values again writes them
// anew. After any error the batch's unconfirmed manifests are dropped (see Batch).
func (b *Batch) Commit(ctx context.Context) error {
	s := b.s
	if s.pw == nil {
		if s.idx != nil {
			return errors.New("payloadref: store opened with CollectOnly")
		}
		return nil // single objects: each write was durable when it returned
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	stale, err := b.commit(ctx)
	if err != nil || len(stale) > 0 {
		b.drop(stale)
	}
	if err != nil {
		return err
	}
	if len(stale) > 0 {
		return fmt.Errorf("%w: %d objects", ErrStale, len(stale))
	}
	return nil
}

// commit is Commit's work (b.mu held): it returns the stale locations.
func (b *Batch) commit(ctx context.Context) ([]ref.Location, error) {
	s := b.s
	pending, err := s.pw.sync()
	if err != nil {
		return nil, err
	}
	s.ix.poke(pending)
	if len(b.refs) == 0 {
		return nil, nil
	}
	var due, held []ref.Location
	conf := b.conf[:0]
	pick := func(gen int64) []ref.Location {
		now := s.now().UnixNano()
		due = due[:0]
		// One pass under the pending lock, not one per reference.
		held, conf = s.pw.commitView(b, held[:0], conf[:0])
		for _, l := range held {
			c := cachedLoc{gen: -1} // a location a pending manifest names: unknown
			if r, ok := b.refs[l]; ok {
				c = r.c
			}
			if lc, ok := s.locs.Peek(l.Object); ok && lc.pack == l.Pack {
				c = lc // written since the Put: by the indexer, or by another batch's touch
			}
			if c.gen != gen || now-c.touched >= int64(digestindex.TouchWindow) {
				due = append(due, l)
			}
		}
		return due
	}
	s.ix.gate.RLock()
	stale, gen, ts, err := s.idx.TouchDue(ctx, pick, s.now)
	if err == nil && len(stale) == 0 {
		s.pw.confirm(conf)
	}
	s.ix.gate.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("payloadref: digest index: %w", err)
	}
	gone := make(map[ref.Object]bool, len(stale))
	for _, l := range stale {
		gone[l.Object] = true
		if c, ok := s.locs.Peek(l.Object); ok && c.pack == l.Pack {
			s.locs.Remove(l.Object)
		}
	}
	for _, l := range due {
		if !gone[l.Object] {
			s.locs.Add(l.Object, cachedLoc{pack: l.Pack, touched: ts, gen: gen})
		}
	}
	return stale, nil
}

// drop removes from the pending set the manifests naming a stale location and the batch's
// unconfirmed ones (see Batch), unless the batch appended no manifest and nothing is stale.
func (b *Batch) drop(stale []ref.Location) {
	if len(stale) == 0 {
		own := false
		for l, r := range b.refs {
			if r.pending && l.Manifest {
				own = true
				break
			}
		}
		if !own {
			return
		}
	}
	b.s.pw.dropManifests(stale, b)
}

// abort ends a Batch that will not be committed (a Put failed): its unconfirmed manifests are
// dropped (see Batch).
func (b *Batch) abort() {
	if b.s.pw == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.drop(nil)
}

// URI returns the reference URI of key (a full bucket key, prefix included) in this store's bucket.
func (s *Store) URI(key string) string {
	return s.uris.Of(strings.TrimPrefix(key, s.prefix))
}

// packURI is the reference of object k in pack id: the pack's URI with the object's name as
// fragment.
func (s *Store) packURI(id string, k ref.Object) string {
	return s.uris.Of(ref.PackKey(id)) + "#" + k.Name()
}

// Put stores data and returns its reference. With split, a JSON array or object holding arrays
// is stored as one object per large element plus manifests (see package doc); otherwise, or when
// splitting does not pay, as one object. Objects already stored are not written again; children
// are written before the manifests that name them, so a returned URI is always complete.
// Put is idempotent: after an error it can be called again with the same data. In the pack layout
// Put is a Batch of one, committed (and retried once after ErrStale) before it returns.
func (s *Store) Put(ctx context.Context, data []byte, split bool) (PutResult, error) {
	for attempt := 0; ; attempt++ {
		b := s.NewBatch()
		res, err := b.Put(ctx, data, split)
		if err != nil {
			b.abort()
			return res, err
		}
		if err = b.Commit(ctx); err == nil || !errors.Is(err, ErrStale) || attempt >= 2 {
			return res, err
		}
	}
}

func (s *Store) put(ctx context.Context, data []byte, split bool, b *Batch, stream string) (PutResult, error) {
	if s.idx != nil {
		return s.putPacked(ctx, data, split, b, stream)
	}
	sum := sha256.Sum256(data)
	var res PutResult
	if split {
		if mk := s.prefix + ref.ManifestKey(sum); s.isKnown(mk) {
			return PutResult{URI: s.URI(mk), Split: true, Objects: 1, DedupHits: 1}, nil
		}
	}
	vk := s.prefix + ref.ValueKey(sum)
	if s.isKnown(vk) {
		return PutResult{URI: s.URI(vk), Objects: 1, DedupHits: 1}, nil
	}
	var plan *node
	if split {
		plan = planSplitSum(data, sum, s.opts.ChunkMin, s.opts.Fanout) // data is hashed once
	}
	if plan == nil {
		if err := s.writeOnce(ctx, vk, data, false, &res); err != nil {
			return res, err
		}
		res.URI = s.URI(vk)
		return res, nil
	}
	res.Split = true
	if err := s.writeTree(ctx, data, plan, &res); err != nil {
		return res, err
	}
	res.URI = s.URI(s.prefix + ref.ManifestKey(sum))
	return res, nil
}

// putPacked is Put in the pack layout.
func (s *Store) putPacked(ctx context.Context, data []byte, split bool, b *Batch, stream string) (PutResult, error) {
	if s.pw == nil {
		return PutResult{}, errors.New("payloadref: store opened with CollectOnly")
	}
	// A JSON array may extend its stream's previous value (see planMemo).
	var prev, next *planMemo
	var common int
	var memoKey uint64
	if split && len(data) > 1 && data[0] == '[' && len(data) <= planMemoMaxValue {
		memoKey = s.plans.key(stream, data)
		prev, common = s.plans.match(memoKey, data)
		next = &planMemo{}
	}
	sum := hashValue(data, prev, common, next)
	var res PutResult
	if split {
		k := ref.Object{Sum: sum, Manifest: true}
		if pack, ok, err := s.locate(ctx, k, b); err != nil || ok {
			return PutResult{URI: s.packURI(pack, k), Split: true, Objects: 1, DedupHits: 1}, err
		}
	}
	vk := ref.Object{Sum: sum, Manifest: false}
	if pack, ok, err := s.locate(ctx, vk, b); err != nil || ok {
		return PutResult{URI: s.packURI(pack, vk), Objects: 1, DedupHits: 1}, err
	}
	var plan *node
	if split && prev != nil && common > 0 && prev.chain < maxChain {
		// An extension of the stream's previous value: a manifest of the new parts, naming the
		// previous value's (when it is still stored) for the rest.
		pk := ref.Object{Sum: prev.sum, Manifest: true}
		pack, ok, err := s.locate(ctx, pk, b)
		if err != nil {
			return PutResult{}, err
		}
		if ok {
			plan = planDelta(data, sum, s.opts.ChunkMin, s.opts.Fanout, prev, common, next, pack)
		}
	}
	if split && plan == nil {
		plan = planSplitMemo(data, sum, s.opts.ChunkMin, s.opts.Fanout, prev, common, next) // data is hashed once
	}
	if plan == nil {
		pack, _, err := s.appendOnce(ctx, vk, data, b, &res, nil)
		if err != nil {
			return res, err
		}
		res.URI = s.packURI(pack, vk)
		return res, nil
	}
	res.Split = true
	if testHookPlanned != nil {
		testHookPlanned(data)
	}
	if err := s.writeTreePacked(ctx, data, plan, b, &res); err != nil {
		return res, err
	}
	if next != nil {
		// Published once written: its chain counts the prefix parts of the manifest stored under
		// sum. When another Put stored that manifest first (the same value planned at the same
		// time for another stream), its chain is unknown here: the next value is planned whole,
		// or chains would add up past maxChain (and reading them past maxDepth).
		if !plan.own {
			next.chain = maxChain
		}
		next.head = memoHead(prev, common, data)
		s.plans.keep(memoKey, next)
	}
	res.URI = s.packURI(plan.pack, ref.Object{Sum: sum, Manifest: true})
	return res, nil
}

// testHookPlanned, when set (tests only), runs in putPacked between planning a split value and
// writing its objects.
var testHookPlanned func(data []byte)

// locate finds the pack of an object: the in-memory cache, the objects appended but not yet
// indexed, then (unless the digest filter says the index cannot list it: a new object) the
// digest index. Every object found is recorded in b (Commit touches it when needed).
func (s *Store) locate(ctx context.Context, k ref.Object, b *Batch) (string, bool, error) {
	if c, ok := s.locs.Get(k); ok {
		b.ref(k, c, false)
		return c.pack, true, nil
	}
	if p, ok := s.pw.lookupPending(k); ok {
		b.ref(k, cachedLoc{pack: p, gen: -1}, true)
		return p, true, nil
	}
	if !s.idx.MayHave(k) {
		return "", false, nil
	}
	p, err := s.idx.Lookup(ctx, k)
	if err != nil {
		return "", false, fmt.Errorf("payloadref: digest index: %w", err)
	}
	if p == "" {
		return "", false, nil
	}
	c := cachedLoc{pack: p, gen: -1} // its last_ref is unknown: touched at Commit
	s.locs.Add(k, c)
	b.ref(k, c, false)
	return p, true, nil
}

// appendOnce appends content as object k unless it is already stored; it returns its pack, and
// whether content is the stored object (false: another Put stored k first, with its own content:
// for a manifest, possibly another plan of the same value).
// Nothing is compressed here: the staging file holds the bytes raw, and the pack's blocks are
// compressed as they fill.
// A manifest's deps are the locations its parts name (see Batch).
func (s *Store) appendOnce(ctx context.Context, k ref.Object, content []byte, b *Batch, res *PutResult, deps []ref.Location) (string, bool, error) {
	res.Objects++
	if pack, ok, err := s.locate(ctx, k, b); err != nil || ok {
		if ok {
			res.DedupHits++
		}
		return pack, false, err
	}
	pack, appended, err := s.pw.appendObject(k, content, b, deps)
	if err != nil {
		return "", false, err
	}
	b.ref(k, cachedLoc{pack: pack, gen: -1}, true)
	if !appended {
		res.DedupHits++
		return pack, false, nil
	}
	res.Written++
	res.BytesWritten += int64(len(content))
	return pack, true, nil
}

// writeTreePacked appends the objects of n, children first, and sets n.pack (and the children's).
func (s *Store) writeTreePacked(ctx context.Context, data []byte, n *node, b *Batch, res *PutResult) error {
	k := ref.Object{Sum: n.sum, Manifest: n.manifest}
	if !n.manifest {
		pack, _, err := s.appendOnce(ctx, k, data[n.span.start:n.span.end], b, res, nil)
		n.pack = pack
		return err
	}
	if pack, ok, err := s.locate(ctx, k, b); err != nil {
		return err
	} else if ok {
		n.pack = pack
		res.Objects++
		res.DedupHits++
		return nil
	}
	for i := range n.children {
		c := &n.children[i]
		switch {
		case c.prefix: // located when planned (recorded in b then)
			res.Objects++
			res.DedupHits++
		case c.isRef:
			if err := s.writeTreePacked(ctx, data, c, b, res); err != nil {
				return err
			}
		}
	}
	doc := manifestOf(n)
	pack, own, err := s.appendOnce(ctx, k, doc, b, res, manifestDeps(n))
	n.pack, n.own = pack, own
	return err
}

// manifestDeps returns the locations the parts of manifest n name (its referenced and prefix
// children, whose packs are set).
func manifestDeps(n *node) []ref.Location {
	k := 0
	for i := range n.children {
		if c := &n.children[i]; c.isRef || c.prefix {
			k++
		}
	}
	deps := make([]ref.Location, 0, k)
	for i := range n.children {
		if c := &n.children[i]; c.isRef || c.prefix {
			deps = append(deps, ref.Location{Object: ref.Object{Sum: c.sum, Manifest: c.manifest}, Pack: c.pack})
		}
	}
	return deps
}

// writeTree writes the objects of n, children first. A manifest already present implies its
// children are (they were written before it), so its subtree is skipped.
func (s *Store) writeTree(ctx context.Context, data []byte, n *node, res *PutResult) error {
	if !n.manifest {
		return s.writeOnce(ctx, s.prefix+ref.ValueKey(n.sum), data[n.span.start:n.span.end], false, res)
	}
	key := s.prefix + ref.ManifestKey(n.sum)
	if present, err := s.present(ctx, key); err != nil {
		return err
	} else if present {
		res.Objects++
		res.DedupHits++
		return nil
	}
	for i := range n.children {
		if c := &n.children[i]; c.isRef {
			if err := s.writeTree(ctx, data, c, res); err != nil {
				return err
			}
		}
	}
	doc := manifestOf(n)
	return s.writeOnce(ctx, key, doc, true, res)
}

func (s *Store) isKnown(key string) bool {
	_, ok := s.known.Get(key)
	return ok
}

// present tells whether key exists, from the known set or by asking the bucket.
func (s *Store) present(ctx context.Context, key string) (bool, error) {
	if s.isKnown(key) {
		return true, nil
	}
	ok, err := s.bucket.Exists(ctx, key)
	if err != nil {
		return false, fmt.Errorf("payloadref: exists %q: %w", key, err)
	}
	if ok {
		s.known.Add(key, struct{}{})
	}
	return ok, nil
}

// writeOnce writes zstd(content) at key unless it is present. A concurrent writer of the same key
// (IfNotExist precondition failure) counts as present: same key, same content.
func (s *Store) writeOnce(ctx context.Context, key string, content []byte, manifest bool, res *PutResult) error {
	res.Objects++
	if s.isKnown(key) {
		res.DedupHits++
		return nil
	}
	if len(content) < s.opts.ExistsCheckMin {
		// Small object: one conditional write instead of an existence check plus a write;
		// a store that already holds it refuses the write (a dedup hit).
		return s.writeObject(ctx, key, content, manifest, res)
	}
	present, err := s.present(ctx, key)
	if err != nil {
		return err
	}
	if present {
		res.DedupHits++
		return nil
	}
	return s.writeObject(ctx, key, content, manifest, res)
}

// writeObject writes zstd(content) at key with an IfNotExist precondition.
func (s *Store) writeObject(ctx context.Context, key string, content []byte, manifest bool, res *PutResult) error {
	z := s.enc.EncodeAll(content, make([]byte, 0, len(content)/3+64))
	ct := "application/zstd"
	if manifest {
		ct = "application/vnd.runagain.manifest+json+zstd"
	}
	err := s.bucket.WriteAll(ctx, key, z, &blob.WriterOptions{ContentType: ct, IfNotExist: true})
	if err != nil {
		if gcerrors.Code(err) == gcerrors.FailedPrecondition {
			s.known.Add(key, struct{}{})
			res.DedupHits++
			return nil
		}
		return fmt.Errorf("payloadref: write %q: %w", key, err)
	}
	s.known.Add(key, struct{}{})
	res.Written++
	res.BytesWritten += int64(len(z))
	return nil
}

// digestIndex is what the write path asks of the digest index (a *digestindex.Index): whether
// it may list an object (its filter) and in which pack, indexing appended objects, touching a
// Commit's references, recording uploaded packs, and its sizes for Stats.
type digestIndex interface {
	MayHave(k ref.Object) bool
	Lookup(ctx context.Context, k ref.Object) (string, error)
	Insert(ctx context.Context, added []packfile.EntryAt, now func() time.Time) (gen, ts int64, err error)
	AddFiltered(keys []packfile.EntryAt) (full bool)
	BuildFilter(ctx context.Context) error
	TouchDue(ctx context.Context, due func(gen int64) []ref.Location, now func() time.Time) (stale []ref.Location, gen, ts int64, err error)
	SetPack(ctx context.Context, id string, uploaded bool, size int64, created time.Time) error
	ObjectCount(ctx context.Context) (int64, error)
	Built() int64
	FilterStats() (capacity uint, bytes int64)
}

// testHookIndex, when set (tests only), wraps the digest index a pack-layout NewStore opened.
var testHookIndex func(digestIndex) digestIndex
