// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"context"

	"github.com/runagain/runagain/internal/payloadref/collect"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

// Collect deletes the payload objects of this store that no live reference reaches, one Collect
// at a time in this process: see collect.Run for what it removes and what it guarantees writers
// (with Batch). The objects it removes are forgotten by this Store's caches.
func (s *Store) Collect(ctx context.Context, live collect.LiveRefs, opts collect.Options) (collect.Stats, error) {
	s.collectMu.Lock()
	defer s.collectMu.Unlock()
	return collect.Run(ctx, collect.Target{
		Bucket:    s.bucket,
		Prefix:    s.prefix,
		URI:       s.URI,
		Index:     s.index,
		Staging:   s.staging,
		Dec:       s.dec,
		Enc:       s.benc,
		BlockSize: s.opts.PackBlockSize,
		Now:       s.now,
		Logf:      s.logger,
		Forget:    s.locsForget,
		ForgetKey: func(key string) { s.known.Remove(key) },
	}, live, opts)
}

// locsForget drops collected objects from the in-memory location cache.
func (s *Store) locsForget(pack string, keys []ref.Object) {
	for _, k := range keys {
		if c, ok := s.locs.Peek(k); ok && c.pack == pack {
			s.locs.Remove(k)
		}
	}
}
