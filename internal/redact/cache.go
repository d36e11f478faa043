// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/zeebo/xxh3"
)

// CleanCacheEntryBytes is the memory one entry of a CleanCache takes at most: a 128-bit key and
// a pointer in hashicorp/golang-lru's map and list, measured by TestCleanCacheEntryBytes at 100
// to 120 bytes (Go 1.26, amd64), with room for the map's growth steps (a map just grown holds
// about twice the slots it needs). NewCleanCache divides its byte bound by it.
const CleanCacheEntryBytes = 160

// MinCleanCacheLen is the shortest string (in bytes) looked up in or added to a CleanCache:
// hashing and a cache lookup cost about what scanning a string of this length does.
const MinCleanCacheLen = 64

// CleanCache remembers strings known to hold nothing to redact, so that text sent again (agent
// traffic resends the whole conversation with every LLM call) is not scanned again, and, for
// JSON string leaves with findings, the edits their examination gave (offsets and replacement
// tokens: "[REDACTED:rule]" or "rule:<HMAC digits>", never the values they replace), so that a
// resent message holding a planted phone number is not scanned again either; the same for the
// elements of JSON arrays and runs of consecutive elements (arrayEdits: a resent history is
// looked up as one run). It holds no value: an entry is a 128-bit xxh3 hash of the string's bytes, seeded with
// a random per-cache secret and the fingerprint of the Redactor's rule set (rules, their
// regexes, keywords and actions, the hash key), the way the string was examined (a whole value
// under its attribute key, a JSON string leaf, an object key, the JSON between two long string
// leaves, array elements and runs) and, for whole values, the attribute key. A Redactor built from another configuration therefore never reuses a verdict,
// even from a shared cache. Whole values are cached only when clean; a value or leaf that looked
// like JSON and did not parse is examined every time. Entries are evicted least recently used (hashicorp/golang-lru). Safe for
// concurrent use.
//
// A hash collision would let a string pass unscanned: with 128 bits the chance is about 2^-128
// per pair of strings, and the random secret keeps anyone who cannot read the process's memory
// from computing strings that collide with a cached one.
type CleanCache struct {
	// lru maps a hash to nil (the string is clean) or, for JSON string leaves, to the edits its
	// examination gave (replacement tokens at offsets: never the values they replace)
	lru          *lru.Cache[xxh3.Uint128, *leafEdits]
	seed         uint64
	hits, misses atomic.Int64
	maxEntries   int
	maxBytes     int64
	editBytes    atomic.Int64 // bytes of the edits held (beyond CleanCacheEntryBytes per entry)
}

// leafEdits are the edits of a JSON string leaf (or array elements) with findings, relative to
// the leaf's body; or, for a head entry (kindRunHead), the byte lengths of the runs of elements
// from an array's first element that were added, most recent first (lengths, never values).
type leafEdits struct {
	edits   []cachedEdit
	size    int64 // bytes held, for the bound
	runLens [maxRunLens]int32
}

// maxRunLens is how many run lengths a head entry keeps.
const maxRunLens = 4

// headEntryBytes is what a head entry takes beyond CleanCacheEntryBytes (the leafEdits).
const headEntryBytes = 64

type cachedEdit struct {
	start, end int // in the leaf's raw body
	repl       string
	rule       string
	cat        Category
	action     Action
}

// maxCachedEdits bounds the findings of a leaf whose edits are cached.
const maxCachedEdits = 16

// NewCleanCache returns a cache bounded to about maxBytes of memory (maxBytes /
// CleanCacheEntryBytes entries at most, fewer when cached edits take room). It returns nil when
// maxBytes <= 0: a nil *CleanCache is a disabled cache.
func NewCleanCache(maxBytes int64) *CleanCache {
	if maxBytes <= 0 {
		return nil
	}
	n := int(max(1, maxBytes/CleanCacheEntryBytes))
	c := &CleanCache{maxEntries: n, maxBytes: maxBytes}
	l, err := lru.NewWithEvict(n, func(_ xxh3.Uint128, e *leafEdits) {
		if e != nil {
			c.editBytes.Add(-e.size)
		}
	})
	if err != nil {
		panic(err) // only for n <= 0
	}
	c.lru = l
	var seed [8]byte
	_, _ = rand.Read(seed[:]) // crypto/rand.Read never fails (Go 1.24+)
	c.seed = binary.LittleEndian.Uint64(seed[:])
	return c
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
	kindValue   = 1 // a whole value under an attribute key (RedactValue)
	kindLeaf    = 2 // a JSON string leaf that may itself be walked as JSON
	kindName    = 4 // a JSON object key: text only
	kindBetween = 5 // the JSON between two long strings: the prefilter finds no trigger in it
	kindElem    = 6 // one or more consecutive elements of a JSON array (arrayEdits)
	kindRunHead = 7 // the first element of an array: the lengths of the known runs from it
	kindShort   = 8 // a short text value found clean (shortMemo), under any key that is not a credential key
)

