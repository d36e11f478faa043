// SPDX-License-Identifier: Apache-2.0

package rule

import (
	"container/list"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
)

// Window applies the rule across batches, for a writer that meters each batch as it arrives
// (agent_guard, the cold tier's session partials). The two halves of a joined run (the agent's
// instrumented spans and the proxy's recorded exchanges) are exported by different processes and
// usually arrive in different batches; Uncounted sees one batch and would count both.
//
// A Window remembers what the rule reads (Span, about 120 bytes) of the spans of recently seen
// traces, and whether each one's usage was counted. Each batch is judged together with what is
// remembered of its traces: a span the rule does not count is uncounted, as in Uncounted, and so
// is the second half of a pair whose first half was counted in an earlier batch (usage is
// metered once and cannot be taken back):
//   - an instrumented call covering a derived exchange already counted (the exchange arrived
//     first: the call is counted through it, with the exchange's model and usage);
//   - an LLM call below an aggregate LLM span already counted (the aggregate arrived first);
//   - an edited exchange (Verdict.InPlace) whose covering call was counted (the call arrived first).
//
// So every call counts once whichever half arrives first; which span it is counted on follows
// arrival order, not the rule's preference, when the exchange arrives first. Nothing is delayed.
//
// Memory is bounded by MaxSpans remembered spans in all (the least recently seen trace is
// forgotten first) and by IdleTimeout (a trace with no span for that long is forgotten). A half
// arriving after its trace was forgotten counts again, as without a window. A Window is safe for
// concurrent use.
type Window struct {
	maxSpans int
	idle     time.Duration

	mu     sync.Mutex
	spans  int // remembered in all
	traces map[pcommon.TraceID]*list.Element
	lru    *list.List // of *windowTrace, most recently seen at the front
}

type windowTrace struct {
	id      pcommon.TraceID
	spans   []Span
	counted []bool // the span's usage was counted when it arrived
	seen    time.Time
}

// NewWindow returns a Window remembering at most maxSpans spans (maxSpans <= 0: nil, a Window
// that remembers nothing: Uncounted on one batch), each trace for idle after its last span.
func NewWindow(maxSpans int, idle time.Duration) *Window {
	if maxSpans <= 0 {
		return nil
	}
	return &Window{maxSpans: maxSpans, idle: idle, traces: map[pcommon.TraceID]*list.Element{}, lru: list.New()}
}

// Uncounted returns the spans of td whose usage is not to be counted (agent spans, which never
// add usage, are left out), judging td together with the remembered spans of its traces, and
// remembers td's spans; now is the clock of the idle timeout. A span id already remembered (a
// batch delivered again) is judged as it was the first time. On a nil Window, it is the package
// function Uncounted. nil when every span's usage counts.
func (w *Window) Uncounted(td ptrace.Traces, now time.Time) map[SpanKey]bool {
	if w == nil {
		return Uncounted(td)
	}
	byTrace := batchSpans(td)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.expire(now)
	var out map[SpanKey]bool
	skip := func(tid pcommon.TraceID, id pcommon.SpanID) {
		if out == nil {
			out = map[SpanKey]bool{}
		}
		out[SpanKey{tid, id}] = true
	}
	for tid, batch := range byTrace {
		var t *windowTrace
		if e, ok := w.traces[tid]; ok {
			t = e.Value.(*windowTrace)
			w.lru.MoveToFront(e)
		} else {
			t = &windowTrace{id: tid}
			w.traces[tid] = w.lru.PushFront(t)
		}
		t.seen = now
		known := make(map[pcommon.SpanID]int, len(t.spans))
		for i, s := range t.spans {
			known[s.ID] = i
		}
		// The batch's spans not remembered yet; those remembered are judged as before.
		n := len(t.spans)
		all := append(make([]Span, 0, n+len(batch)), t.spans...)
		for _, s := range batch {
			if i, dup := known[s.ID]; dup {
				if i >= 0 && !t.counted[i] && s.HasUsage && s.Kind != genai.KindAgent {
					skip(tid, s.ID)
				}
				continue // remembered, or twice in the batch (read as the first)
			}
			known[s.ID] = -1
			all = append(all, s)
		}
		if len(all) == n {
			continue
		}
		v := Apply(all)
		counted := make([]bool, len(all)-n)
		for i := n; i < len(all); i++ {
			s := all[i]
			count := v[i].CountUsage && !claimed(all, v, t.counted, i)
			counted[i-n] = count && s.HasUsage
			if !count && s.HasUsage && s.Kind != genai.KindAgent {
				skip(tid, s.ID)
			}
		}
		w.remember(t, all[n:], counted)
	}
	w.evict()
	return out
}

