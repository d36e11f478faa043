// SPDX-License-Identifier: Apache-2.0

package packfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/klauspost/compress/zstd"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
	"golang.org/x/sync/singleflight"

	"github.com/runagain/runagain/internal/payloadref/ref"
)

// Reader caches (per Resolver): pack heads (identity, and the v1 trailer or the v2 fanout), pages
// of v2 trailer entries (those of one first digest byte), and decoded v2 blocks. A cached head is
// used after its pack's attributes were checked once in the same Fetch (a HEAD request, or a stat
// for file://): a pack that Collect rewrote (erasing objects) is never read from a stale cache.
const (
	packCacheSize  = 256     // pack heads: about 1 KiB each (a v1 head holds its trailer: ~53 bytes per object)
	pageCacheSize  = 1024    // trailer pages: a 16 MiB pack of 100k objects has ~400 entries (21 KiB) per page
	blockCacheSize = 64      // decoded blocks: about PackBlockSize (256 KiB) each
	maxCachedBlock = 1 << 20 // larger blocks (one large object) are not kept
)

// packHead is what a reader knows of one uploaded pack.
type packHead struct {
	size    int64
	mod     time.Time
	etag    string
	version int
	tOff    int64                // trailer offset
	tLen    int                  // trailer length
	crc     uint32               // trailer checksum: part of every page and block cache key
	entries map[ref.Object]Entry // v1: the whole trailer
	fanout  []byte               // v2: the trailer's fanout
}

func (h *packHead) same(a *blob.Attributes) bool {
	return a.Size == h.size && a.ModTime.Equal(h.mod) && a.ETag == h.etag
}

// Scope is one Fetch (or one mark of Collect): the packs whose cached head was checked in it.
type Scope struct {
	mu      sync.Mutex
	checked map[string]bool
}

// NewScope starts a Scope: one Fetch, or one mark of Collect.
func NewScope() *Scope { return &Scope{checked: map[string]bool{}} }

func (s *Scope) is(ck string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checked[ck]
}

func (s *Scope) set(ck string, v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checked[ck] = v
}

// Reader reads objects out of packs: from the bucket with ranged reads (tail, trailer page,
// block; all cached), or from a staging area.
type Reader struct {
	staging []string
	dec     *zstd.Decoder
	heads   *lru.Cache[string, *packHead]
	pages   *lru.Cache[string, []Entry]
	blocks  *lru.Cache[string, []byte]
	flight  singleflight.Group
	staged  *lru.Cache[string, *stagedFile]
}

// NewReader returns a Reader of packs in buckets and in the staging areas staging, decoding
// with dec.
func NewReader(staging []string, dec *zstd.Decoder) *Reader {
	h, _ := lru.New[string, *packHead](packCacheSize)
	pg, _ := lru.New[string, []Entry](pageCacheSize)
	bl, _ := lru.New[string, []byte](blockCacheSize)
	st, _ := lru.New[string, *stagedFile](16)
	return &Reader{staging: staging, dec: dec, heads: h, pages: pg, blocks: bl, staged: st}
}

// ErrNotInPack: the pack does not list the object.
var ErrNotInPack = errors.New("object not in pack")

// Read returns the original bytes of object k of pack id (key prefix+packs/id.pack) in bucket b
// (cacheKey names the bucket), after verify accepted them. A cached head is checked against the
// pack's attributes once per scope; a read that fails on cached state is tried once more from the
// bucket.
func (p *Reader) Read(ctx context.Context, b *blob.Bucket, cacheKey, prefix, id string, k ref.Object, sc *Scope, verify func([]byte) error) ([]byte, error) {
	key := prefix + ref.PackKey(id)
	ck := cacheKey + "\x00" + key
	var last error
	for attempt := 0; attempt < 2; attempt++ {
		h, fresh, err := p.head(ctx, b, key, ck, sc, attempt > 0)
		if gcerrors.Code(err) == gcerrors.NotFound {
			raw, lerr := p.readStaged(id, k)
			if lerr == nil {
				return raw, verify(raw)
			}
			if !errors.Is(lerr, os.ErrNotExist) {
				return nil, lerr
			}
			// Uploaded (and removed from staging) meanwhile: the bucket has it now.
			if h, fresh, err = p.head(ctx, b, key, ck, sc, true); err != nil {
				return nil, fmt.Errorf("pack %s: %w", key, err)
			}
		} else if err != nil {
			return nil, fmt.Errorf("pack %s: %w", key, err)
		}
		raw, err := p.object(ctx, b, key, ck, h, k)
		if err == nil {
			err = verify(raw)
		}
		if err == nil {
			return raw, nil
		}
		last = fmt.Errorf("pack %s: %s: %w", key, k.Name(), err)
		if fresh {
			break
		}
		p.heads.Remove(ck)
		sc.set(ck, false)
	}
	return nil, last
}

