// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/llmhttp"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/runview/rule"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(ms int) pcommon.Timestamp {
	return pcommon.NewTimestampFromTime(t0.Add(time.Duration(ms) * time.Millisecond))
}

// agentTrace is an instrumented agent's own trace (its SDK ignored TRACEPARENT): an agent span
// over two chat calls that overlap in time (parallel), each recording its input messages.
func agentTrace(res map[string]any) (ptrace.Traces, pcommon.TraceID, []pcommon.SpanID) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	_ = rs.Resource().Attributes().FromRaw(res)
	sps := rs.ScopeSpans().AppendEmpty().Spans()
	trace := pcommon.TraceID{0xa1}
	root := sps.AppendEmpty()
	root.SetTraceID(trace)
	root.SetSpanID(pcommon.SpanID{1})
	root.SetName("invoke_agent weather")
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	root.SetStartTimestamp(at(0))
	root.SetEndTimestamp(at(1000))
	var ids []pcommon.SpanID
	for i, q := range []string{"Weather in Paris?", "Weather in Rome?"} {
		sp := sps.AppendEmpty()
		sp.SetTraceID(trace)
		sp.SetSpanID(pcommon.SpanID{byte(2 + i)})
		sp.SetParentSpanID(root.SpanID())
		sp.SetName("chat gpt-4o-mini")
		a := sp.Attributes()
		a.PutStr("gen_ai.operation.name", "chat")
		a.PutStr("gen_ai.request.model", "gpt-4o-mini")
		a.PutInt("gen_ai.usage.input_tokens", 10)
		a.PutInt("gen_ai.usage.output_tokens", 5)
		a.PutStr("gen_ai.input.messages", fmt.Sprintf(`[{"role":"user","parts":[{"type":"text","content":%q}]}]`, q))
		sp.SetStartTimestamp(at(100 + i*10))
		sp.SetEndTimestamp(at(600 + i*10))
		ids = append(ids, sp.SpanID())
	}
	return td, trace, ids
}

// exchange is a recorded chat completion (or a tool API call) as the proxy holds it: derived,
// in the proxy's root trace.
func exchange(root Root, url, body string, startMS, endMS int) ptrace.Traces {
	ex := &fixture.Exchange{Method: http.MethodPost, URL: url, RequestHeader: http.Header{"Content-Type": {"application/json"}},
		RequestBody: []byte(body), Status: 200, ResponseHeader: http.Header{"Content-Type": {"application/json"}},
		ResponseBody: []byte(`{"id":"c","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"rain"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`),
		Start:        t0.Add(time.Duration(startMS) * time.Millisecond), End: t0.Add(time.Duration(endMS) * time.Millisecond), Source: "proxy"}
	td := ptrace.NewTraces()
	sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(root.TraceID)
	sp.SetSpanID(NewSpanID())
	sp.SetParentSpanID(root.SpanID)
	fixture.ToSpan(ex, sp)
	llmhttp.Derive(ex, sp.Attributes())
	return td
}

func chatBody(q string) string {
	return fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":%q}]}`, q)
}

func TestJoinPlacesExchangesUnderTheirCalls(t *testing.T) {
	root := Root{TraceID: NewTraceID(), SpanID: NewSpanID()}
	for _, tc := range []struct {
		name     string
		res      map[string]any
		pids     map[int]bool
		evidence string
	}{
		{"resource attribute", map[string]any{runagainattr.ExecutionTraceID: root.TraceID.String(), "process.pid": 1}, nil, "resource"},
		{"process", map[string]any{"process.pid": 4242}, map[int]bool{4000: true, 4242: true}, "process"},
		{"parent process", map[string]any{"process.pid": 9, "process.parent_pid": 4000}, map[int]bool{4000: true}, "process"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent, trace, calls := agentTrace(tc.res)
			ex := Execution{Root: root, Pids: tc.pids, Start: t0.Add(-50 * time.Millisecond), End: t0.Add(1100 * time.Millisecond)}
			j, ok := PlanJoin(ex, []AgentRun{{Traces: agent, Logs: plog.NewLogs()}})
			require.True(t, ok)
			assert.Equal(t, trace, j.Trace)
			assert.Equal(t, pcommon.SpanID{1}, j.AgentRoot)
			assert.Equal(t, tc.evidence, j.Evidence)

			// The Rome request is sent first, nearer the Paris call's start: the body decides.
			held := []ptrace.Traces{
				exchange(root, "http://127.0.0.1/openai/v1/chat/completions", chatBody("Weather in Rome?"), 102, 550),
				exchange(root, "http://127.0.0.1/openai/v1/chat/completions", chatBody("Weather in Paris?"), 112, 560),
				exchange(root, "http://127.0.0.1/tools/weather?city=paris", `{}`, 700, 710), // a tool API: no call of the agent's
			}
			SortByStart(held)
			for _, td := range held {
				j.Place(td)
			}
			assert.Equal(t, 2, j.Linked)
			assert.Equal(t, 1, j.Unlinked)
			parents := []pcommon.SpanID{calls[1], calls[0], root.SpanID}
			for i, td := range held {
				sp := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
				assert.Equal(t, trace, sp.TraceID(), "exchange %d in the agent's trace", i)
				assert.Equal(t, parents[i], sp.ParentSpanID(), "exchange %d", i)
				if i == 2 {
					assert.Equal(t, 0, sp.Links().Len())
					continue
				}
				require.Equal(t, 1, sp.Links().Len())
				l := sp.Links().At(0)
				assert.Equal(t, parents[i], l.SpanID())
				typ, _ := l.Attributes().Get(runagainattr.LinkType)
				assert.Equal(t, runagainattr.LinkInferred, typ.Str())
				ev, _ := l.Attributes().Get(runagainattr.LinkEvidence)
				assert.Equal(t, []any{tc.evidence, "time", "model", "body"}, ev.Slice().AsRaw())
			}

			// The proxy's root goes under the agent's; the rule counts each call once.
			rootTD := ptrace.NewTraces()
			rsp := rootTD.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
			rsp.SetTraceID(root.TraceID)
			rsp.SetSpanID(root.SpanID)
			rsp.SetStartTimestamp(at(-500)) // the runtime starting up
			rsp.SetEndTimestamp(at(1700))   // the SDK flushing
			j.PlaceRoot(rootTD)
			assert.Equal(t, trace, rsp.TraceID())
			assert.Equal(t, pcommon.SpanID{1}, rsp.ParentSpanID())
			assert.Equal(t, at(0), rsp.StartTimestamp(), "within the agent's root")
			assert.Equal(t, at(1000), rsp.EndTimestamp(), "within the agent's root")
			created, _ := rsp.Attributes().Get("process.creation.time")
			exited, _ := rsp.Attributes().Get("process.exit.time")
			assert.Equal(t, "2026-01-02T03:04:04.5Z", created.Str())
			assert.Equal(t, "2026-01-02T03:04:06.7Z", exited.Str())
			var spans []rule.Span
			for _, td := range append([]ptrace.Traces{agent, rootTD}, held...) {
				eachSpan(td, func(sp ptrace.Span) { spans = append(spans, rule.FromSpan(sp)) })
			}
			steps := map[rule.StepKind]int{}
			for _, v := range rule.Apply(spans) {
				steps[v.Step]++
			}
			assert.Equal(t, 2, steps[rule.StepLLM], "two LLM calls, not four")
			assert.Equal(t, 1, steps[rule.StepHTTP], "the tool API call")
		})
	}
}

