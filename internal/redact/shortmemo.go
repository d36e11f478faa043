package redact

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/zeebo/xxh3"
)

// shortMemo remembers short text values (shorter than MinCleanCacheLen) found clean, by their
// 128-bit hash seeded like the CleanCache's (kindShort: the cache's secret and the Redactor's
// fingerprint), never the values. Agent spans carry the same few short values on every span
// (span names such as "chat gpt-4o", server.address, gen_ai.provider.name, gen_ai.tool.type):
// scanning one costs 100 to 200 ns (the keyword automaton, digit clusters, colons), a lookup here
// about a tenth, without the CleanCache's lock and list. Lookups read an immutable map snapshot
// without a lock. A value is added when it is found clean a second time within the last
// shortSeenMax values found clean (ids that come once, such as response ids, do not fill it); at
// most shortMemoMax hashes are kept (each is 16 bytes: at most 64 KiB and the map's overhead),
// then it starts over.
type shortMemo struct {
	snap atomic.Pointer[map[xxh3.Uint128]struct{}]
	mu   sync.Mutex
	all  map[xxh3.Uint128]struct{}
	seen map[xxh3.Uint128]struct{}
}

const (
	shortMemoMax = 4096
	shortSeenMax = 8192
)

// shortClean reports whether s, a text value shorter than MinCleanCacheLen not under a
// credential key, is known clean; h is its hash, for shortAdd.
func (r *Redactor) shortClean(s string) (h xxh3.Uint128, clean bool) {
	h = xxh3.HashString128Seed(s, r.cleanSeed(kindShort))
	if m := r.short.snap.Load(); m != nil {
		_, clean = (*m)[h]
	}
	return h, clean
}

// shortAdd records that the value hashed h was found clean (see shortMemo). The snapshot is
// republished when the hashes added since the last one are more than a quarter of it, so that
// republishing costs O(1) per hash amortised; a full memo starts over (the values that recur on
// every span come back in after two sightings).
func (r *Redactor) shortAdd(h xxh3.Uint128) {
	m := &r.short
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, in := m.all[h]; in {
		if snap := m.snap.Load(); snap == nil || len(*snap) < len(m.all) {
			m.publish() // seen again before its snapshot
		}
		return
	}
	if _, twice := m.seen[h]; !twice {
		if m.seen == nil || len(m.seen) >= shortSeenMax {
			m.seen = map[xxh3.Uint128]struct{}{}
		}
		m.seen[h] = struct{}{}
		return
	}
	delete(m.seen, h)
	if m.all == nil || len(m.all) >= shortMemoMax {
		m.all = map[xxh3.Uint128]struct{}{}
		m.snap.Store(nil)
	}
	m.all[h] = struct{}{}
	snap := 0
	if p := m.snap.Load(); p != nil {
		snap = len(*p)
	}
	if len(m.all)-snap > snap/4 {
		m.publish()
	}
}

// publish stores a copy of all as the snapshot lookups read (under mu).
func (m *shortMemo) publish() {
	c := maps.Clone(m.all)
	m.snap.Store(&c)
}
