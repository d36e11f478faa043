package erase

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/klauspost/compress/zstd"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/runagain/runagain/internal/payloadref"
	"github.com/runagain/runagain/internal/store"
)

// SingleObjects sweeps a bucket in payloadref's one-object-per-digest layout
// (sha256/<hex>.zst and .manifest.zst): an object no live reference reaches (manifests
// followed) and last modified before the sweep's cutoff is deleted. It is the sweeper for
// buckets without a pack index.
type SingleObjects struct {
	URL string // the payload bucket URL (runagain_storage payloads::url)
	// Grace keeps unreferenced objects modified less than this long before the sweep began
	// (values on their way to the hot tier). Erasure sweeps ignore it.
	Grace time.Duration
	Now   func() time.Time // default time.Now
}

// Where implements PayloadSweeper.
func (s *SingleObjects) Where() string { return s.URL }

type objID struct {
	sum      [32]byte
	manifest bool
}

// Sweep implements PayloadSweeper.
func (s *SingleObjects) Sweep(ctx context.Context, live store.LiveRefs, o SweepOptions) (PayloadStats, error) {
	var st PayloadStats
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	start := now()
	cutoff := start.Add(-s.Grace)
	u, err := url.Parse(s.URL)
	if err != nil {
		return st, fmt.Errorf("payload bucket %q: %w", s.URL, err)
	}
	q := u.Query()
	prefix := q.Get("prefix")
	q.Del("prefix")
	u.RawQuery = q.Encode()
	b, closeFn, err := payloadref.OpenBucket(ctx, u.String())
	if err != nil {
		return st, err
	}
	defer closeFn() //nolint:errcheck // read and delete only
	dec, err := zstd.NewReader(nil)
	if err != nil {
		return st, err
	}
	defer dec.Close()

	marked := map[objID]bool{}
	var walk func(id objID, depth int) error
	mark := func(refs store.LiveRefs) error {
		var werr error
		if err := refs(func(uri string) bool {
			_, key, err := payloadref.SplitURI(uri)
			if err != nil {
				return true
			}
			sum, manifest, err := payloadref.ParseKey(key)
			if err != nil {
				return true
			}
			werr = walk(objID{sum, manifest}, 0)
			return werr == nil
		}); err != nil {
			return fmt.Errorf("references: %w", err)
		}
		return werr
	}
	walk = func(id objID, depth int) error {
		if marked[id] {
			return nil
		}
		marked[id] = true
		if !id.manifest || depth > 64 {
			return nil
		}
		raw, err := b.ReadAll(ctx, prefix+payloadref.ManifestKey(id.sum))
		if gcerrors.Code(err) == gcerrors.NotFound {
			return nil
		}
		if err != nil {
			return err
		}
		// A manifest that cannot be read leaves its children unmarked, and the sweep would delete
		// live data: stop, naming it, as payloadref Collect does.
		key := prefix + payloadref.ManifestKey(id.sum)
		plain, err := dec.DecodeAll(raw, nil)
		if err != nil {
			return fmt.Errorf("manifest %s: %w (sweep stopped: nothing deleted)", key, err)
		}
		var m payloadref.Manifest
		if err := json.Unmarshal(plain, &m); err != nil {
			return fmt.Errorf("manifest %s: %w (sweep stopped: nothing deleted)", key, err)
		}
		for _, p := range m.Parts {
			if p.Ref == "" {
				continue
			}
			var c objID
			if _, err := hex.Decode(c.sum[:], []byte(p.Ref)); err != nil {
				continue
			}
			c.manifest = p.M
			if err := walk(c, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	// The erased rows' objects first: whatever of them the live references do not reach goes,
	// however recent.
	if len(o.Erased) > 0 {
		if err := mark(func(yield func(string) bool) error {
			for _, u := range o.Erased {
				if !yield(u) {
					break
				}
			}
			return nil
		}); err != nil {
			return st, err
		}
	}
	erased := marked
	marked = map[objID]bool{}
	if err := mark(live); err != nil {
		return st, err
	}
	for id := range erased {
		if marked[id] {
			st.KeptShared++
		}
	}
	it := b.List(&blob.ListOptions{Prefix: prefix + payloadref.KeyDir})
	for {
		obj, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, fmt.Errorf("list %s: %w", s.URL, err)
		}
		if obj.IsDir {
			continue
		}
		sum, manifest, err := payloadref.ParseKey(obj.Key)
		if err != nil || marked[objID{sum, manifest}] {
			continue
		}
		if !obj.ModTime.Before(cutoff) && !erased[objID{sum, manifest}] {
			st.KeptRecent++
			continue
		}
		if err := b.Delete(ctx, obj.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return st, fmt.Errorf("delete %s: %w", obj.Key, err)
		}
		st.ObjectsDeleted++
		st.BytesFreed += obj.Size
	}
	return st, nil
}

var _ PayloadSweeper = (*SingleObjects)(nil)

// NewSweeper returns the sweeper of the payload bucket at url: grace spares unreferenced objects
// referenced or written less than grace before the sweep (now is the clock; nil for time.Now).
// With dir (runagain_storage payloads::dir) it is the pack layout's (Packs: payloadref Collect
// through the digest index, single objects included); without, single objects only.
func NewSweeper(url, dir string, grace time.Duration, now func() time.Time) PayloadSweeper {
	if dir != "" {
		return &Packs{URL: url, Dir: dir, Grace: grace, Now: now}
	}
	return &SingleObjects{URL: url, Grace: grace, Now: now}
}
