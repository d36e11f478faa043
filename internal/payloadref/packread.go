package payloadref

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// stagingDirs are the staging areas every Resolver of this process also reads: packs that are
// durable on this machine but not yet uploaded (see AddStagingDir).
var stagingDirs struct {
	sync.Mutex
	dirs []string
}

// AddStagingDir makes every Resolver of this process read packs not yet uploaded from dir (a
// Store's Dir/staging) when the bucket does not hold them yet. NewStore adds its own; the CLI
// adds the one of its configuration. A reader on another machine sees such objects once their
// pack is uploaded (at most about PackMaxAge after they were written, while the bucket is up).
func AddStagingDir(dir string) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	stagingDirs.Lock()
	defer stagingDirs.Unlock()
	if !slices.Contains(stagingDirs.dirs, dir) {
		stagingDirs.dirs = append(stagingDirs.dirs, dir)
	}
}

func stagingDirList(extra []string) []string {
	stagingDirs.Lock()
	defer stagingDirs.Unlock()
	return append(slices.Clone(extra), stagingDirs.dirs...)
}

// WithStagingDir makes the Resolver read packs not yet uploaded from dir (see AddStagingDir).
func WithStagingDir(dir string) Option {
	return func(r *Resolver) { r.staging = append(r.staging, dir) }
}

// packCacheSize is how many pack trailers a Resolver keeps (about 53 bytes per object each).
const packCacheSize = 256

// packReader reads objects out of packs: from the bucket with ranged reads (footer, trailer,
// then the object; trailers cached), or from a staging area.
type packReader struct {
	staging []string
	cache   *lru.Cache[string, map[objKey]packEntry]
}

func newPackReader(staging []string) *packReader {
	c, _ := lru.New[string, map[objKey]packEntry](packCacheSize)
	return &packReader{staging: staging, cache: c}
}

// errNotInPack: the pack does not list the object.
var errNotInPack = errors.New("object not in pack")

// read returns the zstd frame of object k of pack id (key prefix+packs/id.pack) in bucket b
// (cacheKey names the bucket). A trailer from the cache that turns out stale (the pack was
// rewritten by Collect) is read again once; verify reports whether the frame's content is right.
func (p *packReader) read(ctx context.Context, b *blob.Bucket, cacheKey, prefix, id string, k objKey, verify func([]byte) error) ([]byte, error) {
	key := prefix + packKey(id)
	ck := cacheKey + "\x00" + key
	for attempt := 0; attempt < 2; attempt++ {
		entries, cached := p.cache.Get(ck)
		if !cached {
			es, err := readTrailer(ctx, b, key)
			if gcerrors.Code(err) == gcerrors.NotFound {
				z, lerr := p.readStaged(id, k)
				if lerr == nil {
					return z, verify(z)
				}
				if !errors.Is(lerr, os.ErrNotExist) {
					return nil, lerr
				}
				// Uploaded (and removed from staging) meanwhile: the bucket has it now.
				if es, err = readTrailer(ctx, b, key); err != nil {
					return nil, fmt.Errorf("pack %s: %w", key, err)
				}
			} else if err != nil {
				return nil, fmt.Errorf("pack %s: %w", key, err)
			}
			entries = make(map[objKey]packEntry, len(es))
			for _, e := range es {
				entries[e.objKey] = e
			}
			p.cache.Add(ck, entries)
		}
		e, ok := entries[k]
		if !ok {
			if cached {
				p.cache.Remove(ck)
				continue
			}
			return nil, fmt.Errorf("pack %s: %s: %w", key, k.name(), errNotInPack)
		}
		z, err := readRange(ctx, b, key, e.off, int64(e.zlen))
		if err == nil {
			err = verify(z)
		}
		if err != nil && cached {
			p.cache.Remove(ck)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("pack %s: %s: %w", key, k.name(), err)
		}
		return z, nil
	}
	return nil, fmt.Errorf("pack %s: %s: %w", key, k.name(), errNotInPack)
}

// readStaged reads object k of pack id from a staging area; os.ErrNotExist when no staging area
// holds the pack.
func (p *packReader) readStaged(id string, k objKey) ([]byte, error) {
	for _, dir := range stagingDirList(p.staging) {
		f, err := os.Open(filepath.Join(dir, id+PackSuffix))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		z, err := readLocalObject(f, k)
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("staged pack %s: %w", id, err)
		}
		return z, nil
	}
	return nil, os.ErrNotExist
}

// readLocalObject reads object k's frame from a pack file, sealed (trailer) or not (record scan).
func readLocalObject(f *os.File, k objKey) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	entries, err := readLocalTrailer(f, st.Size())
	if err != nil {
		entries, _ = scanRecords(f, st.Size())
	}
	for _, e := range entries {
		if e.objKey == k {
			z := make([]byte, e.zlen)
			if _, err := f.ReadAt(z, e.off); err != nil {
				return nil, err
			}
			return z, nil
		}
	}
	return nil, fmt.Errorf("%s: %w", k.name(), errNotInPack)
}

// readTrailer reads the entries of the pack at key with ranged reads.
func readTrailer(ctx context.Context, b *blob.Bucket, key string) ([]packEntry, error) {
	a, err := b.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	size := a.Size
	if size < footerSize {
		return nil, errNoFooter
	}
	ft, err := readRange(ctx, b, key, size-footerSize, footerSize)
	if err != nil {
		return nil, err
	}
	off, n, crc, err := decodeFooter(ft, size)
	if err != nil {
		return nil, err
	}
	t, err := readRange(ctx, b, key, off, int64(n))
	if err != nil {
		return nil, err
	}
	return decodeTrailer(t, crc, off)
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
