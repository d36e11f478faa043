// SPDX-License-Identifier: Apache-2.0

// Package coldstore is the cold tier on blob storage: session partial records
// (store.SessionPartial) as Parquet files, through gocloud.dev/blob (file://, s3://, gs://,
// azblob://, mem://).
//
// # Layout (a contract for any Parquet reader: Spark, DuckDB, ClickHouse s3(), pyarrow)
//
//	<prefix>date=YYYY-MM-DD/<batch_id>.parquet
//
// One object per write and date: the date partition is the UTC date of the partials'
// first_seen_unix_nano (a session's earliest in the write) (so a query for a day reads one folder, also for runs imported years
// after they happened); batch_id is the SHA-256 of the batch's span and record identities, so a
// retried write replaces the same object. A write of several batches (a sending queue merged
// their requests) is one object per date named by the id of the set (store.BatchOf) whose rows
// keep their own batch's id: when a crash makes the queue send a batch again merged with other
// ones, its rows land in a second object and still count once. Columns are those of store.SessionPartial (snake
// case, models and trace_ids as Parquet LIST of strings), zstd-compressed. Each object carries
// the metadata "ingested-unix-nano" (when it was written: the retention clock).
//
// Readers merge every partial into one row per session (store.MergePartials); partials of
// one batch seen twice count once.
package coldstore // import "github.com/runagain/runagain/internal/store/coldstore"

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parquet-go/parquet-go"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // azblob://
	"gocloud.dev/blob/fileblob"    // file://
	_ "gocloud.dev/blob/gcsblob"   // gs://
	_ "gocloud.dev/blob/memblob"   // mem://
	_ "gocloud.dev/blob/s3blob"    // s3://

	"github.com/runagain/runagain/internal/store"
)

// MetadataIngested is the object metadata key holding the write time in Unix nanoseconds.
const MetadataIngested = "ingested-unix-nano"

// ContentType of the Parquet objects.
const ContentType = "application/vnd.apache.parquet"

// Store is an open cold-tier bucket.
type Store struct {
	bucket *blob.Bucket
	now    func() time.Time
	where  string
	cache  *objectCache

	oldestMu sync.Mutex
	oldest   oldestAnswer // OldestStart's last answer
}

// oldestAnswer is an OldestStart answer and when it was computed (monotonic clock).
type oldestAnswer struct {
	at    time.Time
	start time.Time
	ok    bool
}

// oldestFor is how long OldestStart gives its last answer again without listing the bucket: a
// listing lists every object (on file://, one metadata file read each: about 100 ms for the
// 2,300 objects of 10^6 runs), and one UI request asks for every page of its walk.
const oldestFor = 5 * time.Second

// Options tune Open.
type Options struct {
	// Now is the clock for the ingestion stamp; default time.Now.
	Now func() time.Time
	// ReadOnly opens a local directory without creating it.
	ReadOnly bool
}

// Open opens the bucket at bucketURL (a gocloud.dev/blob URL; its "prefix" parameter scopes
// every key), or, when bucketURL has no scheme, the local directory of that path (created
// unless ReadOnly).
func Open(ctx context.Context, bucketURL string, o Options) (*Store, error) {
	s := &Store{now: o.Now, where: bucketURL, cache: newObjectCache(maxCachedPartials)}
	if s.now == nil {
		s.now = time.Now
	}
	var err error
	if !strings.Contains(bucketURL, "://") {
		dir, aerr := filepath.Abs(bucketURL)
		if aerr != nil {
			return nil, fmt.Errorf("cold tier: %s: %w", bucketURL, aerr)
		}
		if o.ReadOnly {
			if _, serr := os.Stat(dir); serr != nil {
				return nil, fmt.Errorf("cold tier: %w", serr)
			}
		} else if merr := os.MkdirAll(dir, 0o750); merr != nil {
			return nil, fmt.Errorf("cold tier: create %s: %w", dir, merr)
		}
		s.bucket, err = fileblob.OpenBucket(dir, &fileblob.Options{NoTempDir: true})
	} else {
		s.bucket, err = blob.OpenBucket(ctx, bucketURL)
	}
	if err != nil {
		return nil, fmt.Errorf("cold tier: open %s: %w", bucketURL, err)
	}
	return s, nil
}

// Close closes the bucket.
func (s *Store) Close() error { return s.bucket.Close() }

