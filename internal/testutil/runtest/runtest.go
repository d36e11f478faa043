// SPDX-License-Identifier: Apache-2.0

// Package runtest builds small runs for tests of the read path (runview, the CLI, the UI): an
// instrumented agent whose LLM call streamed its answer through the recording proxy, and whose
// tool call made an HTTP request of its own, both exchanges recorded under the span that made
// them, as `runagain proxy --record` stores them for an SDK that propagates traceparent.
package runtest

import (
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/mcp"
	"github.com/runagain/runagain/internal/runagainattr"
)

// SSEEvents are the events of the streamed chat completion in StreamedRun, in order.
var SSEEvents = []string{
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"It is \"}}]}\n\n",
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"sunny.\"},\"finish_reason\":\"stop\"}]}\n\n",
	"data: [DONE]\n\n",
}

// Span ids of StreamedRun's spans (the last byte of the trace id, then this).
const (
	RootSpan     = 1
	LLMSpan      = 2
	LLMExchange  = 3
	ToolSpan     = 4
	ToolExchange = 5
)

// StreamedRun is the run: invoke_agent over a chat span (gpt-4o-mini, one user message) whose
// exchange with api.openai.com streamed SSEEvents, then an execute_tool get_weather span whose
// exchange is a GET to api.weather.example answering JSON.
func StreamedRun(trace pcommon.TraceID, start time.Time) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "weather-agent")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	at := func(ms int) pcommon.Timestamp {
		return pcommon.NewTimestampFromTime(start.Add(time.Duration(ms) * time.Millisecond))
	}
	add := func(id, parent byte, name string, from, to int) ptrace.Span {
		s := spans.AppendEmpty()
		s.SetTraceID(trace)
		s.SetSpanID(pcommon.SpanID{trace[15], id})
		if parent != 0 {
			s.SetParentSpanID(pcommon.SpanID{trace[15], parent})
		}
		s.SetName(name)
		s.SetStartTimestamp(at(from))
		s.SetEndTimestamp(at(to))
		return s
	}
	root := add(RootSpan, 0, "invoke_agent weather", 0, 3000)
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	root.Attributes().PutStr("gen_ai.agent.name", "weather")
	llm := add(LLMSpan, RootSpan, "chat gpt-4o-mini", 100, 1200)
	a := llm.Attributes()
	a.PutStr("gen_ai.operation.name", "chat")
	a.PutStr("gen_ai.provider.name", "openai")
	a.PutStr("gen_ai.request.model", "gpt-4o-mini")
	a.PutStr("gen_ai.response.model", "gpt-4o-mini")
	a.PutInt("gen_ai.usage.input_tokens", 12)
	a.PutInt("gen_ai.usage.output_tokens", 4)
	a.PutStr("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"Weather in Paris?"}]}]`)
	a.PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"It is sunny."}],"finish_reason":"stop"}]`)

	body := strings.Join(SSEEvents, "")
	ex := &fixture.Exchange{Method: http.MethodPost, URL: "https://api.openai.com/v1/chat/completions", Protocol: "1.1", Status: 200,
		RequestHeader:  http.Header{"Content-Type": {"application/json"}, "Authorization": {"[REDACTED]"}},
		RequestBody:    []byte(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Weather in Paris?"}]}`),
		ResponseHeader: http.Header{"Content-Type": {"text/event-stream"}, "X-Request-Id": {"req_42"}},
		ResponseBody:   []byte(body), Source: "proxy",
		Start: start.Add(150 * time.Millisecond), End: start.Add(1100 * time.Millisecond)}
	off := 0
	for k, e := range SSEEvents {
		ex.Chunks = append(ex.Chunks, fixture.Chunk{Offset: off, Size: len(e), Time: start.Add(time.Duration(400+300*k) * time.Millisecond)})
		off += len(e)
	}
	put := func(ex *fixture.Exchange, id, parent byte) {
		s := spans.AppendEmpty()
		fixture.ToSpan(ex, s)
		s.SetTraceID(trace)
		s.SetSpanID(pcommon.SpanID{trace[15], id})
		s.SetParentSpanID(pcommon.SpanID{trace[15], parent})
	}
	put(ex, LLMExchange, LLMSpan)

	tool := add(ToolSpan, RootSpan, "execute_tool get_weather", 1300, 2000)
	tool.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
	tool.Attributes().PutStr("gen_ai.tool.name", "get_weather")
	tool.Attributes().PutStr("gen_ai.tool.call.arguments", `{"city":"Paris"}`)
	wx := &fixture.Exchange{Method: http.MethodGet, URL: "https://api.weather.example/v1/now?city=Paris", Protocol: "1.1", Status: 200,
		RequestHeader:  http.Header{"Accept": {"application/json"}},
		ResponseHeader: http.Header{"Content-Type": {"application/json"}},
		ResponseBody:   []byte(`{"city":"Paris","now":{"sky":"sunny","temp_c":21,"wind":{"kph":9,"dir":"W"}},"alerts":[]}`),
		Source:         "proxy", Start: start.Add(1350 * time.Millisecond), End: start.Add(1900 * time.Millisecond)}
	put(wx, ToolExchange, ToolSpan)
	return td
}

