// SPDX-License-Identifier: Apache-2.0

package patterns

import (
	"hash/maphash"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
)

// MemoSize is the default number of runs a Memo keeps: a few seconds of failing runs at the
// bench's ingest rate (about 1,000 failing runs in 48,680 spans, written in 5 s), so the second
// tier's writer, whose queue trails the first's by at most a few batches, finds the run. An
// entry is the signature (a few hundred bytes: step names, normalised messages) and its keys.
const MemoSize = 4096

// Memo remembers the signatures the writers of one process computed, by run and by a
// Fingerprint of the spans each was computed from, so the hot and the warm writer, which both
// receive every span and sign the same failing runs, each from its own batch or, for a run
// whose spans came in several requests, read back after the write, compute each once
// (sqlitestore "Failure signatures in the run index"; BENCHMARKS.md "Failure patterns"). A
// signature is the same whichever tier computes it from the same spans
// (TestHotAndWarmSignaturesAgree). A nil *Memo remembers nothing. Safe for concurrent use.
type Memo struct {
	c            *lru.Cache[string, memoEntry]
	hits, misses atomic.Int64
}

type memoEntry struct {
	fp    Fingerprint
	sig   Signature
	agent string
}

// NewMemo returns a Memo of at most size runs (the least recently used go first); size <= 0
// means MemoSize.
func NewMemo(size int) *Memo {
	if size <= 0 {
		size = MemoSize
	}
	c, err := lru.New[string, memoEntry](size)
	if err != nil { // only for size <= 0, excluded above
		panic(err)
	}
	return &Memo{c: c}
}

// Get returns the signature and agent remembered for run traceID computed from spans of
// fingerprint fp.
func (m *Memo) Get(traceID string, fp Fingerprint) (Signature, string, bool) {
	if m == nil || fp.n == 0 {
		return Signature{}, "", false
	}
	e, ok := m.c.Get(traceID)
	if !ok || e.fp != fp {
		m.misses.Add(1)
		return Signature{}, "", false
	}
	m.hits.Add(1)
	return e.sig, e.agent, true
}

// Stats returns how many Gets found a signature and how many did not.
func (m *Memo) Stats() (hits, misses int64) {
	if m == nil {
		return 0, 0
	}
	return m.hits.Load(), m.misses.Load()
}

// Put remembers the signature and agent of run traceID computed from spans of fingerprint fp.
func (m *Memo) Put(traceID string, fp Fingerprint, sig Signature, agent string) {
	if m == nil || fp.n == 0 {
		return
	}
	m.c.Add(traceID, memoEntry{fp: fp, sig: sig, agent: agent})
}

// Fingerprint identifies the set of spans a run was signed from by what a resent copy of a
// span keeps and an update changes: span id, name, start and end (store.SaneEnd), status code
// and message. Order does not matter (a sum of per-span hashes); both tiers add each stored span
// once. The zero Fingerprint matches nothing.
type Fingerprint struct {
	n   int
	sum uint64
}

var fingerprintSeed = maphash.MakeSeed()

// Add adds one span (spanID as lower-case hex, start and end in Unix ns).
func (f *Fingerprint) Add(spanID, name string, start, end int64, statusCode int32, statusMessage string) {
	var h maphash.Hash
	h.SetSeed(fingerprintSeed)
	h.WriteString(spanID)
	h.WriteByte(0)
	h.WriteString(name)
	h.WriteByte(0)
	var b [20]byte
	for i := range 8 {
		b[i] = byte(start >> (8 * i))
		b[8+i] = byte(end >> (8 * i))
	}
	for i := range 4 {
		b[16+i] = byte(statusCode >> (8 * i))
	}
	h.Write(b[:])
	h.WriteString(statusMessage)
	f.n++
	f.sum += h.Sum64()
}

// AddSpan adds sp (its end as store.SaneEnd gives it, as the warm summaries store it).
func (f *Fingerprint) AddSpan(sp ptrace.Span) {
	f.Add(sp.SpanID().String(), sp.Name(), int64(sp.StartTimestamp()), int64(store.SaneEnd(sp.StartTimestamp(), sp.EndTimestamp())),
		int32(sp.Status().Code()), sp.Status().Message())
}

// AddSummary adds the span s summarises.
func (f *Fingerprint) AddSummary(s *store.SpanSummary) {
	f.Add(s.SpanID, s.Name, s.Start, s.End, s.StatusCode, s.StatusMessage)
}

// RunFingerprint is the Fingerprint of run's spans, as a tier's writer computes it from its batch;
// zero (matching nothing) when run has a log record: an alert or a divergence is signed from
// and is not in the fingerprint.
func RunFingerprint(run *store.Run) Fingerprint {
	var f Fingerprint
	if run == nil || run.Logs.LogRecordCount() > 0 {
		return f
	}
	rss := run.Traces.ResourceSpans()
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				f.AddSpan(spans.At(k))
			}
		}
	}
	return f
}