// head returns pack key's head: cached (checked against the pack's attributes once per scope)
// or read from the bucket (fresh).
func (p *Reader) head(ctx context.Context, b *blob.Bucket, key, ck string, sc *Scope, force bool) (*packHead, bool, error) {
	var attrs *blob.Attributes
	if h, ok := p.heads.Get(ck); ok && !force {
		if sc.is(ck) {
			return h, false, nil
		}
		a, err := b.Attributes(ctx, key)
		if err != nil {
			return nil, false, err
		}
		if h.same(a) {
			sc.set(ck, true)
			return h, false, nil
		}
		attrs = a
	}
	h, err := readHead(ctx, b, key, attrs)
	if err != nil {
		return nil, true, err
	}
	p.heads.Add(ck, h)
	sc.set(ck, true)
	return h, true, nil
}

// readHead reads a pack's tail (v2: fanout and footer in one ranged read) and, for a v1 pack,
// its whole trailer.
func readHead(ctx context.Context, b *blob.Bucket, key string, a *blob.Attributes) (*packHead, error) {
	if a == nil {
		var err error
		if a, err = b.Attributes(ctx, key); err != nil {
			return nil, err
		}
	}
	h := &packHead{size: a.Size, mod: a.ModTime, etag: a.ETag}
	if h.size < FooterSize {
		return nil, ErrNoFooter
	}
	n := min(h.size, fanoutSize+FooterSize)
	tail, err := readRange(ctx, b, key, h.size-n, n)
	if err != nil {
		return nil, err
	}
	if h.tOff, h.tLen, h.crc, h.version, err = DecodeFooter(tail[n-FooterSize:], h.size); err != nil {
		return nil, err
	}
	if h.version == 2 {
		h.fanout = tail[n-FooterSize-fanoutSize : n-FooterSize]
		return h, nil
	}
	var t []byte
	if int64(h.tLen) <= n-FooterSize {
		t = tail[n-FooterSize-int64(h.tLen) : n-FooterSize]
	} else if t, err = readRange(ctx, b, key, h.tOff, int64(h.tLen)); err != nil {
		return nil, err
	}
	es, err := decodeTrailer(t, h.crc, h.tOff)
	if err != nil {
		return nil, err
	}
	h.entries = make(map[ref.Object]Entry, len(es))
	for _, e := range es {
		h.entries[e.Object] = e
	}
	return h, nil
}

// object returns object k's original bytes from the pack described by h.
func (p *Reader) object(ctx context.Context, b *blob.Bucket, key, ck string, h *packHead, k ref.Object) ([]byte, error) {
	if h.version == 1 {
		e, ok := h.entries[k]
		if !ok {
			return nil, ErrNotInPack
		}
		z, err := readRange(ctx, b, key, e.Off, int64(e.ZLen))
		if err != nil {
			return nil, err
		}
		if e.RawRec {
			return z, nil
		}
		return p.dec.DecodeAll(z, nil)
	}
	e, ok, err := p.findV2(ctx, b, key, ck, h, k)
	if err != nil || !ok {
		return nil, errors.Join(err, ErrNotInPack)
	}
	block, err := p.block(ctx, b, key, ck, h, e)
	if err != nil {
		return nil, err
	}
	if e.InOff+e.Raw > int64(len(block)) {
		return nil, fmt.Errorf("[%d, +%d) outside its %d byte block", e.InOff, e.Raw, len(block))
	}
	return block[e.InOff : e.InOff+e.Raw : e.InOff+e.Raw], nil
}

// findV2 returns the v2 entry of k: from the page of entries of k's first digest byte.
func (p *Reader) findV2(ctx context.Context, b *blob.Bucket, key, ck string, h *packHead, k ref.Object) (Entry, bool, error) {
	pk := fmt.Sprintf("%s\x00%08x\x00%02x", ck, h.crc, k.Sum[0])
	page, ok := p.pages.Get(pk)
	if !ok {
		lo, hi := fanoutRange(h.fanout, k.Sum[0])
		if n := (h.tLen - fanoutSize) / entrySizeV2; lo > hi || hi > n {
			return Entry{}, false, fmt.Errorf("pack trailer: fanout [%d, %d) of %d entries", lo, hi, n)
		}
		if lo == hi {
			return Entry{}, false, nil
		}
		t, err := readRange(ctx, b, key, h.tOff+int64(lo)*entrySizeV2, int64(hi-lo)*entrySizeV2)
		if err != nil {
			return Entry{}, false, err
		}
		if page, err = decodeEntriesV2(t, h.tOff); err != nil {
			return Entry{}, false, err
		}
		p.pages.Add(pk, page)
	}
	for _, e := range page {
		if e.Object == k {
			return e, true, nil
		}
	}
	return Entry{}, false, nil
}

