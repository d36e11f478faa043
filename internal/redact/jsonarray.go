// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"strings"

	"github.com/zeebo/xxh3"
)

// maxElemDepth bounds the nesting skipValue follows inside one array element; a deeper element
// sends the document to the token walk (jsonEdits), which applies jsontext's limit of 10,000.
const maxElemDepth = 512

// elemSpan is the byte range [lo, hi) of one element of a JSON array.
type elemSpan struct{ lo, hi int }

// arrayEdits is jsonEdits for a document that is a JSON array, with a CleanCache. Agent traffic
// resends the conversation with every LLM call (gen_ai.input.messages holds every earlier message
// again), so verdicts are kept for runs of elements: the bytes from the start of one element to
// the end of a later one (or of the same one), hashed whole. First the longest runs from the
// first element are looked up (maxRunProbe of them: the whole array, then without its last
// element, ...), so a history seen in the call before costs one pass of hashing; then each
// element after the known run is looked up alone (a message seen in another attribute, such as
// the output messages of the call before) or, when not known, walked by jsonEdits on its own
// bytes, which also validates it. The verdicts found (clean, or the edits relative to the run's
// start: offsets and replacement tokens, never values) are added for each element walked and
// for the whole array.
//
// An element walked on its own gives the edits it gives inside the array: the walk's state does
// not cross an array element (credential keys apply to the member value after the key, in the
// same object; prefilter ranges are sound per string; the depth of JSON held in strings is the
// same). The array's framing (brackets, commas, white space) is checked here; each element's own
// grammar is checked by its walk when it is not known, and a known element is bytes that passed
// that walk before, under the same Redactor fingerprint and depth. handled is false, with w as it
// was, when s is not an array or anything here is in doubt (an empty array, an element nested
// deeper than maxElemDepth, framing or an element that does not parse): the caller then walks s
// as a whole, which decides validity as before.
func (r *Redactor) arrayEdits(w *walker, s string, depth int) (handled bool) {
	i := skipWS(s, 0)
	if i >= len(s) || s[i] != '[' {
		return false
	}
	elemsMark, editsMark := len(w.elems), len(w.edits)
	defer func() { w.elems = w.elems[:elemsMark] }()
	lo := skipWS(s, i+1)
	if lo >= len(s) || s[lo] == ']' {
		return false
	}
	seed := r.cleanSeed(uint64(kindElem) | uint64(depth)<<8)
	firstEnd, ok := skipValue(s, lo)
	if !ok {
		return false
	}
	// The head entry of the first element: the lengths of runs from it that were added, so that
	// a known history is found without framing it element by element.
	var head xxh3.Uint128
	known := 0
	if j := skipWS(s, firstEnd); j < len(s) && s[j] == ',' { // more than one element
		head = xxh3.HashString128Seed(s[lo:firstEnd], r.cleanSeed(uint64(kindRunHead)|uint64(depth)<<8))
		known = r.knownRun(w, s, lo, firstEnd, head, seed)
	}
	from, probe := lo, true
	if known > 0 {
		j := skipWS(s, known)
		if j < len(s) && s[j] == ']' {
			return skipWS(s, j+1) == len(s) || r.undo(w, editsMark)
		}
		if j >= len(s) || s[j] != ',' {
			return r.undo(w, editsMark)
		}
		from, probe = skipWS(s, j+1), false
	}
	if !frameElems(w, s, from) {
		return r.undo(w, editsMark)
	}
	first, last := elemsMark, len(w.elems)-1
	// the hash of the whole array as a run (added below, for the next call), taken before the
	// walks below, which reuse w.hasher for arrays held in strings
	var whole xxh3.Uint128
	if known > 0 {
		_, _ = w.hasher.WriteString(s[known:w.elems[last].hi])
		whole = w.hasher.Sum128()
	}
	// Without a head entry: the longest run from the first element that is known, among the
	// maxRunProbe longest (the history of the call before, whose new elements are at the end).
	// Runs of two or more are hashed in one pass.
	next := first
	if probe && last > first {
		p := max(first+1, last+1-maxRunProbe)
		hs := &w.hasher
		hs.ResetSeed(seed)
		_, _ = hs.WriteString(s[lo:w.elems[p-1].hi])
		var sums [maxRunProbe]xxh3.Uint128
		for k := p; k <= last; k++ {
			_, _ = hs.WriteString(s[w.elems[k-1].hi:w.elems[k].hi])
			sums[k-p] = hs.Sum128()
		}
		whole = sums[last-p]
		for k := last; k >= p; k-- {
			if known, le := r.cacheGet(sums[k-p]); known {
				if le != nil {
					w.appendCached(le, lo)
				}
				next = k + 1
				break
			}
		}
	}
	if known == 0 && next == first && !anyCacheable(w.elems[first:last+1]) {
		// Nothing known and no element long enough to be looked up alone (numbers, short
		// strings): one walk of the whole array gives the same edits (what the loop below
		// would add is only the verdict of the whole) for far less than a walk per element.
		if !r.jsonEdits(w, s, depth) {
			return r.undo(w, editsMark)
		}
		if last > first && len(w.edits)-editsMark <= maxCachedEdits {
			r.verdictAdd(whole, w.edits[editsMark:], lo)
			r.headAdd(head, w.elems[last].hi-lo)
		}
		return true
	}
	for k := next; k <= last; k++ {
		el := w.elems[k] // a copy: the walk below may append to w.elems (JSON arrays held in strings)
		raw := s[el.lo:el.hi]
		cacheable := len(raw) >= MinCleanCacheLen
		var h xxh3.Uint128
		if cacheable {
			var known bool
			var le *leafEdits
			if h, known, le = r.cacheLookup(raw, seed); known {
				if le != nil {
					w.appendCached(le, el.lo)
				}
				continue
			}
		}
		mark := len(w.edits)
		if !r.jsonEdits(w, raw, depth) {
			return r.undo(w, editsMark)
		}
		for e := mark; e < len(w.edits); e++ {
			ed := &w.edits[e]
			ed.start += el.lo
			ed.end += el.lo
			ed.f.Start, ed.f.End = ed.start, ed.end
		}
		if cacheable {
			r.verdictAdd(h, w.edits[mark:], el.lo)
		}
	}
	if hi := w.elems[last].hi; hi > firstEnd && next <= last {
		// the whole array is a run from the first element: the next call's history
		if len(w.edits)-editsMark <= maxCachedEdits {
			r.verdictAdd(whole, w.edits[editsMark:], lo)
			r.headAdd(head, hi-lo)
		}
	}
	return true
}

