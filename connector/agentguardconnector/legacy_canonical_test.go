// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

// The hand-written canonical form that canonicalJSON used before jsonkit, kept for the benchmark
// that compares the two (BenchmarkCanonicalJSON).

import (
	"slices"
	"strings"
)

func legacyCanonicalJSON(dst []byte, src string) (out []byte, ok bool) {
	i := legacySkipSpace(src, 0)
	out, i, ok = legacyCanonValue(dst, src, i, 0)
	if !ok || legacySkipSpace(src, i) != len(src) {
		return dst, false
	}
	return out, true
}

const legacyMaxDepth = 64

func legacySkipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// legacyScanString returns the index after the string starting at s[i] == '"'.
func legacyScanString(s string, i int) (int, bool) {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

func legacyCanonValue(dst []byte, s string, i, depth int) ([]byte, int, bool) {
	if i >= len(s) || depth > legacyMaxDepth {
		return dst, i, false
	}
	switch c := s[i]; {
	case c == '"':
		j, ok := legacyScanString(s, i)
		if !ok {
			return dst, i, false
		}
		return append(dst, s[i:j]...), j, true
	case c == '{':
		return legacyCanonObject(dst, s, i, depth)
	case c == '[':
		dst = append(dst, '[')
		i = legacySkipSpace(s, i+1)
		if i < len(s) && s[i] == ']' {
			return append(dst, ']'), i + 1, true
		}
		for {
			var ok bool
			if dst, i, ok = legacyCanonValue(dst, s, i, depth+1); !ok {
				return dst, i, false
			}
			i = legacySkipSpace(s, i)
			if i >= len(s) {
				return dst, i, false
			}
			if s[i] == ']' {
				return append(dst, ']'), i + 1, true
			}
			if s[i] != ',' {
				return dst, i, false
			}
			dst = append(dst, ',')
			i = legacySkipSpace(s, i+1)
		}
	default:
		// number, true, false, null: copy up to the next delimiter
		j := i
	scan:
		for ; j < len(s); j++ {
			switch s[j] {
			case ',', ']', '}', ' ', '\t', '\n', '\r':
				break scan
			}
		}
		if j == i {
			return dst, i, false
		}
		return append(dst, s[i:j]...), j, true
	}
}

type legacyMember struct {
	key string
	val []byte
}

func legacyCanonObject(dst []byte, s string, i, depth int) ([]byte, int, bool) {
	i = legacySkipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return append(dst, '{', '}'), i + 1, true
	}
	var stack [8]legacyMember
	members := stack[:0]
	for {
		if i >= len(s) || s[i] != '"' {
			return dst, i, false
		}
		j, ok := legacyScanString(s, i)
		if !ok {
			return dst, i, false
		}
		key := s[i:j]
		i = legacySkipSpace(s, j)
		if i >= len(s) || s[i] != ':' {
			return dst, i, false
		}
		i = legacySkipSpace(s, i+1)
		// The value is canonicalised at the end of dst (as scratch space) and copied out of
		// it when the members are written in key order.
		start := len(dst)
		if dst, i, ok = legacyCanonValue(dst, s, i, depth+1); !ok {
			return dst, i, false
		}
		members = append(members, legacyMember{key, dst[start:len(dst):len(dst)]})
		i = legacySkipSpace(s, i)
		if i >= len(s) {
			return dst, i, false
		}
		if s[i] == '}' {
			i++
			break
		}
		if s[i] != ',' {
			return dst, i, false
		}
		i = legacySkipSpace(s, i+1)
	}
	slices.SortStableFunc(members, func(a, b legacyMember) int { return strings.Compare(a.key, b.key) })
	// The canonical values sit at the end of dst in source order; write the object after them
	// and move it down over them.
	valuesStart := len(dst)
	for _, m := range members {
		valuesStart -= len(m.val)
	}
	out := len(dst)
	dst = append(dst, '{')
	for k, m := range members {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, m.key...)
		dst = append(dst, ':')
		dst = append(dst, m.val...)
	}
	dst = append(dst, '}')
	n := copy(dst[valuesStart:], dst[out:])
	return dst[:valuesStart+n], i, true
}