// block returns the decoded block of entry e (cached; concurrent readers of one block share one read).
func (p *Reader) block(ctx context.Context, b *blob.Bucket, key, ck string, h *packHead, e Entry) ([]byte, error) {
	bk := fmt.Sprintf("%s\x00%08x\x00%d", ck, h.crc, e.Off)
	if d, ok := p.blocks.Get(bk); ok {
		return d, nil
	}
	v, err, _ := p.flight.Do(bk, func() (any, error) {
		z, err := readRange(ctx, b, key, e.Off, int64(e.ZLen))
		if err != nil {
			return nil, err
		}
		d, err := p.dec.DecodeAll(z, nil)
		if err != nil {
			return nil, fmt.Errorf("decompressing the block at %d: %w", e.Off, err)
		}
		if len(d) <= maxCachedBlock {
			p.blocks.Add(bk, d)
		}
		return d, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// stagedFile is what a reader knows of one staging file: the entries found so far (by its
// trailer once sealed, else by scanning its records up to end).
type stagedFile struct {
	mu      sync.Mutex
	sealed  bool
	size    int64
	end     int64
	entries map[ref.Object]Entry
}

// readStaged reads object k of pack id from a staging area; os.ErrNotExist when no staging area
// holds the pack.
func (p *Reader) readStaged(id string, k ref.Object) ([]byte, error) {
	for _, dir := range p.staging {
		path := filepath.Join(dir, id+ref.PackSuffix)
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		raw, err := p.readLocal(f, path, k)
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("staged pack %s: %w", id, err)
		}
		return raw, nil
	}
	return nil, os.ErrNotExist
}

// readLocal reads object k's original bytes from a staging file (sealed or not), with the file's
// entries cached: a sealed file's trailer is read once, an open one's records are scanned from
// where the last scan ended.
func (p *Reader) readLocal(f *os.File, path string, k ref.Object) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	sf, _ := p.staged.Get(path)
	if sf == nil {
		sf = &stagedFile{entries: map[ref.Object]Entry{}}
		p.staged.Add(path, sf)
	}
	sf.mu.Lock()
	if !sf.sealed || sf.size != st.Size() {
		if es, err := ReadLocalTrailer(f, st.Size()); err == nil {
			sf.sealed, sf.size, sf.entries = true, st.Size(), make(map[ref.Object]Entry, len(es))
			for _, e := range es {
				sf.entries[e.Object] = e
			}
		} else {
			if sf.sealed || st.Size() < sf.end {
				sf.sealed, sf.end, sf.entries = false, 0, map[ref.Object]Entry{}
			}
			es, end := scanRecordsFrom(f, sf.end, st.Size())
			for _, e := range es {
				sf.entries[e.Object] = e
			}
			sf.end, sf.size = end, st.Size()
		}
	}
	e, ok := sf.entries[k]
	if !ok && !sf.sealed && sf.end > 0 {
		// A record cut back after a failed write may have misled the incremental scan: scan anew.
		es, end := ScanRecords(f, st.Size())
		sf.entries = make(map[ref.Object]Entry, len(es))
		for _, e := range es {
			sf.entries[e.Object] = e
		}
		sf.end = end
		e, ok = sf.entries[k]
	}
	sf.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%s: %w", k.Name(), ErrNotInPack)
	}
	return ReadLocalEntry(f, e, p.dec)
}

// ReadLocalEntry reads a v1 entry's original bytes from a local file.
func ReadLocalEntry(f io.ReaderAt, e Entry, dec *zstd.Decoder) ([]byte, error) {
	z := make([]byte, e.ZLen)
	if _, err := f.ReadAt(z, e.Off); err != nil {
		return nil, err
	}
	if e.RawRec {
		return z, nil
	}
	return dec.DecodeAll(z, nil)
}

// ReadTrailer reads every entry of the pack at key (either version) with ranged reads.
func ReadTrailer(ctx context.Context, b *blob.Bucket, key string) ([]Entry, error) {
	a, err := b.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	size := a.Size
	if size < FooterSize {
		return nil, ErrNoFooter
	}
	ft, err := readRange(ctx, b, key, size-FooterSize, FooterSize)
	if err != nil {
		return nil, err
	}
	off, n, crc, version, err := DecodeFooter(ft, size)
	if err != nil {
		return nil, err
	}
	t, err := readRange(ctx, b, key, off, int64(n))
	if err != nil {
		return nil, err
	}
	return decodeAnyTrailer(t, crc, off, version)
}

func readRange(ctx context.Context, b *blob.Bucket, key string, off, n int64) ([]byte, error) {
	r, err := b.NewRangeReader(ctx, key, off, n, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("ranged read %s [%d, +%d): %w", key, off, n, err)
	}
	return buf, nil
}

// ReadLocalTrailer returns the entries of a sealed pack file.
func ReadLocalTrailer(f io.ReaderAt, size int64) ([]Entry, error) {
	if size < FooterSize {
		return nil, ErrNoFooter
	}
	var ft [FooterSize]byte
	if _, err := f.ReadAt(ft[:], size-FooterSize); err != nil {
		return nil, err
	}
	off, n, crc, version, err := DecodeFooter(ft[:], size)
	if err != nil {
		return nil, err
	}
	t := make([]byte, n)
	if _, err := f.ReadAt(t, off); err != nil {
		return nil, err
	}
	return decodeAnyTrailer(t, crc, off, version)
}
