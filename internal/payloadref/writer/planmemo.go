// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"hash/maphash"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Plan memos: agents resend their conversation, so a chat call's gen_ai.input.messages is the
// previous call's array grown by a few messages. Hashing and parsing every value whole made Put
// cost grow with the history (SHA-256 of the value, of every element, of every sub-manifest, and
// a JSON scan: most of payload_offload's CPU on resent conversations). A planMemo keeps, for the
// last value of a stream (a conversation's attribute), a copy of its bytes, its element ranges
// and digests, its sub-manifest digests and the SHA-256 state after most of its bytes; the next
// value of the stream that starts with the same bytes (checked with bytes.Equal, never assumed)
// hashes and scans only what follows them. Results are identical to planning from scratch
// (TestPlanSplitMemo); a value that does not extend its stream's memo is planned whole.
const (
	// planMemoMaxValue: larger values are not kept (their copy would dominate the budget).
	planMemoMaxValue = 1 << 20
	// planMemoBudget bounds the bytes of every memo's copy together (their ranges and digests
	// add about 48 bytes per element).
	planMemoBudget = 16 << 20
	// planMemoEntries bounds how many streams have a memo (least recently used dropped).
	planMemoEntries = 1024
	// planMemoKeyPrefix: without a stream name, values are matched by their first bytes.
	planMemoKeyPrefix = 1024
)

// planMemo is what planning one value found (immutable once published).
type planMemo struct {
	// head is a copy of the value but its last byte (all a later value can share with it: see
	// match). Values of a stream share one growing array (memoHead), each memo's head a prefix
	// of the next one's; extended is set by the one value that may append to it.
	head     []byte
	extended atomic.Bool
	sum      [32]byte   // SHA-256 of data: its root manifest's digest
	elems    []span     // jsonSegments(data): a top-level array's elements
	sums     [][32]byte // sums[i]: SHA-256 of elems[i] when it is a chunk (else zero)
	// groups: SHA-256 of the sub-manifest spans of the last value of the stream planned whole
	// (carried through the values planned as deltas after it), valid for spans ending at or
	// before groupsEnd.
	groups    map[span][32]byte
	groupsEnd int
	chain     int    // 0: data's root manifest was planned whole; else how many prefix parts lead to one (planDelta)
	hq        int    // data[:hq] is hashed into hstate; a multiple of sha256.BlockSize
	hstate    []byte // marshalled SHA-256 state after data[:hq]
}

// maxChain bounds how many root manifests a value's reading may go through by prefix parts
// before one planned whole (so that reading it rebuilds at most maxChain+1 values, and its
// manifests nest at most maxChain plus the tree's few levels deep: within maxDepth). Each value
// of a chain writes a root manifest of its new parts only; every maxChain+1-th writes a whole one.
const maxChain = 8

// planDelta plans data, whose first common bytes are prev's value but its last (data extends
// prev's top-level array), as a root manifest of a prefix part naming prev's root manifest
// (found in pack prevPack) followed by data's bytes after common: its new elements as chunks
// (at least chunkMin bytes) or literals. A resent conversation's call then writes a manifest of
// the size of its new messages, not of its whole history (its parts once per call were most of
// the bytes offloading wrote). nil when data is not an array, or its new parts would pass
// fanout (planned whole instead). It records in next what the next value needs: data's
// elements and chunk digests, the sub-manifest digests carried from the last whole plan.
func planDelta(data []byte, sum [32]byte, chunkMin, fanout int, prev *planMemo, common int, next *planMemo, prevPack string) *node {
	elems, reused := prev.segmentsAfter(data, common)
	if elems == nil {
		return nil
	}
	sums := make([][32]byte, len(elems))
	copy(sums, prev.sums[:reused])
	parts := make([]node, 1, 8)
	parts[0] = node{isRef: true, manifest: true, prefix: true, span: span{0, common}, sum: prev.sum, pack: prevPack}
	add := func(s span, d *[32]byte) {
		switch {
		case s.end <= s.start:
		case s.end-s.start >= chunkMin:
			if d == nil {
				var h [32]byte
				h, d = sha256.Sum256(data[s.start:s.end]), &h
			}
			parts = append(parts, node{isRef: true, span: s, sum: *d})
		case !parts[len(parts)-1].isRef:
			last := &parts[len(parts)-1]
			last.span.end, last.lit = s.end, data[last.span.start:s.end]
		default:
			parts = append(parts, node{lit: data[s.start:s.end], span: s})
		}
	}
	pos := common
	for i := reused; i < len(elems); i++ {
		e := elems[i]
		if e.end-e.start >= chunkMin {
			if i < len(prev.elems) && prev.elems[i] == e && e.end <= common && prev.sums[i] != [32]byte{} {
				sums[i] = prev.sums[i] // the same bytes: within the shared prefix, at the same place
			} else {
				sums[i] = sha256.Sum256(data[e.start:e.end])
			}
		}
		switch {
		case e.end <= common: // within the prefix part
		case e.start < pos: // begins in the prefix: its rest is literal
			add(span{pos, e.end}, nil)
			pos = e.end
		default:
			add(span{pos, e.start}, nil)
			if e.end-e.start >= chunkMin {
				add(e, &sums[i])
			} else {
				add(e, nil)
			}
			pos = e.end
		}
	}
	add(span{pos, len(data)}, nil)
	if len(parts) > fanout {
		return nil
	}
	if next != nil {
		next.sum, next.elems, next.sums = sum, elems, sums
		next.groups, next.groupsEnd, next.chain = prev.groups, prev.groupsEnd, prev.chain+1
	}
	return &node{isRef: true, manifest: true, span: span{0, len(data)}, sum: sum, children: parts}
}

