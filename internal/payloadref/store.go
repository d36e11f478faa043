package payloadref

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/klauspost/compress/zstd"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// StoreOptions tunes a Store. Zero values take the defaults.
type StoreOptions struct {
	// KnownObjects is how many recently written or seen object keys are remembered, so that
	// an object known to exist is neither checked nor written again. Default 100000.
	KnownObjects int
	// ChunkMin is the smallest element (in bytes) of a split JSON value stored as its own object;
	// smaller elements stay literal in the manifest. Default 256.
	ChunkMin int
	// Fanout is the largest number of parts in one manifest before parts are grouped into
	// sub-manifests. Default 64.
	Fanout int
	// Level is the zstd level. Default zstd.SpeedDefault.
	Level zstd.EncoderLevel
	// ExistsCheckMin: values at least this long (bytes, uncompressed) are checked for existence
	// before they are written; smaller ones are written directly with an if-not-exists
	// precondition (one request instead of two; the store refuses a duplicate). Default 64 KiB;
	// negative checks every object first.
	ExistsCheckMin int
}

// Store writes values to a bucket in the payloadref layout. It is safe for concurrent use.
type Store struct {
	bucketURL string
	prefix    string // key prefix (the URL's prefix parameter)
	bucket    *blob.Bucket
	closeFn   func() error
	known     *lru.Cache[string, struct{}]
	enc       *zstd.Encoder
	opts      StoreOptions
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
	// BytesWritten is the compressed size of the objects written now.
	BytesWritten int64
}

// NewStore opens the bucket at bucketURL (see OpenBucket) for writing.
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
	if opts.Level == 0 {
		opts.Level = zstd.SpeedDefault
	}
	if _, err := ObjectURI(bucketURL, ValueKey([32]byte{})); err != nil {
		return nil, err
	}
	known, err := lru.New[string, struct{}](opts.KnownObjects)
	if err != nil {
		return nil, err
	}
	// Lower encoder memory: smaller match tables to reset per value, same output size on agent text.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(opts.Level), zstd.WithLowerEncoderMem(true))
	if err != nil {
		return nil, err
	}
	// The key prefix is applied here rather than by gocloud, so that object keys (and SplitURI)
	// include it whatever the scheme.
	u, err := normalizeBucketURL(bucketURL)
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
	b, closeFn, err := OpenBucket(ctx, u.String())
	if err != nil {
		return nil, err
	}
	return &Store{bucketURL: bucketURL, prefix: prefix, bucket: b, closeFn: closeFn, known: known, enc: enc, opts: opts}, nil
}

// Close closes the bucket and releases the encoder.
func (s *Store) Close() error {
	err := s.closeFn()
	_ = s.enc.Close()
	return err
}

// URI returns the reference URI of key (a full bucket key, prefix included) in this store's bucket.
func (s *Store) URI(key string) string {
	uri, _ := ObjectURI(s.bucketURL, strings.TrimPrefix(key, s.prefix)) // validated in NewStore
	return uri
}

// Put stores data and returns its reference. With split, a JSON array or object holding arrays
// is stored as one object per large element plus manifests (see package doc); otherwise, or when
// splitting does not pay, as one object. Objects already known or present are not written again;
// children are written before the manifests that name them, so a returned URI is always complete.
// Put is idempotent: after an error it can be called again with the same data.
func (s *Store) Put(ctx context.Context, data []byte, split bool) (PutResult, error) {
	sum := sha256.Sum256(data)
	var res PutResult
	if split {
		if mk := s.prefix + ManifestKey(sum); s.isKnown(mk) {
			return PutResult{URI: s.URI(mk), Split: true, Objects: 1, DedupHits: 1}, nil
		}
	}
	vk := s.prefix + ValueKey(sum)
	if s.isKnown(vk) {
		return PutResult{URI: s.URI(vk), Objects: 1, DedupHits: 1}, nil
	}
	var plan *node
	if split {
		plan = planSplit(data, s.opts.ChunkMin, s.opts.Fanout)
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
	res.URI = s.URI(s.prefix + ManifestKey(sum))
	return res, nil
}

// writeTree writes the objects of n, children first. A manifest already present implies its
// children are (they were written before it), so its subtree is skipped.
func (s *Store) writeTree(ctx context.Context, data []byte, n *node, res *PutResult) error {
	if !n.manifest {
		return s.writeOnce(ctx, s.prefix+ValueKey(n.sum), data[n.span.start:n.span.end], false, res)
	}
	key := s.prefix + ManifestKey(n.sum)
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
	doc, err := manifestOf(n)
	if err != nil {
		return err
	}
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

// ErrHashMismatch is returned (wrapped) when stored bytes do not hash to the digest in their key.
var ErrHashMismatch = errors.New("payloadref: SHA-256 mismatch")
