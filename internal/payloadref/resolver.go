// SPDX-License-Identifier: Apache-2.0

package payloadref

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"gocloud.dev/blob"
	"golang.org/x/sync/errgroup"

	"github.com/runagain/runagain/internal/payloadref/packfile"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

// maxDepth bounds manifest nesting (a manifest of n parts at fanout 64 needs about log64(n)
// levels, and a chain of prefix parts at most maxChain more: see planDelta).
const maxDepth = 16

// Option configures a Resolver.
type Option func(*Resolver)

// WithMaxSize bounds the size in bytes of one rebuilt value (default 1 GiB); larger values fail.
func WithMaxSize(n int64) Option { return func(r *Resolver) { r.maxSize = n } }

// Resolver reads payload references back: it opens buckets by URI (and keeps them open until
// Close), follows manifests, decompresses and verifies the SHA-256 of every object against its key.
// It is safe for concurrent use.
type Resolver struct {
	mu      sync.Mutex
	buckets map[string]*openBucket
	dec     *zstd.Decoder
	maxSize int64
	staging []string
	packs   *packfile.Reader
}

type openBucket struct {
	b     *blob.Bucket
	close func() error
}

// NewResolver returns a Resolver; call Close when done.
func NewResolver(opts ...Option) *Resolver {
	r := &Resolver{buckets: map[string]*openBucket{}, maxSize: 1 << 30}
	for _, o := range opts {
		o(r)
	}
	// A nil reader never fails with these options.
	r.dec, _ = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(uint64(r.maxSize)), zstd.WithDecoderConcurrency(0))
	r.packs = packfile.NewReader(r.staging, r.dec)
	return r
}

// Close closes every bucket the Resolver opened.
func (r *Resolver) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for k, b := range r.buckets {
		errs = append(errs, b.close())
		delete(r.buckets, k)
	}
	r.dec.Close()
	return errors.Join(errs...)
}

func (r *Resolver) bucket(ctx context.Context, bucketURL string) (*blob.Bucket, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.buckets[bucketURL]; ok {
		return b.b, nil
	}
	b, closeFn, err := ref.OpenBucket(ctx, bucketURL)
	if err != nil {
		return nil, err
	}
	r.buckets[bucketURL] = &openBucket{b: b, close: closeFn}
	return b, nil
}

// Fetch returns the original bytes of the value a reference URI names. For objects in the
// payloadref layout (key .../sha256/<hex>.zst or .manifest.zst) it decompresses, rebuilds
// manifests and returns an error wrapping ErrHashMismatch when any object's bytes do not hash to
// its key. Objects in any other layout (written by an SDK upload hook) are returned as stored,
// unverified. A missing object gives an error for which gcerrors.Code is gcerrors.NotFound.
func (r *Resolver) Fetch(ctx context.Context, uri string) ([]byte, error) {
	bucketURL, key, err := ref.SplitURI(uri)
	if err != nil {
		return nil, err
	}
	b, err := r.bucket(ctx, bucketURL)
	if err != nil {
		return nil, err
	}
	if u, _ := url.Parse(uri); u != nil && u.Fragment != "" {
		prefix, id, k, ok, err := ref.ParsePackRef(key, u.Fragment)
		if err != nil {
			return nil, err
		}
		if ok {
			f := &fetch{r: r, b: b, bucketURL: bucketURL, prefix: prefix, seen: map[ref.Location][]byte{}, sem: make(chan struct{}, fetchConcurrency), scope: packfile.NewScope()}
			data, err := f.object(ctx, id, k.Sum, k.Manifest, -1, 0)
			if err != nil {
				return nil, fmt.Errorf("payloadref: fetch %s: %w", uri, err)
			}
			return data, nil
		}
	}
	sum, manifest, err := ref.ParseKey(key)
	if errors.Is(err, ref.ErrNotOurs) {
		data, err := b.ReadAll(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("payloadref: read %s: %w", uri, err)
		}
		return data, nil
	}
	f := &fetch{r: r, b: b, bucketURL: bucketURL, prefix: ref.KeyPrefixOf(key), seen: map[ref.Location][]byte{}, sem: make(chan struct{}, fetchConcurrency), scope: packfile.NewScope()}
	data, err := f.object(ctx, "", sum, manifest, -1, 0)
	if err != nil {
		return nil, fmt.Errorf("payloadref: fetch %s: %w", uri, err)
	}
	return data, nil
}

// fetchConcurrency bounds the object reads in flight for one Fetch (a manifest's parts are read
// concurrently: on S3 a 200-message conversation is 200 GETs).
const fetchConcurrency = 16