// ProxyRoot is the span id of the proxy's root span in UnparentedRun.
const ProxyRoot = 6

// UnparentedRun is StreamedRun as a proxy records it for an agent that does not propagate
// traceparent, before its exchanges are parented: both exchanges hang under the proxy's root
// span ("runagain proxy", under the agent's root), not under the calls that made them. The LLM
// exchange is tied to its call only by time and request model (the counting rule covers it);
// the tool's exchange carries a span link to the tool span marked inferred
// (runagain.link.type "inferred", evidence "time").
func UnparentedRun(trace pcommon.TraceID, start time.Time) ptrace.Traces {
	td := StreamedRun(trace, start)
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	p := spans.AppendEmpty()
	p.SetTraceID(trace)
	p.SetSpanID(pcommon.SpanID{trace[15], ProxyRoot})
	p.SetParentSpanID(pcommon.SpanID{trace[15], RootSpan})
	p.SetName("runagain proxy")
	p.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(10 * time.Millisecond)))
	p.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(2990 * time.Millisecond)))
	for i := 0; i < spans.Len(); i++ {
		s := spans.At(i)
		switch s.SpanID() {
		case pcommon.SpanID{trace[15], LLMExchange}:
			s.SetParentSpanID(p.SpanID())
		case pcommon.SpanID{trace[15], ToolExchange}:
			s.SetParentSpanID(p.SpanID())
			l := s.Links().AppendEmpty()
			l.SetTraceID(trace)
			l.SetSpanID(pcommon.SpanID{trace[15], ToolSpan})
			l.Attributes().PutStr("runagain.link.type", "inferred")
			l.Attributes().PutEmptySlice("runagain.link.evidence").AppendEmpty().SetStr("time")
		}
	}
	return td
}

// Span ids of MCPRun's spans (the last byte of the trace id, then this).
const (
	MCPRoot        = 1
	MCPLLM         = 2
	MCPToolSpan    = 3
	MCPToolCall    = 4 // tools/call append_note, under MCPToolSpan
	MCPFailingTool = 5
	MCPFailingCall = 6 // tools/call read_note answering isError, recorded under the root
)

