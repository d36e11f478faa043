package redact

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/zeebo/xxh3"
)

// CleanCacheEntryBytes is the memory one entry of a CleanCache takes (a 128-bit key in
// hashicorp/golang-lru's map and list), as measured by TestCleanCacheEntryBytes (about 100 bytes
// with Go 1.26 on amd64) and rounded up; NewCleanCache divides its byte bound by it.
const CleanCacheEntryBytes = 128

// MinCleanCacheLen is the shortest string (in bytes) looked up in or added to a CleanCache:
// hashing and a cache lookup cost about what scanning a string of this length does.
const MinCleanCacheLen = 64

// CleanCache remembers strings known to hold nothing to redact, so that text sent again (agent
// traffic resends the whole conversation with every LLM call) is not scanned again. It holds
// only verdicts, never values: an entry is a 128-bit xxh3 hash of the string's bytes, seeded with
// a random per-cache secret and the fingerprint of the Redactor's rule set (rules, their
// regexes, keywords and actions, the hash key), the way the string was examined (a whole value
// under its attribute key, a JSON string leaf, an object key, the JSON between two long string
// leaves) and, for whole values, the attribute key. A Redactor built from another configuration therefore never reuses a verdict,
// even from a shared cache, and only "no finding" is ever cached: a string with a finding is
// scanned every time. Entries are evicted least recently used (hashicorp/golang-lru). Safe for
// concurrent use.
//
// A hash collision would let a string pass unscanned: with 128 bits the chance is about 2^-128
// per pair of strings, and the random secret keeps anyone who cannot read the process's memory
// from computing strings that collide with a cached one.
type CleanCache struct {
	lru          *lru.Cache[xxh3.Uint128, struct{}]
	seed         uint64
	hits, misses atomic.Int64
	maxEntries   int
}

// NewCleanCache returns a cache bounded to about maxBytes of memory (maxBytes /
// CleanCacheEntryBytes entries, at least 1). It returns nil when maxBytes <= 0: a nil
// *CleanCache is a disabled cache.
func NewCleanCache(maxBytes int64) *CleanCache {
	if maxBytes <= 0 {
		return nil
	}
	n := int(max(1, maxBytes/CleanCacheEntryBytes))
	c, err := lru.New[xxh3.Uint128, struct{}](n)
	if err != nil {
		panic(err) // only for n <= 0
	}
	var seed [8]byte
	_, _ = rand.Read(seed[:]) // crypto/rand.Read never fails (Go 1.24+)
	return &CleanCache{lru: c, seed: binary.LittleEndian.Uint64(seed[:]), maxEntries: n}
}

// CleanCacheStats are a cache's lookup counts since it was made and its size.
type CleanCacheStats struct {
	Hits, Misses      int64
	Entries, Capacity int
}

// Stats returns the lookup counts and the number of entries.
func (c *CleanCache) Stats() CleanCacheStats {
	if c == nil {
		return CleanCacheStats{}
	}
	return CleanCacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Entries: c.lru.Len(), Capacity: c.maxEntries}
}

// Purge removes every entry (the counts stay).
func (c *CleanCache) Purge() {
	if c != nil {
		c.lru.Purge()
	}
}

// kinds of examination, mixed into the seed: the same bytes examined another way may have
// another verdict
const (
	kindValue    = 1 // a whole value under an attribute key (RedactValue)
	kindLeaf     = 2 // a JSON string leaf that may itself be walked as JSON
	kindLeafText = 3 // a JSON string leaf at maxJSONDepth: text only
	kindName     = 4 // a JSON object key: text only
	kindBetween  = 5 // the JSON between two long strings: the prefilter finds no trigger in it
)

// cleanKey is the seed of the hashes of one Redactor for one kind of examination.
func (r *Redactor) cleanSeed(kind uint64) uint64 {
	return r.cleanBase ^ (kind * 0x9E3779B97F4A7C15)
}

// cleanLookup reports whether s is known clean under seed; it returns the hash for cleanAdd.
func (r *Redactor) cleanLookup(s string, seed uint64) (xxh3.Uint128, bool) {
	h := xxh3.HashString128Seed(s, seed)
	_, ok := r.cache.lru.Get(h)
	if ok {
		r.cache.hits.Add(1)
	} else {
		r.cache.misses.Add(1)
	}
	return h, ok
}

func (r *Redactor) cleanAdd(h xxh3.Uint128) { r.cache.lru.Add(h, struct{}{}) }

// valueSeed is the seed of whole values under key.
func (r *Redactor) valueSeed(key string) uint64 {
	return xxh3.HashStringSeed(key, r.cleanSeed(kindValue))
}

// fingerprint returns a digest of everything that decides what r finds: the active rules in
// priority order with their category, action, regex, keywords and window, the custom rules'
// validators, and the hash key. Built-in checks are code: within one process they are the same
// for equal rule names.
func (r *Redactor) fingerprint(cfg Config) uint64 {
	h := sha256.New()
	type ruleFP struct {
		Name, Cat, Action, Regex string
		Keywords                 []string
		Group, Before, After     int
		ScanAll, Digits, NeedDot bool
		KwBoundary, Narrow       bool
		MinDigits                int
	}
	fps := make([]ruleFP, 0, len(r.rules))
	for _, ru := range r.rules {
		re := ""
		if ru.re != nil {
			re = ru.re.String()
		}
		fps = append(fps, ruleFP{ru.name, string(ru.cat), string(ru.action), re, ru.keywords, ru.group, ru.before, ru.after,
			ru.scanAll, ru.digits, ru.needDot, ru.kwBoundary, ru.narrow != nil, ru.minDigits})
	}
	validators := make([]string, 0, len(cfg.Custom))
	for _, cr := range cfg.Custom {
		validators = append(validators, cr.Name+"="+cr.Validator)
	}
	slices.Sort(validators)
	b, err := json.Marshal(struct {
		Rules      []ruleFP
		Validators []string
	}{fps, validators})
	if err != nil {
		panic(fmt.Sprintf("redact: fingerprint: %v", err)) // plain strings and ints: cannot fail
	}
	h.Write(b)
	key := sha256.Sum256(r.hashKey)
	h.Write(key[:])
	sum := h.Sum(nil)
	return binary.LittleEndian.Uint64(sum)
}