// fetch is one Fetch call: objects read so far, by key (a message repeated in one value is read once).
type fetch struct {
	r         *Resolver
	b         *blob.Bucket
	bucketURL string
	prefix    string
	sem       chan struct{}
	scope     *packfile.Scope
	mu        sync.Mutex
	seen      map[ref.Location][]byte
}

// object returns the bytes object (sum, manifest) stands for, read from pack (or, when pack is
// empty, from its single-object key), manifests followed and every digest verified.
func (f *fetch) object(ctx context.Context, pack string, sum [32]byte, manifest bool, wantSize int64, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("manifests nested deeper than %d", maxDepth)
	}
	k := ref.Object{Sum: sum, Manifest: manifest}
	key := f.prefix + k.Name()
	if pack != "" {
		key = f.prefix + ref.PackKey(pack) + "#" + k.Name()
	}
	f.mu.Lock()
	d, ok := f.seen[ref.Location{Object: k, Pack: pack}]
	f.mu.Unlock()
	if ok {
		return d, nil
	}
	select {
	case f.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var raw []byte
	var err error
	verify := func(raw []byte) error {
		if !manifest {
			if got := sha256.Sum256(raw); got != sum {
				return fmt.Errorf("%w: %q holds %d bytes hashing to %x", ref.ErrHashMismatch, key, len(raw), got)
			}
		}
		return nil
	}
	if pack != "" {
		raw, err = f.r.packs.Read(ctx, f.b, f.bucketURL, f.prefix, pack, k, f.scope, verify)
	} else {
		var z []byte
		z, err = f.b.ReadAll(ctx, key)
		if err != nil {
			err = fmt.Errorf("read %q: %w", key, err)
		} else if raw, err = f.r.dec.DecodeAll(z, nil); err != nil {
			err = fmt.Errorf("decompress %q: %w", key, err)
		} else {
			err = verify(raw)
		}
	}
	<-f.sem
	if err != nil {
		return nil, err
	}
	data := raw
	if manifest {
		m, err := ref.DecodeManifest(raw)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", key, err)
		}
		if m.Size > f.r.maxSize {
			return nil, fmt.Errorf("%q: value of %d bytes exceeds the %d byte limit", key, m.Size, f.r.maxSize)
		}
		parts := make([][]byte, len(m.Parts))
		g, gctx := errgroup.WithContext(ctx)
		for i, p := range m.Parts {
			if p.Ref == "" {
				parts[i] = p.Lit
				continue
			}
			var child [32]byte
			if _, err := hex.Decode(child[:], []byte(p.Ref)); err != nil {
				return nil, fmt.Errorf("%q part %d: bad ref %q", key, i, p.Ref)
			}
			g.Go(func() error {
				if p.Pre { // the first p.Size bytes of a longer object
					d, err := f.object(gctx, p.P, child, p.M, -1, depth+1)
					if err == nil && int64(len(d)) < p.Size {
						err = fmt.Errorf("%q part %d: %d bytes of a %d-byte object", key, i, p.Size, len(d))
					}
					if err == nil {
						parts[i] = d[:p.Size:p.Size]
					}
					return err
				}
				d, err := f.object(gctx, p.P, child, p.M, p.Size, depth+1)
				parts[i] = d
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
		data = make([]byte, 0, m.Size)
		for _, p := range parts {
			data = append(data, p...)
		}
	}
	if got := sha256.Sum256(data); got != sum {
		return nil, fmt.Errorf("%w: %q holds %d bytes hashing to %x", ref.ErrHashMismatch, key, len(data), got)
	}
	if wantSize >= 0 && int64(len(data)) != wantSize {
		return nil, fmt.Errorf("%q holds %d bytes, its manifest says %d", key, len(data), wantSize)
	}
	f.mu.Lock()
	f.seen[ref.Location{Object: k, Pack: pack}] = data
	f.mu.Unlock()
	return data, nil
}

// RehydrateMap replaces, in place, every string attribute K_ref whose value is a URI by K holding
// the referenced bytes (as a string value). References that cannot be read stay as they are; the
// returned error joins one error per such key. LogBodyRefKey, if present, is rehydrated like any
// other (to "log.body"); use RehydrateLogRecord to restore a log body.
func (r *Resolver) RehydrateMap(ctx context.Context, m pcommon.Map) error {
	type attrRef struct{ key, uri string }
	var refs []attrRef
	m.Range(func(k string, v pcommon.Value) bool {
		if ref.IsRefKey(k) && v.Type() == pcommon.ValueTypeStr && strings.Contains(v.Str(), "://") {
			refs = append(refs, attrRef{k, v.Str()})
		}
		return true
	})
	sort.Slice(refs, func(i, j int) bool { return refs[i].key < refs[j].key })
	var errs []error
	for _, rf := range refs {
		data, err := r.Fetch(ctx, rf.uri)
		if err != nil {
			errs = append(errs, fmt.Errorf("attribute %s: %w", rf.key, err))
			continue
		}
		m.PutStr(strings.TrimSuffix(rf.key, ref.RefSuffix), string(data))
		m.Remove(rf.key)
	}
	return errors.Join(errs...)
}

// Rehydrated returns a rehydrated copy of m, leaving m unchanged (see RehydrateMap).
func (r *Resolver) Rehydrated(ctx context.Context, m pcommon.Map) (pcommon.Map, error) {
	c := pcommon.NewMap()
	m.CopyTo(c)
	return c, r.RehydrateMap(ctx, c)
}

// RehydrateSpan rehydrates the span's attributes and its events' attributes in place.
func (r *Resolver) RehydrateSpan(ctx context.Context, s ptrace.Span) error {
	errs := []error{r.RehydrateMap(ctx, s.Attributes())}
	for i := 0; i < s.Events().Len(); i++ {
		if err := r.RehydrateMap(ctx, s.Events().At(i).Attributes()); err != nil {
			errs = append(errs, fmt.Errorf("event %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// RehydrateLogRecord restores an offloaded body (LogBodyRefKey) and rehydrates the attributes, in place.
func (r *Resolver) RehydrateLogRecord(ctx context.Context, lr plog.LogRecord) error {
	var errs []error
	if v, ok := lr.Attributes().Get(ref.LogBodyRefKey); ok && v.Type() == pcommon.ValueTypeStr {
		data, err := r.Fetch(ctx, v.Str())
		if err != nil {
			errs = append(errs, fmt.Errorf("body: %w", err))
		} else {
			lr.Body().SetStr(string(data))
			lr.Attributes().Remove(ref.LogBodyRefKey)
		}
	}
	errs = append(errs, r.RehydrateMap(ctx, lr.Attributes()))
	if lr.Body().Type() == pcommon.ValueTypeMap {
		if err := r.rehydrateNested(ctx, lr.Body().Map(), 0); err != nil {
			errs = append(errs, fmt.Errorf("body: %w", err))
		}
	}
	return errors.Join(errs...)
}

// rehydrateNested rehydrates a Map log body: K_ref values at any depth (nested maps, maps inside
// slices), as payload_offload writes them for Map bodies.
func (r *Resolver) rehydrateNested(ctx context.Context, m pcommon.Map, depth int) error {
	if depth > 16 {
		return nil
	}
	errs := []error{r.RehydrateMap(ctx, m)}
	m.Range(func(k string, v pcommon.Value) bool {
		switch v.Type() {
		case pcommon.ValueTypeMap:
			errs = append(errs, r.rehydrateNested(ctx, v.Map(), depth+1))
		case pcommon.ValueTypeSlice:
			for i := 0; i < v.Slice().Len(); i++ {
				if e := v.Slice().At(i); e.Type() == pcommon.ValueTypeMap {
					errs = append(errs, r.rehydrateNested(ctx, e.Map(), depth+1))
				}
			}
		}
		return true
	})
	return errors.Join(errs...)
}

// RehydrateTraces rehydrates every span (attributes and event attributes) in place.
func (r *Resolver) RehydrateTraces(ctx context.Context, td ptrace.Traces) error {
	var errs []error
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		ss := td.ResourceSpans().At(i).ScopeSpans()
		for j := 0; j < ss.Len(); j++ {
			spans := ss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				if err := r.RehydrateSpan(ctx, spans.At(k)); err != nil {
					errs = append(errs, fmt.Errorf("span %s: %w", spans.At(k).SpanID(), err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// RehydrateLogs rehydrates every log record in place.
func (r *Resolver) RehydrateLogs(ctx context.Context, ld plog.Logs) error {
	var errs []error
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		sl := ld.ResourceLogs().At(i).ScopeLogs()
		for j := 0; j < sl.Len(); j++ {
			lrs := sl.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				if err := r.RehydrateLogRecord(ctx, lrs.At(k)); err != nil {
					errs = append(errs, fmt.Errorf("log record %d: %w", k, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// WithStagingDir makes the Resolver read packs not yet uploaded from dir, a Store's
// Dir/StagingDir (repeatable): packs that are durable on this machine but whose upload to the
// bucket has not happened yet (at most about PackMaxAge after they were written, while the
// bucket is up). A Resolver without it sees such objects once their pack is uploaded. An empty
// dir adds nothing.
func WithStagingDir(dir string) Option {
	return func(r *Resolver) {
		if dir != "" {
			r.staging = append(r.staging, dir)
		}
	}
}