// Key returns the object key of a batch's partials for one date partition.
func Key(day time.Time, batchID string) string {
	return fmt.Sprintf("date=%s/%s.parquet", day.UTC().Format("2006-01-02"), batchID)
}

// Write stores partials (of one batch or several) as one Parquet object per date partition
// named by their batches (store.BatchOf); each row keeps its BatchID. Each partial keeps its
// Ingested (Unix ns: the ingestion clock when its records were built, before the cold queue), or
// is stamped with the store's clock when it has none (0); an object's ingested-unix-nano
// metadata, the clock Expire reads, is the latest Ingested of its partials. It returns the keys
// written. An unreachable bucket returns the error of the first failed object; objects are named
// by their batches, so a retry rewrites the same keys.
func (s *Store) Write(ctx context.Context, partials []store.SessionPartial) ([]string, error) {
	if len(partials) == 0 {
		return nil, nil
	}
	now := s.now().UnixNano()
	batch, _ := store.BatchOf(partials)
	// A session's rows go to the partition of its earliest first seen in this write, as one row
	// combined from them would: rows of several requests make no more objects than one request.
	first := map[string]int64{}
	for _, p := range partials {
		if f, ok := first[p.SessionID]; !ok || p.FirstSeen < f {
			first[p.SessionID] = p.FirstSeen
		}
	}
	byDay := map[string][]store.SessionPartial{}
	ingested := map[string]int64{}
	for _, p := range partials {
		if p.Ingested == 0 {
			p.Ingested = now
		}
		k := Key(time.Unix(0, first[p.SessionID]), batch)
		byDay[k] = append(byDay[k], p)
		ingested[k] = max(ingested[k], p.Ingested)
	}
	keys := make([]string, 0, len(byDay))
	for k := range byDay {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var buf bytes.Buffer
		if err := parquet.Write(&buf, byDay[k], parquet.Compression(&parquet.Zstd)); err != nil {
			return nil, fmt.Errorf("cold tier: encode %s: %w", k, err)
		}
		err := s.bucket.WriteAll(ctx, k, buf.Bytes(), &blob.WriterOptions{ContentType: ContentType,
			Metadata: map[string]string{MetadataIngested: strconv.FormatInt(ingested[k], 10)}})
		if err != nil {
			return nil, fmt.Errorf("cold tier: write %s to %s: %w", k, s.where, err)
		}
	}
	return keys, nil
}

// Partials reads every partial record in the bucket, in key order. An object whose listing
// (size, modification time, MD5) is that of a cached read is not read again (objectCache).
func (s *Store) Partials(ctx context.Context) ([]store.SessionPartial, error) {
	objs, _, err := s.listing(ctx)
	if err != nil {
		return nil, err
	}
	return s.read(ctx, objs)
}

// listedObject is an object of a listing with its validator (validatorOf).
type listedObject struct{ key, validator string }

// listing lists the bucket's objects in key order, and its fingerprint (every key with its
// validator): equal fingerprints, equal contents.
func (s *Store) listing(ctx context.Context) ([]listedObject, string, error) {
	var objs []listedObject
	fp := sha256.New()
	err := s.each(ctx, func(obj *blob.ListObject) error {
		o := listedObject{obj.Key, validatorOf(obj)}
		fmt.Fprintf(fp, "%s\x00%s\x00", o.key, o.validator)
		objs = append(objs, o)
		return nil
	})
	return objs, hex.EncodeToString(fp.Sum(nil)), err
}

// read returns the partials of objs, each object from the cache or read and decoded once.
func (s *Store) read(ctx context.Context, objs []listedObject) ([]store.SessionPartial, error) {
	var out []store.SessionPartial
	for _, o := range objs {
		if rows, ok := s.cache.get(o.key, o.validator); ok {
			out = append(out, rows...)
			continue
		}
		data, err := s.bucket.ReadAll(ctx, o.key)
		if err != nil {
			return nil, fmt.Errorf("cold tier: read %s: %w", o.key, err)
		}
		rows, err := parquet.Read[store.SessionPartial](bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return nil, fmt.Errorf("cold tier: decode %s: %w", o.key, err)
		}
		s.cache.decoded.Add(1)
		s.cache.put(o.key, o.validator, rows)
		out = append(out, rows...)
	}
	return out, nil
}