// cleanKey is the seed of the hashes of one Redactor for one kind of examination.
func (r *Redactor) cleanSeed(kind uint64) uint64 {
	return r.cleanBase ^ (kind * 0x9E3779B97F4A7C15)
}

// cleanLookup reports whether s is known clean under seed; it returns the hash for cleanAdd.
func (r *Redactor) cleanLookup(s string, seed uint64) (xxh3.Uint128, bool) {
	h, known, e := r.cacheLookup(s, seed)
	return h, known && e == nil
}

// cacheLookup looks s up under seed: known, and then e is nil when s is clean or the edits of
// the leaf s.
func (r *Redactor) cacheLookup(s string, seed uint64) (h xxh3.Uint128, known bool, e *leafEdits) {
	h = xxh3.HashString128Seed(s, seed)
	known, e = r.cacheGet(h)
	return h, known, e
}

// cacheGet is cacheLookup for a hash already computed.
func (r *Redactor) cacheGet(h xxh3.Uint128) (known bool, e *leafEdits) {
	e, known = r.cache.lru.Get(h)
	if known {
		r.cache.hits.Add(1)
	} else {
		r.cache.misses.Add(1)
	}
	return known, e
}

func (r *Redactor) cleanAdd(h xxh3.Uint128) { r.cache.lru.Add(h, nil) }

// verdictAdd adds what the examination of a string or run starting at cs gave: clean when es is
// empty, else its edits (see editsAdd).
func (r *Redactor) verdictAdd(h xxh3.Uint128, es []edit, cs int) {
	if len(es) == 0 {
		r.cleanAdd(h)
		return
	}
	r.editsAdd(h, es, cs)
}

// editsAdd remembers the edits es of the leaf whose body starts at cs (at most maxCachedEdits;
// the least recently used entries go while the edits take the cache past its byte bound).
func (r *Redactor) editsAdd(h xxh3.Uint128, es []edit, cs int) {
	if len(es) > maxCachedEdits {
		return
	}
	le := &leafEdits{edits: make([]cachedEdit, len(es)), size: 64}
	for i, e := range es {
		le.edits[i] = cachedEdit{start: e.start - cs, end: e.end - cs, repl: e.repl, rule: e.f.Rule, cat: e.f.Category, action: e.f.Action}
		le.size += 96 + int64(len(e.repl))
	}
	r.entryAdd(h, le)
}

// entryAdd adds le under h, counting its bytes once, and evicts the least recently used entries
// while the cache is past its byte bound.
func (r *Redactor) entryAdd(h xxh3.Uint128, le *leafEdits) {
	c := r.cache
	// Counted only when added: golang-lru's Add replaces an existing key without its eviction
	// callback, so two walks missing on the same leaf at once would count its bytes twice forever.
	if found, _ := c.lru.ContainsOrAdd(h, le); found {
		return
	}
	c.editBytes.Add(le.size)
	for c.editBytes.Load()+int64(c.lru.Len())*CleanCacheEntryBytes > c.maxBytes {
		if _, _, ok := c.lru.RemoveOldest(); !ok {
			break
		}
	}
}

// headAdd records n as the length of a known run from the first element whose head hash is h:
// the head entry is replaced by one with n first, then the lengths it held.
func (r *Redactor) headAdd(h xxh3.Uint128, n int) {
	if n <= 0 || n > math.MaxInt32 {
		return
	}
	c := r.cache
	ne := &leafEdits{size: headEntryBytes}
	ne.runLens[0] = int32(n)
	if old, ok := c.lru.Peek(h); ok && old != nil {
		if old.runLens[0] == int32(n) {
			return
		}
		k := 1
		for _, m := range old.runLens {
			if m != 0 && m != int32(n) && k < maxRunLens {
				ne.runLens[k] = m
				k++
			}
		}
		c.lru.Remove(h) // its bytes are subtracted by the eviction callback
	}
	r.entryAdd(h, ne)
}

// appendCached appends the cached edits of the leaf whose body starts at cs.
func (w *walker) appendCached(le *leafEdits, cs int) {
	for _, e := range le.edits {
		f := Finding{Rule: e.rule, Category: e.cat, Action: e.action, Start: cs + e.start, End: cs + e.end}
		w.edits = append(w.edits, edit{start: f.Start, end: f.End, repl: e.repl, f: f})
	}
}

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
