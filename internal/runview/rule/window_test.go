// SPDX-License-Identifier: Apache-2.0

package rule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/runagainattr"
)

var windowT0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// spanOf adds a span to td; kind "agent", "chat" (instrumented), "exchange" (the proxy's, derived),
// with usage in input tokens (0: none).
func spanOf(td ptrace.Traces, tid pcommon.TraceID, sid, parent byte, kind string, startMS, endMS int, in int64) {
	if td.ResourceSpans().Len() == 0 {
		td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	}
	s := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().AppendEmpty()
	s.SetTraceID(tid)
	s.SetSpanID(pcommon.SpanID{sid})
	if parent != 0 {
		s.SetParentSpanID(pcommon.SpanID{parent})
	}
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(windowT0.Add(time.Duration(startMS) * time.Millisecond)))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(windowT0.Add(time.Duration(endMS) * time.Millisecond)))
	a := s.Attributes()
	switch kind {
	case "agent":
		a.PutStr(genai.AttrOperationName, "invoke_agent")
	case "chat", "exchange":
		a.PutStr(genai.AttrOperationName, "chat")
		a.PutStr(genai.AttrRequestModel, "gpt-4o-mini")
	}
	if kind == "exchange" {
		a.PutStr(runagainattr.FixtureSource, "proxy")
		a.PutBool(runagainattr.GenAIDerived, true)
	}
	if in > 0 {
		a.PutInt(genai.AttrUsageInputTokens, in)
		a.PutInt(genai.AttrUsageOutputTokens, 1)
	}
}

// joinedBatches is one joined run in two batches: the agent's (an agent span with the sum of its
// calls, two chat spans) and the proxy's (one exchange below the first call, one beside the
// second under the agent span, overlapping it).
func joinedBatches(tid pcommon.TraceID) (agent, proxy ptrace.Traces) {
	agent, proxy = ptrace.NewTraces(), ptrace.NewTraces()
	spanOf(agent, tid, 1, 0, "agent", 0, 100, 300)
	spanOf(agent, tid, 2, 1, "chat", 10, 30, 100)
	spanOf(agent, tid, 3, 1, "chat", 40, 60, 200)
	spanOf(proxy, tid, 4, 2, "exchange", 11, 29, 100)
	spanOf(proxy, tid, 5, 1, "exchange", 41, 59, 200)
	return agent, proxy
}

// counted sums the input tokens of td's spans (agent spans aside) that uncounted leaves in.
func counted(td ptrace.Traces, uncounted map[SpanKey]bool) int64 {
	var n int64
	ss := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < ss.Len(); i++ {
		s := ss.At(i)
		if genai.Classify(s.Attributes()) == genai.KindAgent || uncounted[SpanKey{s.TraceID(), s.SpanID()}] {
			continue
		}
		n += genai.TokenUsage(s.Attributes()).Input
	}
	return n
}

// TestWindowCountsJoinedRunOnceAcrossBatches: the halves of a joined run in separate batches, in
// either order, count each call once (300 input tokens); without a window (Uncounted on each
// batch) they count twice.
func TestWindowCountsJoinedRunOnceAcrossBatches(t *testing.T) {
	tid := pcommon.TraceID{1}
	agent, proxy := joinedBatches(tid)
	assert.EqualValues(t, 600, counted(agent, Uncounted(agent))+counted(proxy, Uncounted(proxy)), "batch by batch: twice")

	for _, order := range [][2]string{{"agent", "proxy"}, {"proxy", "agent"}} {
		t.Run(order[0]+" first", func(t *testing.T) {
			w := NewWindow(1000, time.Minute)
			agent, proxy := joinedBatches(tid)
			batches := map[string]ptrace.Traces{"agent": agent, "proxy": proxy}
			var total int64
			for _, name := range order {
				total += counted(batches[name], w.Uncounted(batches[name], windowT0))
			}
			assert.EqualValues(t, 300, total, "each call once")
			// A batch delivered again is judged as the first time: nothing more counts.
			again := counted(batches[order[1]], w.Uncounted(batches[order[1]], windowT0))
			assert.EqualValues(t, 0, again, "delivered again: the second half stays uncounted")
			spans, traces := w.Remembered()
			assert.Equal(t, 5, spans)
			assert.Equal(t, 1, traces)
		})
	}
}

// edited marks every span of td (the proxy's half) as a rerun's --set edited it.
func edited(td ptrace.Traces) {
	ss := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < ss.Len(); i++ {
		ss.At(i).Attributes().PutStr(runagainattr.RerunEdits, "model=gpt-4.1")
	}
}