// anyCacheable reports whether one of els is long enough to be looked up alone (MinCleanCacheLen).
func anyCacheable(els []elemSpan) bool {
	for _, el := range els {
		if el.hi-el.lo >= MinCleanCacheLen {
			return true
		}
	}
	return false
}

// undo drops the edits appended since mark and returns false (handled: false).
func (r *Redactor) undo(w *walker, mark int) bool {
	w.edits = w.edits[:mark]
	return false
}

// knownRun looks up the runs from the element at s[lo:firstEnd] that its head entry names
// (longest first, at most maxRunTries of them hashed): for the first known one it appends its
// cached edits and returns its end; 0 when none is known.
func (r *Redactor) knownRun(w *walker, s string, lo, firstEnd int, head xxh3.Uint128, seed uint64) int {
	ok, he := r.cacheGet(head)
	if !ok || he == nil {
		return 0
	}
	tries := 0
	for _, n := range he.runLens {
		end := lo + int(n)
		if n == 0 || end <= firstEnd || end > len(s) || !isJSONValueEnd(s[end-1]) {
			continue
		}
		if j := skipWS(s, end); j >= len(s) || (s[j] != ',' && s[j] != ']') {
			continue
		}
		if tries++; tries > maxRunTries {
			break
		}
		hs := &w.hasher // left holding s[lo:end] for the hash of the whole array
		hs.ResetSeed(seed)
		_, _ = hs.WriteString(s[lo:end])
		if known, le := r.cacheGet(hs.Sum128()); known {
			if le != nil {
				w.appendCached(le, lo)
			}
			return end
		}
	}
	return 0
}

// frameElems appends to w.elems the elements of the array s from i (the start of an element) to
// its closing bracket, which must end s (white space aside); false when the framing does not
// parse.
func frameElems(w *walker, s string, i int) bool {
	if i >= len(s) {
		return false
	}
	for {
		end, ok := skipValue(s, i)
		if !ok {
			return false
		}
		w.elems = append(w.elems, elemSpan{i, end})
		j := skipWS(s, end)
		if j >= len(s) {
			return false
		}
		if s[j] == ']' {
			return skipWS(s, j+1) == len(s)
		}
		if s[j] != ',' {
			return false
		}
		if i = skipWS(s, j+1); i >= len(s) {
			return false
		}
	}
}

// isJSONValueEnd reports whether c may be the last byte of a JSON value.
func isJSONValueEnd(c byte) bool {
	return c == '}' || c == ']' || c == '"' || c == 'e' || c == 'l' || (c >= '0' && c <= '9')
}

// maxRunTries bounds the runs of a head entry hashed for one array (the first element may be
// shared by conversations, a system prompt sent as the first message: their runs then differ).
const maxRunTries = 2

// maxRunProbe is how many runs of elements arrayEdits looks up, longest first: a call's history
// is the history of the call before plus its new messages (one or two in an agent loop: the
// tool call and its result).
const maxRunProbe = 3

// skipWS returns the index of the first byte at or after i that is not JSON white space.
func skipWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value that starts at s[i]: after the bracket that closes
// an object or array, after the quote that closes a string, or at the first delimiter after a
// scalar. It follows strings (escapes included) and brackets only, and does not check the
// grammar inside the value: for valid JSON the end is exact, and a value that does not parse is
// found by the walk that examines it. ok is false when no end is found, when a closing bracket
// comes first, or past maxElemDepth.
func skipValue(s string, i int) (end int, ok bool) {
	depth := 0
	for i < len(s) {
		switch s[i] {
		case '"':
			j, ok := skipString(s, i)
			if !ok {
				return 0, false
			}
			if depth == 0 {
				return j, true
			}
			i = j
			continue
		case '{', '[':
			if depth++; depth > maxElemDepth {
				return 0, false
			}
		case '}', ']':
			if depth--; depth < 0 {
				return 0, false
			}
			if depth == 0 {
				return i + 1, true
			}
		default:
			if depth == 0 {
				j := i
				for j < len(s) && !isJSONDelim(s[j]) {
					j++
				}
				return j, j > i
			}
		}
		i++
	}
	return 0, false
}

// skipString returns the index after the quote that closes the string whose opening quote is
// s[i] (a quote preceded by an odd number of backslashes is escaped).
func skipString(s string, i int) (int, bool) {
	j := i + 1
	for {
		k := strings.IndexByte(s[j:], '"')
		if k < 0 {
			return 0, false
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && s[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, true
		}
		j = q + 1
	}
}

func isJSONDelim(c byte) bool {
	switch c {
	case ',', ']', '}', '[', '{', '"', ':', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}