// segmentsAfter returns the element ranges of data (a value whose first common bytes are m's)
// and how many of them are m's (reused, with their digests): those ending before common. What
// follows is scanned as the rest of the same top-level array. nil when data is not a JSON array.
func (m *planMemo) segmentsAfter(data []byte, common int) ([]span, int) {
	k := 0
	for k < len(m.elems) && m.elems[k].end < common {
		k++
	}
	if k == 0 {
		elems, ok := jsonSegments(data)
		if !ok {
			return nil, 0
		}
		return elems, 0
	}
	// The scanner is inside the top-level array right after element k-1 in both values: the
	// rest of data parses as the rest of an array whose first element is a placeholder.
	e := m.elems[k-1].end
	tail := make([]byte, 0, 2+len(data)-e)
	tail = append(append(tail, '[', '0'), data[e:]...)
	rest, ok := jsonSegments(tail)
	if !ok || len(rest) == 0 {
		return nil, 0
	}
	elems := make([]span, k, k+len(rest)-1)
	copy(elems, m.elems[:k])
	for _, r := range rest[1:] {
		elems = append(elems, span{r.start - 2 + e, r.end - 2 + e})
	}
	return elems, k
}

// planMemos is a Store's memo per stream, bounded in entries and bytes.
type planMemos struct {
	seed  maphash.Seed
	cache *lru.Cache[uint64, *planMemo]
	mu    sync.Mutex // keep: every change of the cache's contents, and bytes
	bytes int64      // of every memo's data copy; guarded by mu (evictions happen in keep)
}

func newPlanMemos() *planMemos {
	p := &planMemos{seed: maphash.MakeSeed()}
	// Called from the cache's Add and RemoveOldest, which only keep calls (holding mu).
	p.cache, _ = lru.NewWithEvict(planMemoEntries, func(_ uint64, m *planMemo) { p.bytes -= int64(cap(m.head)) })
	return p
}

// key names data's stream: the stream name when given, else data's first bytes.
func (p *planMemos) key(stream string, data []byte) uint64 {
	if stream != "" {
		return maphash.String(p.seed, stream)
	}
	return maphash.Bytes(p.seed, data[:min(len(data), planMemoKeyPrefix)])
}

// match returns the memo of the stream when data starts with all of its value but the last byte
// (a top-level array grown by elements, or the same value again), and how many bytes they share.
func (p *planMemos) match(key uint64, data []byte) (*planMemo, int) {
	m, ok := p.cache.Get(key)
	if !ok {
		return nil, 0
	}
	common := len(m.head)
	if common <= 0 || len(data) <= common || !bytes.Equal(data[:common], m.head) {
		// Not an extension (an earlier message differs, say): no shared prefix, but elements
		// equal to the memo's at the same index still reuse their digests (see planSplitMemo).
		return m, 0
	}
	return m, common
}

// keep publishes m as its stream's memo, within the budget.
func (p *planMemos) keep(key uint64, m *planMemo) {
	if len(m.head) >= planMemoMaxValue {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// Replacing a stream's memo does not call the eviction callback: count the old one out here.
	if old, ok := p.cache.Peek(key); ok {
		p.bytes -= int64(cap(old.head))
	}
	p.cache.Add(key, m)
	p.bytes += int64(cap(m.head))
	for p.bytes > planMemoBudget {
		if _, _, ok := p.cache.RemoveOldest(); !ok {
			return
		}
	}
}

// memoHead returns data but its last byte, copied for the memo of data (see planMemo.head).
// When data extends prev's value (common is len(prev.head)) and no other value extended prev
// yet, prev's array is extended in place: only data's new bytes are copied (the array grows by
// doubling), and nothing within prev.head (which readers of prev may read) is written. Copying
// every value whole was most of what offloading allocated on resent conversations.
func memoHead(prev *planMemo, common int, data []byte) []byte {
	n := len(data) - 1
	if prev != nil && common > 0 && common == len(prev.head) && n >= common && prev.extended.CompareAndSwap(false, true) {
		return append(prev.head, data[common:n]...)
	}
	return append(make([]byte, 0, n+n/4), data[:n]...)
}

// hashValue returns data's SHA-256, continuing prev's state when data starts with prev's hashed
// bytes (data[:prev.hq], known equal: common >= prev.hq); with next, it records in next the
// state after data's last whole block before its last byte.
func hashValue(data []byte, prev *planMemo, common int, next *planMemo) [32]byte {
	if next == nil && prev == nil {
		return sha256.Sum256(data)
	}
	h := sha256.New()
	from := 0
	if prev != nil && prev.hq <= common && prev.hstate != nil {
		if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(prev.hstate); err == nil {
			from = prev.hq
		} else {
			h.Reset()
		}
	}
	if next != nil {
		q := (len(data) - 1) / sha256.BlockSize * sha256.BlockSize
		if q >= from {
			_, _ = h.Write(data[from:q])
			from = q
			if st, err := h.(encoding.BinaryMarshaler).MarshalBinary(); err == nil {
				next.hq, next.hstate = q, st
			}
		}
	}
	_, _ = h.Write(data[from:])
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}
