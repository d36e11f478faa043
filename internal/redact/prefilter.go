// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"slices"
	"strings"
	"unsafe"

	"github.com/coregx/ahocorasick"
)

// hotRange is a byte range [lo, hi) of a JSON document where some rule may trigger.
type hotRange struct{ lo, hi int }

// prefilter scans the raw bytes s[lo:hi] of the JSON document s, before it is walked, for
// everything that triggers a rule in Find: keyword matches (the same Aho-Corasick automaton, over
// an ASCII-lower-cased copy), digit clusters that pass a digit rule's gates, runs of hex digits and
// colons that could hold an IPv6 address, runs of token bytes that could hold a token of shape
// or a base64-encoded one (looseShapeRuns, looseEncodedRuns), and the escapes after which the raw bytes differ from
// the decoded text in a way that could hide a trigger (\u, \/, \b, \f). It appends those ranges
// (offsets in s) to w.hot in increasing order of lo, and the keyword matches to w.ms.
//
// It is sound for every string leaf: a trigger in a leaf's decoded text is a trigger in its raw
// bytes unless the leaf holds one of those escapes (keywords hold no '"', '\\' or control
// character, checked in New; \n \t \r \" \\ decode to bytes that are neither digits, separators
// of a digit cluster, hex digits nor colons, as their raw letters are not). No trigger holds a
// '"', so none crosses the edge of a string: scanning [lo, hi) finds the triggers of every
// string inside it when lo and hi are not inside a string, or are the edges of one (jsonEdits
// scans the bytes between strings known clean). It returns true when it cannot decide (a custom
// rule without keywords scans whole values): every leaf is then hot.
func (r *Redactor) prefilter(w *walker, s string, lo, hi int) (all bool) {
	if len(r.scanAll) > 0 || !r.prefilterOK {
		return true
	}
	start := len(w.hot)
	part := s[lo:hi]
	if r.ac != nil && len(part) > 0 {
		b := unsafe.Slice(unsafe.StringData(part), len(part))
		w.lower = appendLowerASCII(w.lower[:0], b)
		for _, m := range r.ac.FindAllOverlapping(w.lower) {
			m.Start, m.End = m.Start+lo, m.End+lo
			w.hot = append(w.hot, hotRange{m.Start, m.End})
			w.ms = append(w.ms, m)
		}
	}
	if len(r.digitIdx) > 0 {
		scanDigitClusters(part, func(a, b, digits int, dot bool) {
			for _, ri := range r.digitIdx {
				if ru := r.rules[ri]; digits >= ru.minDigits && (!ru.needDot || dot) {
					w.hot = append(w.hot, hotRange{a + lo, b + lo})
					return
				}
			}
		})
	}
	if r.ipv6 >= 0 {
		looseIPv6(part, func(a, b int) { w.hot = append(w.hot, hotRange{a + lo, b + lo}) })
	}
	if r.shape >= 0 {
		looseShapeRuns(part, func(a, b int) { w.hot = append(w.hot, hotRange{a + lo, b + lo}) })
		looseEncodedRuns(part, func(a, b int) { w.hot = append(w.hot, hotRange{a + lo, b + lo}) })
	}
	if r.entropy >= 0 {
		looseAssignedRuns(part, func(a, b int) { w.hot = append(w.hot, hotRange{a + lo, b + lo}) })
	}
	for i := 0; i < len(part); i++ {
		j := strings.IndexByte(part[i:], '\\')
		if j < 0 {
			break
		}
		i += j
		if i+1 < len(part) {
			switch part[i+1] {
			case 'u', '/', 'b', 'f':
				w.hot = append(w.hot, hotRange{i + lo, i + lo + 2})
			}
		}
		i++
	}
	sortHot(w.hot[start:])
	return false
}

// looseIPv6 calls f for each maximal run of hex digits, colons and dots holding at least two
// colons (a superset of what scanIPv6 accepts in any string leaf).
func looseIPv6(s string, f func(lo, hi int)) {
	n := len(s)
	for i := 0; i < n; i++ {
		j := strings.IndexByte(s[i:], ':')
		if j < 0 {
			return
		}
		i += j
		lo := i
		for lo > 0 && (isHex(s[lo-1]) || s[lo-1] == ':' || s[lo-1] == '.') {
			lo--
		}
		hi, colons := i, 0
		for hi < n && (isHex(s[hi]) || s[hi] == ':' || s[hi] == '.') {
			if s[hi] == ':' {
				colons++
			}
			hi++
		}
		for j := lo; j < i; j++ {
			if s[j] == ':' {
				colons++
			}
		}
		if colons >= 2 {
			f(lo, hi)
		}
		i = hi
	}
}

// sortHot sorts ranges by lo.
func sortHot(h []hotRange) {
	slices.SortFunc(h, func(a, b hotRange) int { return a.lo - b.lo })
}

// overlapsHot reports whether [lo, hi) overlaps a range of hot[*k:end]. Leaves are asked in
// increasing order, so *k advances past ranges that end before lo and is never moved back.
func overlapsHot(hot []hotRange, k *int, end, lo, hi int) bool {
	for *k < end && hot[*k].hi <= lo {
		*k++
	}
	for j := *k; j < end && hot[j].lo < hi; j++ {
		if hot[j].hi > lo {
			return true
		}
	}
	return false
}

// leafMatches returns the keyword matches of ms[*k:end] that lie inside [lo, hi), shifted to be
// relative to lo, in w.leafMs: for a leaf without escapes they are the matches the automaton would
// report on the leaf alone, in the same order. ms is ordered by match end and leaves are asked in
// increasing order, so *k advances past matches that end at or before lo.
func (w *walker) leafMatches(k *int, end, lo, hi int) []ahocorasick.Match {
	w.leafMs = w.leafMs[:0]
	for *k < end && w.ms[*k].End <= lo {
		*k++
	}
	for j := *k; j < end && w.ms[j].End <= hi; j++ {
		if m := w.ms[j]; m.Start >= lo {
			w.leafMs = append(w.leafMs, ahocorasick.Match{PatternID: m.PatternID, Start: m.Start - lo, End: m.End - lo})
		}
	}
	return w.leafMs
}

// leafMatchesEscaped is leafMatches for a leaf whose body raw holds escapes: when they are all
// \n \t \r \" or \\ (two raw bytes for one decoded byte that no keyword holds), the matches in
// the decoded text are exactly the raw matches that touch no escape, moved left by the escapes
// before them. ok is false when raw holds another escape (the caller runs the automaton).
func (w *walker) leafMatchesEscaped(k *int, end, lo, hi int, raw string) (ms []ahocorasick.Match, ok bool) {
	w.escs = w.escs[:0]
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if i+1 >= len(raw) {
			return nil, false
		}
		switch raw[i+1] {
		case 'n', 't', 'r', '"', '\\':
		default:
			return nil, false
		}
		w.escs = append(w.escs, i)
		i++
	}
	w.leafMs = w.leafMs[:0]
	for *k < end && w.ms[*k].End <= lo {
		*k++
	}
	for j := *k; j < end && w.ms[j].End <= hi; j++ {
		m := w.ms[j]
		if m.Start < lo {
			continue
		}
		a, b := m.Start-lo, m.End-lo
		n, _ := slices.BinarySearch(w.escs, a) // escapes before a
		if (n > 0 && w.escs[n-1]+2 > a) || (n < len(w.escs) && w.escs[n] < b) {
			continue // the match takes bytes of an escape: not a match in the decoded text
		}
		w.leafMs = append(w.leafMs, ahocorasick.Match{PatternID: m.PatternID, Start: a - n, End: b - n})
	}
	return w.leafMs, true
}
