// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"sync"

	"github.com/zeebo/xxh3"
)

// shortMemo remembers short text values (shorter than MinCleanCacheLen) found clean, by their
// 128-bit hash seeded like the CleanCache's (kindShort: the cache's secret and the Redactor's
// fingerprint), never the values. Agent spans carry the same few short values on every span
// (span names such as "chat gpt-4o", server.address, gen_ai.provider.name, gen_ai.tool.type):
// scanning one costs 100 to 200 ns (the keyword automaton, digit clusters, colons), a lookup here
// a fraction of that, without the CleanCache's lock and list. Lookups read a sync.Map (lock-free
// reads, an addition is visible at once and costs O(1): no snapshot is copied). A value is added
// when it is found clean a second time within the last shortSeenMax values found clean (ids that
// come once, such as response ids, do not fill it); at most shortMemoMax hashes are kept (each
// is 16 bytes, with sync.Map's overhead), then it starts over.
type shortMemo struct {
	hashes sync.Map // xxh3.Uint128 -> struct{}
	mu     sync.Mutex
	n      int // hashes held, under mu
	seen   map[xxh3.Uint128]struct{}
}

const (
	shortMemoMax = 4096
	shortSeenMax = 8192
)

// shortClean reports whether s, a text value shorter than MinCleanCacheLen not under a
// credential key, is known clean; h is its hash, for shortAdd.
func (r *Redactor) shortClean(s string) (h xxh3.Uint128, clean bool) {
	h = xxh3.HashString128Seed(s, r.cleanSeed(kindShort))
	_, clean = r.short.hashes.Load(h)
	return h, clean
}

// shortAdd records that the value hashed h was found clean (see shortMemo); a full memo starts
// over (the values that recur on every span come back in after two sightings).
func (r *Redactor) shortAdd(h xxh3.Uint128) {
	m := &r.short
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, in := m.hashes.Load(h); in {
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
	if m.n >= shortMemoMax {
		m.hashes.Clear()
		m.n = 0
	}
	m.hashes.Store(h, struct{}{})
	m.n++
}

// len returns the number of hashes held.
func (m *shortMemo) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}
