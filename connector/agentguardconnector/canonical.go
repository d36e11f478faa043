package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"slices"
	"strings"
)

// canonicalJSON appends to dst a canonical form of the JSON text src: whitespace outside strings
// removed and object members sorted by their raw key bytes, recursively. Strings and numbers are
// kept byte for byte (so "1.0" and "1" differ, as do differently escaped equal strings). ok is
// false for text that is not one well-formed JSON value; dst is then unspecified.
//
// It replaces decoding into interface{} and re-encoding, which costs several allocations per
// value on the hot path of loop detection.
func canonicalJSON(dst []byte, src string) (out []byte, ok bool) {
	i := skipSpace(src, 0)
	out, i, ok = canonValue(dst, src, i, 0)
	if !ok || skipSpace(src, i) != len(src) {
		return dst, false
	}
	return out, true
}

const maxDepth = 64

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index after the string starting at s[i] == '"'.
func scanString(s string, i int) (int, bool) {
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

func canonValue(dst []byte, s string, i, depth int) ([]byte, int, bool) {
	if i >= len(s) || depth > maxDepth {
		return dst, i, false
	}
	switch c := s[i]; {
	case c == '"':
		j, ok := scanString(s, i)
		if !ok {
			return dst, i, false
		}
		return append(dst, s[i:j]...), j, true
	case c == '{':
		return canonObject(dst, s, i, depth)
	case c == '[':
		dst = append(dst, '[')
		i = skipSpace(s, i+1)
		if i < len(s) && s[i] == ']' {
			return append(dst, ']'), i + 1, true
		}
		for {
			var ok bool
			if dst, i, ok = canonValue(dst, s, i, depth+1); !ok {
				return dst, i, false
			}
			i = skipSpace(s, i)
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
			i = skipSpace(s, i+1)
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

type member struct {
	key string
	val []byte
}

func canonObject(dst []byte, s string, i, depth int) ([]byte, int, bool) {
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return append(dst, '{', '}'), i + 1, true
	}
	var stack [8]member
	members := stack[:0]
	for {
		if i >= len(s) || s[i] != '"' {
			return dst, i, false
		}
		j, ok := scanString(s, i)
		if !ok {
			return dst, i, false
		}
		key := s[i:j]
		i = skipSpace(s, j)
		if i >= len(s) || s[i] != ':' {
			return dst, i, false
		}
		i = skipSpace(s, i+1)
		// The value is canonicalised at the end of dst (as scratch space) and copied out of
		// it when the members are written in key order.
		start := len(dst)
		if dst, i, ok = canonValue(dst, s, i, depth+1); !ok {
			return dst, i, false
		}
		members = append(members, member{key, dst[start:len(dst):len(dst)]})
		i = skipSpace(s, i)
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
		i = skipSpace(s, i+1)
	}
	slices.SortStableFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
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
