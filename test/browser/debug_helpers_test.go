// SPDX-License-Identifier: Apache-2.0

package browser

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
)

// writeOTLP writes td as an OTLP JSON file in a temporary directory (what `runagain import` reads).
func writeOTLP(t *testing.T, name string, td ptrace.Traces) string {
	t.Helper()
	var m ptrace.JSONMarshaler
	b, err := m.MarshalTraces(td)
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p
}

// proxiedRun is what `runagain proxy --record` keeps of an uninstrumented agent that made one
// chat completions call: the agent's root span and the recorded exchange under it, whose
// request body asked for bodyModel and whose upstream answered as gpt-4o-mini. root, when not
// nil, adds attributes to the root span (a rerun's).
func proxiedRun(trace pcommon.TraceID, start time.Time, bodyModel string, root func(pcommon.Map)) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "weather-agent")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	r := spans.AppendEmpty()
	r.SetTraceID(trace)
	r.SetSpanID(pcommon.SpanID{trace[15], 1})
	r.SetName("runagain proxy weather-agent")
	r.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	r.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(2 * time.Second)))
	if root != nil {
		root(r.Attributes())
	}
	ex := &fixture.Exchange{Method: http.MethodPost, URL: "https://api.openai.com/v1/chat/completions", Protocol: "1.1", Status: 200,
		RequestHeader:  http.Header{"Content-Type": {"application/json"}},
		RequestBody:    []byte(`{"model":"` + bodyModel + `","temperature":0.2,"max_tokens":256,"tool_choice":"auto","tools":[{"type":"function","function":{"name":"get_weather","parameters":{}}}],"messages":[{"role":"system","content":"You are a weather assistant."},{"role":"user","content":"Weather in Paris?"}]}`),
		ResponseHeader: http.Header{"Content-Type": {"application/json"}},
		ResponseBody:   []byte(`{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"It is sunny in Paris."},"finish_reason":"stop"}],"usage":{"prompt_tokens":30,"completion_tokens":7,"total_tokens":37}}`),
		Source:         "recorded", Start: start.Add(100 * time.Millisecond), End: start.Add(1500 * time.Millisecond)}
	sp := spans.AppendEmpty()
	fixture.ToSpan(ex, sp)
	sp.SetTraceID(trace)
	sp.SetSpanID(pcommon.SpanID{trace[15], 2})
	sp.SetParentSpanID(r.SpanID())
	return td
}

// brokenRun is a run that arrived in part: an agent span, an LLM call under it whose user
// message holds a right-to-left override (U+202E), and a tool call whose parent span never
// arrived; the tool call has not ended yet (end time zero) when unfinished is set.
func brokenRun(trace pcommon.TraceID, start time.Time, unfinished bool) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "broken-agent")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	add := func(id, parent byte, name string, from, to time.Duration) ptrace.Span {
		s := spans.AppendEmpty()
		s.SetTraceID(trace)
		s.SetSpanID(pcommon.SpanID{trace[15], id})
		if parent != 0 {
			s.SetParentSpanID(pcommon.SpanID{trace[15], parent})
		}
		s.SetName(name)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(from)))
		if to >= 0 {
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(to)))
		}
		return s
	}
	root := add(1, 0, "invoke_agent broken", 0, 1500*time.Millisecond)
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	root.Attributes().PutStr("gen_ai.agent.name", "broken")
	llm := add(2, 1, "chat gpt-4o", 100*time.Millisecond, 900*time.Millisecond)
	a := llm.Attributes()
	a.PutStr("gen_ai.operation.name", "chat")
	a.PutStr("gen_ai.request.model", "gpt-4o")
	a.PutStr("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"pay to \u202Egnp.exe"}]}]`)
	a.PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"ok"}],"finish_reason":"stop"}]`)
	end := 2000 * time.Millisecond
	if unfinished {
		end = -1
	}
	tool := add(3, 9, "execute_tool lookup", 1000*time.Millisecond, end)
	tool.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
	tool.Attributes().PutStr("gen_ai.tool.name", "lookup")
	return td
}

// turnRun is one turn of a conversation: an agent span over one LLM call that read input and
// answered answer (or failed with fail), taking d.
func turnRun(trace pcommon.TraceID, start time.Time, session, input, answer, fail string, d time.Duration) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "support-bot")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	root := spans.AppendEmpty()
	root.SetTraceID(trace)
	root.SetSpanID(pcommon.SpanID{trace[15], 1})
	root.SetName("invoke_agent support")
	root.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	root.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(d)))
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	root.Attributes().PutStr("gen_ai.agent.name", "support")
	root.Attributes().PutStr("gen_ai.conversation.id", session)
	llm := spans.AppendEmpty()
	llm.SetTraceID(trace)
	llm.SetSpanID(pcommon.SpanID{trace[15], 2})
	llm.SetParentSpanID(root.SpanID())
	llm.SetName("chat gpt-4o")
	llm.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(10 * time.Millisecond)))
	llm.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(d - 10*time.Millisecond)))
	a := llm.Attributes()
	a.PutStr("gen_ai.operation.name", "chat")
	a.PutStr("gen_ai.request.model", "gpt-4o")
	a.PutStr("gen_ai.conversation.id", session)
	a.PutInt("gen_ai.usage.input_tokens", int64(len(input)))
	a.PutInt("gen_ai.usage.output_tokens", int64(len(answer)))
	a.PutStr("gen_ai.input.messages", `[{"role":"system","parts":[{"type":"text","content":"Be brief."}]},{"role":"user","parts":[{"type":"text","content":"`+input+`"}]}]`)
	if fail != "" {
		llm.Status().SetCode(ptrace.StatusCodeError)
		llm.Status().SetMessage(fail)
	} else {
		a.PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"`+answer+`"}],"finish_reason":"stop"}]`)
	}
	return td
}