// TestWindowEditedExchangeAcrossBatches: a rerun's edited exchanges count in place of the calls
// covering them, and each call still counts once whichever half arrives first.
func TestWindowEditedExchangeAcrossBatches(t *testing.T) {
	tid := pcommon.TraceID{3}
	for _, first := range []string{"agent", "proxy"} {
		agent, proxy := joinedBatches(tid)
		edited(proxy)
		w := NewWindow(1000, time.Minute)
		b := []ptrace.Traces{agent, proxy}
		if first == "proxy" {
			b = []ptrace.Traces{proxy, agent}
		}
		total := counted(b[0], w.Uncounted(b[0], windowT0)) + counted(b[1], w.Uncounted(b[1], windowT0))
		assert.EqualValues(t, 300, total, "%s first: each call once", first)
	}
	// Together, the exchanges count and the calls do not.
	agent, proxy := joinedBatches(tid)
	edited(proxy)
	proxy.ResourceSpans().At(0).ScopeSpans().At(0).Spans().MoveAndAppendTo(agent.ResourceSpans().At(0).ScopeSpans().At(0).Spans())
	un := Uncounted(agent)
	assert.True(t, un[SpanKey{tid, pcommon.SpanID{2}}] && un[SpanKey{tid, pcommon.SpanID{3}}], "the calls are uncounted: %v", un)
	assert.False(t, un[SpanKey{tid, pcommon.SpanID{4}}] || un[SpanKey{tid, pcommon.SpanID{5}}], "the edited exchanges count: %v", un)
}

// TestWindowAggregateAcrossBatches: a framework's LLM span over the client library's calls counts
// once whichever arrives first.
func TestWindowAggregateAcrossBatches(t *testing.T) {
	tid := pcommon.TraceID{2}
	outer, inner := ptrace.NewTraces(), ptrace.NewTraces()
	spanOf(outer, tid, 1, 0, "chat", 0, 100, 300)
	spanOf(inner, tid, 2, 1, "chat", 1, 40, 100)
	spanOf(inner, tid, 3, 1, "chat", 50, 90, 200)
	for _, first := range []string{"inner", "outer"} {
		w := NewWindow(1000, time.Minute)
		b := []ptrace.Traces{inner, outer}
		if first == "outer" {
			b = []ptrace.Traces{outer, inner}
		}
		total := counted(b[0], w.Uncounted(b[0], windowT0)) + counted(b[1], w.Uncounted(b[1], windowT0))
		assert.EqualValues(t, 300, total, "%s first", first)
	}
}

// TestWindowBounds: the window remembers at most its span budget (the least recently seen trace
// goes first) and forgets idle traces; a half arriving after its trace was forgotten counts again.
func TestWindowBounds(t *testing.T) {
	w := NewWindow(7, time.Minute)
	a1, p1 := joinedBatches(pcommon.TraceID{1})
	a2, _ := joinedBatches(pcommon.TraceID{2})
	w.Uncounted(a1, windowT0)
	w.Uncounted(a2, windowT0.Add(time.Second)) // 3 + 3 spans: within the budget
	spans, traces := w.Remembered()
	assert.Equal(t, [2]int{6, 2}, [2]int{spans, traces})
	a3, _ := joinedBatches(pcommon.TraceID{3})
	w.Uncounted(a3, windowT0.Add(2*time.Second))
	spans, traces = w.Remembered()
	assert.Equal(t, [2]int{6, 2}, [2]int{spans, traces}, "trace 1, least recently seen, forgotten")
	assert.EqualValues(t, 300, counted(p1, w.Uncounted(p1, windowT0.Add(3*time.Second))), "its exchanges count again")

	w = NewWindow(1000, time.Minute)
	a, p := joinedBatches(pcommon.TraceID{4})
	w.Uncounted(a, windowT0)
	assert.EqualValues(t, 300, counted(p, w.Uncounted(p, windowT0.Add(2*time.Minute))), "idle trace forgotten")
	spans, traces = w.Remembered()
	assert.Equal(t, [2]int{2, 1}, [2]int{spans, traces}, "only the new half is remembered")

	require.Nil(t, NewWindow(0, time.Minute), "no budget: no window")
	var none *Window
	assert.EqualValues(t, 600, counted(a, none.Uncounted(a, windowT0))+counted(p, none.Uncounted(p, windowT0)), "a nil window is Uncounted per batch")
}
