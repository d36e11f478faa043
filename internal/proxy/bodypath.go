// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/theory/jsonpath"
	"github.com/theory/jsonpath/spec"
)

// bodyPath is a JSON path into a request body (--ignore-body-field, --set), evaluated by
// github.com/theory/jsonpath, an implementation of JSONPath as RFC 9535 defines it. It is
// written either as an RFC 9535 query, starting with "$" ("$.messages[*].id",
// "$..request_id", "$.messages[?@.role=='system'].id", "$['x-trace']"), or in the short form
// the flags have always taken: keys separated by ".", "[N]" for one array element, "[*]" for
// every element ("metadata.request_id", "messages[*].id", "messages[0].content"). A short-form
// key is taken literally, whatever it holds ("x-request-id", "0"; RFC 9535's dot notation
// allows neither), so the short form is rewritten in bracket notation
// ($['metadata']['request_id'], $['messages'][*]['id']) and parsed as RFC 9535.
//
// As in RFC 9535, a key selects only an object member and an index only an array element. In
// the short form "[*]" selects array elements only, as it always has; RFC 9535's wildcard also
// selects an object's members, so those matches are dropped (shortSelects).
type bodyPath struct {
	text  string // as given
	path  *jsonpath.Path
	short bool // given in the short form
	// wild[i]: segment i of a short-form path is "[*]" (a short-form path has no descendant
	// segments, so segment i selects the i-th step of every normalized path it matches)
	wild []bool
}

// errEmptySegment is the short form's error for "a..b", ".a" or "".
var errEmptySegment = errors.New("empty segment (paths are like metadata.request_id or messages[*].id)")

// parseBodyPath parses p (see bodyPath). Errors say what is wrong; callers name the flag and
// quote p.
func parseBodyPath(p string) (bodyPath, error) {
	if strings.HasPrefix(p, "$") {
		jp, err := jsonpath.Parse(p)
		if err != nil {
			return bodyPath{}, fmt.Errorf("not an RFC 9535 JSONPath query: %w", err)
		}
		return bodyPath{text: p, path: jp}, nil
	}
	q, err := shortToQuery(p)
	if err != nil {
		return bodyPath{}, err
	}
	jp, err := jsonpath.Parse(q)
	if err != nil { // not expected: shortToQuery writes only names and [*] or [N]
		return bodyPath{}, fmt.Errorf("as %s: %w", q, err)
	}
	segs := splitPath(p)
	wild := make([]bool, len(segs))
	for i, seg := range segs {
		wild[i] = seg == "[*]"
	}
	return bodyPath{text: p, path: jp, short: true, wild: wild}, nil
}

// selectLocated returns the nodes the path selects in v, without those a short-form "[*]"
// reached through an object member.
func (bp bodyPath) selectLocated(v any) []*spec.LocatedNode {
	nodes := bp.path.SelectLocated(v).Deduplicate()
	if !bp.short {
		return nodes
	}
	return slices.DeleteFunc(nodes, func(n *spec.LocatedNode) bool {
		for i, sel := range n.Path {
			if _, name := sel.(spec.Name); name && i < len(bp.wild) && bp.wild[i] {
				return true
			}
		}
		return false
	})
}

// shortToQuery rewrites a short-form path as an RFC 9535 query in bracket notation. A bracket
// must be "[*]" or "[N]" (N a non-negative integer without sign or leading zeros).
func shortToQuery(p string) (string, error) {
	if !utf8.ValidString(p) {
		// A decoded body's names are valid UTF-8 (encoding/json replaces a bad byte with U+FFFD),
		// and writeQuotedName would write U+FFFD for it too: the path would match a name it
		// does not spell.
		return "", errors.New("not valid UTF-8")
	}
	for _, seg := range strings.Split(p, ".") {
		if seg == "" {
			return "", errEmptySegment
		}
	}
	var b strings.Builder
	b.WriteByte('$')
	for _, seg := range splitPath(p) {
		if !strings.HasPrefix(seg, "[") {
			b.WriteByte('[')
			writeQuotedName(&b, seg)
			b.WriteByte(']')
			continue
		}
		idx, closed := strings.CutSuffix(seg[1:], "]")
		if n, err := strconv.Atoi(idx); !closed || (idx != "*" && (err != nil || n < 0 || strconv.Itoa(n) != idx)) {
			return "", fmt.Errorf("bad index %q (want [*] or [N])", seg)
		}
		b.WriteString(seg)
	}
	return b.String(), nil
}