// Sessions merges every partial into one record per session, newest first. The merge of an
// unchanged listing is kept (objectCache), so that the pages of one listing, and the UI's
// requests, neither read nor merge the same partials again.
func (s *Store) Sessions(ctx context.Context) ([]store.Session, error) {
	objs, fp, err := s.listing(ctx)
	if err != nil {
		return nil, err
	}
	if ss, ok := s.cache.merged(fp); ok {
		return ss, nil
	}
	ps, err := s.read(ctx, objs)
	if err != nil {
		return nil, err
	}
	ss := store.MergePartials(ps)
	s.cache.keepMerged(fp, ss)
	return slices.Clone(ss), nil
}

// OldestStart implements store.OldestSessionStarter: the earliest first_seen_unix_nano of the
// partials in the oldest date partition, which holds the earliest partial of every session that
// started first (Write puts a session's rows in the partition of its earliest first seen). It
// reads that partition's objects only (through the cache); ok is false for an empty bucket and
// when a partial there has no first seen (its session's start is unknown). The answer is given
// again for oldestFor without listing the bucket (a session written meanwhile that is older
// than every other one is seen by the listings after that).
func (s *Store) OldestStart(ctx context.Context) (oldest time.Time, ok bool, err error) {
	s.oldestMu.Lock()
	defer s.oldestMu.Unlock()
	if a := s.oldest; !a.at.IsZero() && time.Since(a.at) < oldestFor {
		return a.start, a.ok, nil
	}
	began := time.Now()
	oldest, ok, err = s.oldestStart(ctx)
	if err == nil {
		s.oldest = oldestAnswer{at: began, start: oldest, ok: ok}
	}
	return oldest, ok, err
}

// oldestStart is OldestStart without its cache.
func (s *Store) oldestStart(ctx context.Context) (oldest time.Time, ok bool, err error) {
	objs, _, err := s.listing(ctx)
	if err != nil || len(objs) == 0 {
		return time.Time{}, false, err
	}
	part, _, _ := strings.Cut(objs[0].key, "/") // the listing is in key order: date=YYYY-MM-DD first
	var first []listedObject
	for _, o := range objs {
		if strings.HasPrefix(o.key, part+"/") {
			first = append(first, o)
		}
	}
	ps, err := s.read(ctx, first)
	if err != nil {
		return time.Time{}, false, err
	}
	var min int64
	for _, p := range ps {
		if p.FirstSeen == 0 {
			return time.Time{}, false, nil
		}
		if min == 0 || p.FirstSeen < min {
			min = p.FirstSeen
		}
	}
	return time.Unix(0, min).UTC(), min != 0, nil
}

// Keys lists the Parquet object keys.
func (s *Store) Keys(ctx context.Context) ([]string, error) {
	var keys []string
	err := s.each(ctx, func(obj *blob.ListObject) error { keys = append(keys, obj.Key); return nil })
	return keys, err
}

func (s *Store) each(ctx context.Context, f func(*blob.ListObject) error) error {
	it := s.bucket.List(&blob.ListOptions{Prefix: "date="})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cold tier: list %s: %w", s.where, err)
		}
		if obj.IsDir || !strings.HasSuffix(obj.Key, ".parquet") {
			continue
		}
		if err := f(obj); err != nil {
			return err
		}
	}
}

// Expire deletes the objects written before cutoff (metadata ingested-unix-nano, else the
// object's modification time) and returns how many it deleted.
func (s *Store) Expire(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	err := s.each(ctx, func(obj *blob.ListObject) error {
		written := obj.ModTime
		if a, err := s.bucket.Attributes(ctx, obj.Key); err == nil {
			if v, err := strconv.ParseInt(a.Metadata[MetadataIngested], 10, 64); err == nil {
				written = time.Unix(0, v)
			}
		}
		if !written.Before(cutoff) {
			return nil
		}
		if err := s.bucket.Delete(ctx, obj.Key); err != nil {
			return fmt.Errorf("cold tier: delete %s: %w", obj.Key, err)
		}
		n++
		return nil
	})
	return n, err
}

// Runs implements store.Reader: one row per session (Tier "cold").
func (s *Store) Runs(ctx context.Context, f store.RunFilter) ([]store.RunSummary, error) {
	ss, err := s.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	return store.SessionPage(ss, f), nil
}

// ListsSessions implements store.SessionLister: each row is a whole session, merged from every
// partial in the bucket (no run index).
func (s *Store) ListsSessions() bool { return true }