// claimed reports whether span i (of the batch) is the second half of a pair whose first half,
// remembered (index < len(counted)), was counted: a derived exchange it covers, an aggregate
// LLM span above it, or (span i an edited exchange) the call that covers it.
func claimed(spans []Span, v []Verdict, counted []bool, i int) bool {
	if c := v[i].CoveredBy; v[i].InPlace && c >= 0 && c < len(counted) && counted[c] {
		return true // an edited exchange whose covering call, remembered, was counted
	}
	for x := range counted {
		if counted[x] && v[x].CoveredBy == i {
			return true
		}
	}
	if spans[i].Kind != genai.KindLLM || spans[i].Exchange {
		return false
	}
	byID := make(map[pcommon.SpanID]int, len(counted))
	for x := range counted {
		byID[spans[x].ID] = x
	}
	p := spans[i].Parent
	for steps := 0; !p.IsEmpty() && steps < len(counted); steps++ {
		x, ok := byID[p]
		if !ok {
			return false
		}
		if counted[x] && v[x].Aggregate {
			return true
		}
		p = spans[x].Parent
	}
	return false
}

// remember appends the batch's spans to t (strings cloned: a remembered span keeps no batch
// memory alive), as many as the budget allows.
func (w *Window) remember(t *windowTrace, spans []Span, counted []bool) {
	for i, s := range spans {
		if len(t.spans) >= w.maxSpans {
			return // one trace larger than the whole budget: its newest spans are judged by batch
		}
		s.Model, s.Tool = strings.Clone(s.Model), strings.Clone(s.Tool)
		t.spans = append(t.spans, s)
		t.counted = append(t.counted, counted[i])
		w.spans++
	}
}

// expire forgets the traces idle for longer than w.idle.
func (w *Window) expire(now time.Time) {
	for e := w.lru.Back(); e != nil && w.idle > 0; e = w.lru.Back() {
		t := e.Value.(*windowTrace)
		if now.Sub(t.seen) <= w.idle {
			return
		}
		w.forget(e)
	}
}

// evict forgets the least recently seen traces until the budget holds.
func (w *Window) evict() {
	for w.spans > w.maxSpans {
		w.forget(w.lru.Back())
	}
}

func (w *Window) forget(e *list.Element) {
	t := e.Value.(*windowTrace)
	w.lru.Remove(e)
	delete(w.traces, t.id)
	w.spans -= len(t.spans)
}

// Remembered returns the number of spans and traces w remembers.
func (w *Window) Remembered() (spans, traces int) {
	if w == nil {
		return 0, 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.spans, len(w.traces)
}

// batchSpans returns what the rule reads of td's spans with attributes (a span without any has
// no usage and no kind: it changes nothing the rule decides), by trace.
func batchSpans(td ptrace.Traces) map[pcommon.TraceID][]Span {
	byTrace := map[pcommon.TraceID][]Span{}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			sps := sss.At(j).Spans()
			for k := 0; k < sps.Len(); k++ {
				s := sps.At(k)
				if s.Attributes().Len() == 0 || s.TraceID().IsEmpty() {
					continue
				}
				byTrace[s.TraceID()] = append(byTrace[s.TraceID()], FromSpan(s))
			}
		}
	}
	return byTrace
}