// splitPath splits a short-form path "a.b[*].c" into ["a", "b", "[*]", "c"]; "[3]" selects one
// element.
func splitPath(p string) []string {
	var out []string
	for _, seg := range strings.Split(p, ".") {
		for seg != "" {
			i := strings.IndexByte(seg, '[')
			if i < 0 {
				out = append(out, seg)
				break
			}
			if i > 0 {
				out = append(out, seg[:i])
			}
			j := strings.IndexByte(seg[i:], ']')
			if j < 0 {
				out = append(out, seg[i:])
				break
			}
			out = append(out, seg[i:i+j+1])
			seg = seg[i+j+1:]
		}
	}
	return out
}

// writeQuotedName writes s as an RFC 9535 double-quoted string literal (section 2.3.1.1):
// quote and backslash escaped, control characters as \uXXXX.
func writeQuotedName(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// singular reports whether the path always names at most one value (RFC 9535 section 2.3.5.1:
// child segments of one name or index each).
func (bp bodyPath) singular() bool { return bp.path.Query().Singular() != nil }

// remove deletes the values the path selects from v, a decoded JSON document, in place where it
// can, and returns v: every selected object member, and for an RFC 9535 query every selected
// array element too. A short-form path removes object members only ("messages[0]" removes
// nothing), as it always has. The document itself ("$") is never removed.
func (bp bodyPath) remove(v any) any {
	nodes := bp.selectLocated(v)
	// Deepest and last first: a member of a removed element goes before the element, and removing
	// an element does not move the ones still to be removed.
	slices.SortFunc(nodes, func(a, b *spec.LocatedNode) int { return b.Path.Compare(a.Path) })
	for _, n := range nodes {
		np := n.Path
		if len(np) == 0 {
			continue
		}
		parentPath, last := np[:len(np)-1], np[len(np)-1]
		parent, ok := valueAt(v, parentPath)
		if !ok {
			continue
		}
		switch sel := last.(type) {
		case spec.Name:
			if m, ok := parent.(map[string]any); ok {
				delete(m, string(sel))
			}
		case spec.Index:
			a, ok := parent.([]any)
			if bp.short || !ok || int(sel) < 0 || int(sel) >= len(a) {
				continue
			}
			v = replaceAt(v, parentPath, slices.Delete(a, int(sel), int(sel)+1))
		}
	}
	return v
}

// locate returns the normalized path of the one value the path selects in body (JSON).
func (bp bodyPath) locate(body []byte) (spec.NormalizedPath, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	nodes := bp.selectLocated(v)
	if len(nodes) != 1 {
		return nil, false
	}
	return nodes[0].Path, true
}

// valueAt follows a normalized path from v.
func valueAt(v any, np spec.NormalizedPath) (any, bool) {
	for _, sel := range np {
		switch s := sel.(type) {
		case spec.Name:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[string(s)]; !ok {
				return nil, false
			}
		case spec.Index:
			a, ok := v.([]any)
			if !ok || int(s) < 0 || int(s) >= len(a) {
				return nil, false
			}
			v = a[s]
		default:
			return nil, false
		}
	}
	return v, true
}

// replaceAt sets the value at np (which exists) to nv and returns the document.
func replaceAt(v any, np spec.NormalizedPath, nv any) any {
	if len(np) == 0 {
		return nv
	}
	parent, _ := valueAt(v, np[:len(np)-1])
	switch s := np[len(np)-1].(type) {
	case spec.Name:
		parent.(map[string]any)[string(s)] = nv
	case spec.Index:
		parent.([]any)[s] = nv
	}
	return v
}
