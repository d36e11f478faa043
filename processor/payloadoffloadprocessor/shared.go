package payloadoffloadprocessor

import (
	"context"
	"path/filepath"
	"sync"

	"go.uber.org/zap"

	"github.com/runagain/runagain/internal/payloadref"
)

// sharedStores holds the pack-layout Stores open in this process, by bucket and data directory:
// the traces and the logs instance of payload_offload (and several pipelines) write through one
// Store, since only one writer may hold a staging area. The last release closes it.
var sharedStores = struct {
	sync.Mutex
	m map[string]*sharedStore
}{m: map[string]*sharedStore{}}

type sharedStore struct {
	s    *payloadref.Store
	refs int
}

// acquireStore opens (or shares) the Store for url and opts; release closes it after the last user.
func acquireStore(ctx context.Context, url string, opts payloadref.StoreOptions) (*payloadref.Store, func() error, error) {
	if opts.Dir == "" {
		s, err := payloadref.NewStore(ctx, url, opts)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, nil, err
	}
	key := url + "\x00" + dir
	sharedStores.Lock()
	defer sharedStores.Unlock()
	sh, ok := sharedStores.m[key]
	if !ok {
		s, err := payloadref.NewStore(ctx, url, opts)
		if err != nil {
			return nil, nil, err
		}
		sh = &sharedStore{s: s}
		sharedStores.m[key] = sh
		if opts.Logger != nil {
			// The digest index's memory bound: the location cache, and the digest filter (sized
			// from the index's rows; rebuilt larger when they pass its capacity).
			st := s.StatsAtOpen() // the rows NewStore just read: not a second scan of the index
			opts.Logger.Info("payload_offload: pack store open", zap.String("dir", dir),
				zap.Int("index_cache_limit", opts.KnownObjects), zap.Int("index_cache_limit_bytes_approx", opts.KnownObjects*100),
				zap.Int64("indexed_objects", st.IndexedObjects), zap.Uint("index_filter_capacity", st.FilterCapacity),
				zap.Int64("index_filter_bytes", st.FilterBytes))
		}
	}
	sh.refs++
	var once sync.Once
	release := func() error {
		var err error
		once.Do(func() {
			sharedStores.Lock()
			defer sharedStores.Unlock()
			sh.refs--
			if sh.refs == 0 {
				delete(sharedStores.m, key)
				if st, serr := sh.s.Stats(context.Background()); serr == nil && opts.Logger != nil {
					// The digest index's memory bound, reported (issue 17: "its size reported").
					opts.Logger.Info("payload_offload: closing the pack store",
						zap.Int("index_cache_entries", st.CachedLocations), zap.Int("index_cache_limit", opts.KnownObjects),
						zap.Int64("indexed_objects", st.IndexedObjects), zap.Int64("index_filter_bytes", st.FilterBytes),
						zap.Int64("packs_uploaded", st.PacksUploaded),
						zap.Int("packs_staged", st.StagedPacks))
				}
				err = sh.s.Close()
			}
		})
		return err
	}
	return sh.s, release, nil
}