// Run implements store.Reader: the session record of the run, or store.ErrNotFound.
func (s *Store) Run(ctx context.Context, traceID string) (*store.Run, error) {
	ss, err := s.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	traceID = strings.ToLower(traceID)
	sess, ok := store.FindSession(ss, traceID)
	if !ok {
		return nil, store.ErrNotFound
	}
	return store.SessionRun(traceID, sess), nil
}

var _ store.Reader = (*Store)(nil)

// SessionTraces implements store.Eraser: the trace ids of the partials of session, and session
// itself when a partial lists it as a trace id (a run without a session is its own session).
func (s *Store) SessionTraces(ctx context.Context, session string) ([]string, error) {
	ps, err := s.Partials(ctx)
	if err != nil {
		return nil, err
	}
	lower := strings.ToLower(session)
	seen := map[string]bool{}
	for _, p := range ps {
		if p.SessionID == session {
			for _, id := range p.TraceIDs {
				seen[id] = true
			}
		}
		for _, id := range p.TraceIDs {
			if id == lower {
				seen[id] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out, nil
}

// Erase implements store.Eraser. Every Parquet object holding a partial of the erasure is
// rewritten without it, under the same key and with the same metadata (one write of the whole
// object: a rename on file://, a PUT elsewhere, so readers see the old or the new object, never
// a part), or deleted when nothing else is left in it. A partial is removed when its session is
// e.Session or one of e.TraceIDs (a run without a session), or when every run it lists is
// erased; a partial that also lists other runs of its session keeps its aggregates (sums over
// the batch cannot be split by run) and loses the erased trace ids ("session_partials_changed").
func (s *Store) Erase(ctx context.Context, e store.Erasure) (store.Removed, error) {
	r := store.Removed{Tier: store.TierCold, Where: s.where}
	if e.Empty() {
		return r, nil
	}
	erased := map[string]bool{}
	for _, id := range e.TraceIDs {
		erased[strings.ToLower(id)] = true
	}
	err := s.each(ctx, func(obj *blob.ListObject) error {
		data, err := s.bucket.ReadAll(ctx, obj.Key)
		if err != nil {
			return fmt.Errorf("cold tier: read %s: %w", obj.Key, err)
		}
		rows, err := parquet.Read[store.SessionPartial](bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return fmt.Errorf("cold tier: decode %s: %w", obj.Key, err)
		}
		keep := rows[:0:0]
		changed := false
		for _, p := range rows {
			var rest []string
			for _, id := range p.TraceIDs {
				if !erased[id] {
					rest = append(rest, id)
				}
			}
			switch {
			case (e.Session != "" && p.SessionID == e.Session) || erased[strings.ToLower(p.SessionID)] ||
				(len(p.TraceIDs) > 0 && len(rest) == 0):
				r.Add("session_partials", 1)
				changed = true
			case len(rest) < len(p.TraceIDs):
				p.TraceIDs = rest
				r.Add("session_partials_changed", 1)
				keep = append(keep, p)
				changed = true
			default:
				keep = append(keep, p)
			}
		}
		if !changed {
			return nil
		}
		if len(keep) == 0 {
			if err := s.bucket.Delete(ctx, obj.Key); err != nil {
				return fmt.Errorf("cold tier: delete %s: %w", obj.Key, err)
			}
			r.Add("files_deleted", 1)
			return nil
		}
		opts := &blob.WriterOptions{ContentType: ContentType}
		if a, err := s.bucket.Attributes(ctx, obj.Key); err == nil {
			opts.Metadata = a.Metadata
		}
		var buf bytes.Buffer
		if err := parquet.Write(&buf, keep, parquet.Compression(&parquet.Zstd)); err != nil {
			return fmt.Errorf("cold tier: encode %s: %w", obj.Key, err)
		}
		if err := s.bucket.WriteAll(ctx, obj.Key, buf.Bytes(), opts); err != nil {
			return fmt.Errorf("cold tier: rewrite %s: %w", obj.Key, err)
		}
		r.Add("files_rewritten", 1)
		return nil
	})
	return r, err
}

var _ store.Eraser = (*Store)(nil)

// DivergedRuns implements store.DivergedRunLister: none, the cold tier keeps session summaries,
// no divergence record.
func (s *Store) DivergedRuns(context.Context) ([]string, error) { return nil, nil }
