// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"strconv"

	"github.com/runagain/runagain/internal/jsonkit"
	"github.com/runagain/runagain/internal/payloadref/ref"
)

// span is a byte range [start, end) of the original value.
type span struct{ start, end int }

// jsonSegments cuts a JSON value at the boundaries of its elements: for a top-level array, each
// element; for a top-level object, each member value, and each element of member values that are
// arrays. It returns the element ranges in order (the bytes between them are separators), or
// ok=false when data is not a JSON array or object (or not valid JSON, as encoding/json judges
// it). The ranges come from jsonkit's scanner (jsontext, offsets in data, nothing copied).
func jsonSegments(data []byte) (elems []span, ok bool) {
	sc := jsonkit.GetScanner(data)
	defer jsonkit.PutScanner(sc)
	top, err := sc.Next()
	if err != nil || (top.Kind != '[' && top.Kind != '{') {
		return nil, false
	}
	// arrayElems takes the elements of the array whose '[' was just read, and its ']'.
	arrayElems := func() error {
		for sc.PeekKind() != ']' {
			v, err := sc.Value()
			if err != nil {
				return err
			}
			elems = append(elems, span{v.Start, v.End})
		}
		_, err := sc.Next()
		return err
	}
	if top.Kind == '[' {
		err = arrayElems()
	} else {
		for err == nil && sc.PeekKind() != '}' {
			if _, err = sc.Next(); err != nil { // member name
				break
			}
			if sc.PeekKind() == '[' {
				if _, err = sc.Next(); err == nil {
					err = arrayElems()
				}
				continue
			}
			var v jsonkit.Token
			if v, err = sc.Value(); err == nil {
				elems = append(elems, span{v.Start, v.End})
			}
		}
		if err == nil {
			_, err = sc.Next() // '}'
		}
	}
	if err != nil {
		return nil, false
	}
	// Anything after the value must be white space, else this is not one JSON value.
	if _, err := sc.Next(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return elems, true
}

// node is a part list being built: either a literal run or a reference to a chunk or sub-manifest.
type node struct {
	lit      []byte
	span     span // range of the original bytes this part stands for
	sum      [32]byte
	manifest bool
	isRef    bool
	pack     string // the pack the object was written to or found in ("" for a single object)
	children []node // for manifests: their parts
	// prefix: a part standing for the first span.end-span.start bytes of object sum, which is
	// longer (Part.Pre); located (pack set) when planned, never written.
	prefix bool
	// own: the manifest stored under sum is this plan (writeTreePacked appended it), not one
	// another Put of the same value stored first (whose prefix chain this plan does not know).
	own bool
}

// planSplit builds the object tree for data, or returns nil when splitting does not pay
// (not JSON, or fewer than two elements of at least chunkMin bytes).
func planSplit(data []byte, chunkMin, fanout int) *node {
	return planSplitSum(data, sha256.Sum256(data), chunkMin, fanout)
}

// planSplitSum is planSplit for a caller that already has sum, the SHA-256 of data (the root
// manifest's digest): data is not hashed a second time. (It took a *[32]byte that could be nil.)
func planSplitSum(data []byte, sum [32]byte, chunkMin, fanout int) *node {
	return planSplitMemo(data, sum, chunkMin, fanout, nil, 0, nil)
}

// planSplitMemo is planSplitSum reusing what planning prev (the previous value of the same
// stream, see planMemo) found for the bytes data shares with it: data[:common] equals
// prev.head[:common]. Elements that end before common are not scanned nor hashed again, and
// sub-manifests within it are not hashed again. With next, it records in next what planning data
// found (for the value after it). The tree is the one planSplitSum plans (TestPlanSplitMemo).
func planSplitMemo(data []byte, sum [32]byte, chunkMin, fanout int, prev *planMemo, common int, next *planMemo) *node {
	var elems []span
	reused := 0
	if prev != nil {
		elems, reused = prev.segmentsAfter(data, common)
	} else {
		var ok bool
		if elems, ok = jsonSegments(data); !ok {
			elems = nil
		}
	}
	if elems == nil {
		return nil
	}
	if next != nil {
		next.sum, next.elems, next.chain = sum, elems, 0
		next.sums = make([][32]byte, len(elems))
		next.groupsEnd = len(data) - 1 // later values of the stream extend data but its last byte
	}
	parts := make([]node, 0, 2*len(elems)+1) // an element and a separator each, and the end
	refs := 0
	pos := 0
	addLit := func(s span) {
		if s.end <= s.start {
			return
		}
		if n := len(parts); n > 0 && !parts[n-1].isRef {
			parts[n-1].span.end = s.end
			parts[n-1].lit = data[parts[n-1].span.start:s.end]
			return
		}
		parts = append(parts, node{lit: data[s.start:s.end], span: s})
	}
	addRange := func(s span, elem int) {
		if s.end-s.start < chunkMin {
			addLit(s)
			return
		}
		var d [32]byte
		switch {
		case elem >= 0 && elem < reused:
			d = prev.sums[elem]
		case elem >= 0 && prev != nil && elem < len(prev.elems) && prev.sums[elem] != [32]byte{} &&
			bytes.Equal(data[s.start:s.end], prev.head[prev.elems[elem].start:prev.elems[elem].end]):
			d = prev.sums[elem] // the same bytes as the previous value's element at this index
		default:
			d = sha256.Sum256(data[s.start:s.end])
		}
		if next != nil && elem >= 0 {
			next.sums[elem] = d
		}
		parts = append(parts, node{isRef: true, span: s, sum: d})
		refs++
	}
	for i, e := range elems {
		addRange(span{pos, e.start}, -1) // separator (large ones are chunks too)
		addRange(e, i)
		pos = e.end
	}
	addRange(span{pos, len(data)}, -1)
	if refs < 2 {
		return nil
	}
	var gs groupSums
	if prev != nil {
		gs.prev, gs.common = prev.groups, min(common, prev.groupsEnd)
	}
	if next != nil {
		gs.next = map[span][32]byte{}
		next.groups = gs.next
	}
	for level := 0; len(parts) > fanout; level++ {
		parts = group(data, parts, fanout, level, &gs)
	}
	return &node{isRef: true, manifest: true, span: span{0, len(data)}, sum: sum, children: parts}
}

// groupSums carries sub-manifest digests between the plans of a stream's values: prev holds the
// previous value's (by span), valid for spans ending at or before common; next collects this
// value's. Either may be nil.
type groupSums struct {
	prev, next map[span][32]byte
	common     int
}

func (g *groupSums) sum(data []byte, s span) [32]byte {
	d, ok := g.prev[s]
	if !ok || s.end > g.common {
		d = sha256.Sum256(data[s.start:s.end])
	}
	if g.next != nil {
		g.next[s] = d
	}
	return d
}

// group cuts a part list into sub-manifests at content-defined boundaries: after a reference whose
// digest byte (chosen by level) falls below 256/avg, or when a group reaches 4*avg parts. Parts
// before the last boundary depend only on the content before them, so two values that share a
// prefix (a conversation and its next turn) share those sub-manifests.
func group(data []byte, parts []node, fanout, level int, gs *groupSums) []node {
	avg := fanout / 4
	if avg < 2 {
		avg = 2
	}
	threshold := 256 / avg
	out := make([]node, 0, len(parts)/avg+1)
	start := 0
	flush := func(end int) {
		g := parts[start:end]
		start = end
		if len(g) == 0 {
			return
		}
		if len(g) == 1 {
			out = append(out, g[0])
			return
		}
		s := span{g[0].span.start, g[len(g)-1].span.end}
		// g is not changed after grouping (the caller keeps only out): the group aliases it
		out = append(out, node{isRef: true, manifest: true, span: s, sum: gs.sum(data, s), children: g[:len(g):len(g)]})
	}
	for i, p := range parts {
		if (p.isRef && int(p.sum[(level+1)%32]) < threshold) || i+1-start >= 4*avg {
			flush(i + 1)
		}
	}
	flush(len(parts))
	return out
}

// manifestOf encodes the manifest of a planned node: the JSON encoding/json gives a Manifest
// (same field order and names, Lit in standard base64), appended by hand: encoding/json's
// reflection was a tenth of Put's CPU on resent conversations (a manifest per call).
// appendManifestJSON writes it; TestManifestEncoding checks the bytes against json.Marshal.
func manifestOf(n *node) []byte {
	size := 32
	for i := range n.children {
		if c := &n.children[i]; c.isRef {
			size += 112 + len(c.pack)
		} else {
			size += 16 + base64.StdEncoding.EncodedLen(len(c.lit))
		}
	}
	return appendManifestJSON(make([]byte, 0, size), n)
}

// appendManifestJSON appends n's manifest document to dst.
func appendManifestJSON(dst []byte, n *node) []byte {
	v := ref.ManifestVersion
	for i := range n.children {
		if n.children[i].prefix {
			v = ref.ManifestVersionPrefix
			break
		}
	}
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(v), 10)
	dst = append(dst, `,"size":`...)
	dst = strconv.AppendInt(dst, int64(n.span.end-n.span.start), 10)
	dst = append(dst, `,"parts":[`...)
	for i := range n.children {
		c := &n.children[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		if !c.isRef {
			if len(c.lit) == 0 { // omitempty: an empty part (never planned; as encoding/json writes it)
				dst = append(dst, `{}`...)
				continue
			}
			dst = append(dst, `{"lit":"`...)
			dst = base64.StdEncoding.AppendEncode(dst, c.lit)
			dst = append(dst, `"}`...)
			continue
		}
		dst = append(dst, `{"ref":"`...)
		dst = hex.AppendEncode(dst, c.sum[:])
		dst = append(dst, '"')
		if sz := c.span.end - c.span.start; sz != 0 {
			dst = append(dst, `,"n":`...)
			dst = strconv.AppendInt(dst, int64(sz), 10)
		}
		if c.manifest {
			dst = append(dst, `,"m":true`...)
		}
		if c.pack != "" {
			// Pack ids are hex digits and '-' (ref.ValidPackID): nothing to escape.
			dst = append(dst, `,"p":"`...)
			dst = append(dst, c.pack...)
			dst = append(dst, '"')
		}
		if c.prefix {
			dst = append(dst, `,"pre":true`...)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}