// MCP lines of MCPRun: what `runagain mcp --name notes` recorded on the server's stdio.
const (
	MCPAppendRequest  = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"append_note","arguments":{"title":"Paris","text":"sunny, 21 °C","tags":["weather","fr"]}}}`
	MCPAppendResponse = `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"appended note 3 (Paris)"}],"isError":false}}`
	MCPReadRequest    = `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"read_note","arguments":{"title":"Lyon"}}}`
	MCPReadResponse   = `{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"no note titled Lyon"}],"isError":true}}`
)

// MCPRun is an instrumented agent whose tools are an MCP server spoken to over stdio: an LLM
// call, then an execute_tool append_note span whose tools/call exchange `runagain mcp` recorded
// under it (TRACEPARENT propagated), then an execute_tool read_note span whose tools/call
// (answered isError) was recorded under the agent's root, beside it (the agent started the
// server before the tool span: only time and the tool name tie them).
func MCPRun(trace pcommon.TraceID, start time.Time) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "notes-agent")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	add := func(id, parent byte, name string, from, to int) ptrace.Span {
		s := spans.AppendEmpty()
		s.SetTraceID(trace)
		s.SetSpanID(pcommon.SpanID{trace[15], id})
		if parent != 0 {
			s.SetParentSpanID(pcommon.SpanID{trace[15], parent})
		}
		s.SetName(name)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(at(from)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(at(to)))
		return s
	}
	root := add(MCPRoot, 0, "invoke_agent notes", 0, 2000)
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	root.Attributes().PutStr("gen_ai.agent.name", "notes")
	llm := add(MCPLLM, MCPRoot, "chat gpt-4o-mini", 50, 600)
	llm.Attributes().PutStr("gen_ai.operation.name", "chat")
	llm.Attributes().PutStr("gen_ai.request.model", "gpt-4o-mini")
	llm.Attributes().PutInt("gen_ai.usage.input_tokens", 40)
	llm.Attributes().PutInt("gen_ai.usage.output_tokens", 12)
	exchange := func(id, parent byte, index int, req, resp string, from, to int) {
		s := spans.AppendEmpty()
		e := &mcp.Exchange{Server: "notes", Direction: "client", Request: []byte(req), Response: []byte(resp), Start: at(from), End: at(to),
			Index: index, SessionID: "notes-1", ProtocolVersion: "2025-06-18"}
		e.ToSpan(s)
		s.SetTraceID(trace)
		s.SetSpanID(pcommon.SpanID{trace[15], id})
		s.SetParentSpanID(pcommon.SpanID{trace[15], parent})
	}
	tool := add(MCPToolSpan, MCPRoot, "execute_tool append_note", 700, 1100)
	tool.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
	tool.Attributes().PutStr("gen_ai.tool.name", "append_note")
	exchange(MCPToolCall, MCPToolSpan, 2, MCPAppendRequest, MCPAppendResponse, 720, 1080)
	failing := add(MCPFailingTool, MCPRoot, "execute_tool read_note", 1200, 1700)
	failing.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
	failing.Attributes().PutStr("gen_ai.tool.name", "read_note")
	failing.Status().SetCode(ptrace.StatusCodeError)
	exchange(MCPFailingCall, MCPRoot, 3, MCPReadRequest, MCPReadResponse, 1220, 1680)
	return td
}

// MCPTestRun is a test run of MCPRun's agent as `runagain test` stores it when the agent is not
// instrumented: its tool calls are the MCP exchanges alone (no execute_tool spans, the exchanges
// under the root), a divergence record points at the original run's exchange (span
// OriginalExchange, not in this run), and the agent logged one record of its own on the root
// ("app.feedback", body "user clicked thumbs down").
func MCPTestRun(trace pcommon.TraceID, start time.Time) (ptrace.Traces, plog.Logs) {
	td := MCPRun(trace, start)
	ss := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	ss.RemoveIf(func(s ptrace.Span) bool { return strings.HasPrefix(s.Name(), "execute_tool") })
	root := pcommon.SpanID{trace[15], MCPRoot}
	for i := 0; i < ss.Len(); i++ {
		if s := ss.At(i); s.SpanID() != root {
			s.SetParentSpanID(root)
		}
	}
	logs := plog.NewLogs()
	lrs := logs.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	div := lrs.AppendEmpty()
	div.SetEventName(runagainattr.EventDivergence)
	div.SetTraceID(trace)
	div.SetSpanID(OriginalExchange)
	div.Attributes().PutStr(runagainattr.DivergenceField, "body.arguments.title")
	div.Body().SetStr("request 2 (tools/call append_note) differs from the recording at body.arguments.title")
	div.SetTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Second)))
	own := lrs.AppendEmpty()
	own.SetTraceID(trace)
	own.SetSpanID(root)
	own.Attributes().PutStr("event.name", "app.feedback")
	own.Body().SetStr("user clicked thumbs down")
	own.SetTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Second)))
	return td, logs
}

// OriginalExchange is the span id MCPTestRun's divergence names: an exchange of the original run.
var OriginalExchange = pcommon.SpanID{0xee, 0xee}