// TestJoinRefusesOtherExecutions: spans of another process, of this pid outside the execution's
// time, and a call whose messages name another request are not joined.
func TestJoinRefusesOtherExecutions(t *testing.T) {
	root := Root{TraceID: NewTraceID(), SpanID: NewSpanID()}
	agent, _, _ := agentTrace(map[string]any{"process.pid": 77})
	ex := Execution{Root: root, Pids: map[int]bool{4000: true}, Start: t0, End: t0.Add(time.Second)}
	_, ok := PlanJoin(ex, []AgentRun{{Traces: agent, Logs: plog.NewLogs()}})
	assert.False(t, ok, "another process")

	ex.Pids[77] = true
	ex.Start, ex.End = t0.Add(time.Hour), t0.Add(time.Hour+time.Second)
	_, ok = PlanJoin(ex, []AgentRun{{Traces: agent, Logs: plog.NewLogs()}})
	assert.False(t, ok, "the pid, an hour later: reused")

	ex.Start, ex.End = t0, t0.Add(time.Second)
	j, ok := PlanJoin(ex, []AgentRun{{Traces: agent, Logs: plog.NewLogs()}})
	require.True(t, ok)
	td := exchange(root, "http://127.0.0.1/openai/v1/chat/completions", chatBody("Weather in Oslo?"), 150, 550)
	j.Place(td)
	sp := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	assert.Equal(t, root.SpanID, sp.ParentSpanID(), "a request neither call sent stays under the proxy's root")
	assert.Equal(t, 0, j.Linked)
}

// TestJoinPrefersTheSpanAnExchangeLiesWithin: two sequential calls whose recorded messages
// cannot tell them apart (the second's last text is the first's, as when a tool result is not
// text); the exchange of the first call starts late in it, nearer the second call's start, yet
// lies within the first.
func TestJoinPrefersTheSpanAnExchangeLiesWithin(t *testing.T) {
	root := Root{TraceID: NewTraceID(), SpanID: NewSpanID()}
	agent, _, _ := agentTrace(map[string]any{runagainattr.ExecutionTraceID: root.TraceID.String()})
	sps := agent.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 1; i <= 2; i++ { // call 1: 100-300 ms, call 2: 310-500 ms, both about Paris
		sp := sps.At(i)
		sp.Attributes().PutStr("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"Weather in Paris?"}]}]`)
		sp.SetStartTimestamp(at(100 + (i-1)*210))
		sp.SetEndTimestamp(at(300 + (i-1)*200))
	}
	j, ok := PlanJoin(Execution{Root: root, Start: t0, End: t0.Add(time.Second)}, []AgentRun{{Traces: agent, Logs: plog.NewLogs()}})
	require.True(t, ok)
	held := []ptrace.Traces{
		exchange(root, "http://127.0.0.1/openai/v1/chat/completions", chatBody("Weather in Paris?"), 250, 290),
		exchange(root, "http://127.0.0.1/openai/v1/chat/completions", chatBody("Weather in Paris?"), 400, 450),
	}
	for _, td := range held {
		j.Place(td)
	}
	for i, want := range []pcommon.SpanID{{2}, {3}} {
		assert.Equal(t, want, held[i].ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).ParentSpanID(), "exchange %d", i)
	}
}
