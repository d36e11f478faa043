// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// sendOTLP sends td and ld (either may be empty) to the collector's OTLP gRPC endpoint, the way
// an instrumented agent's exporter does.
func sendOTLP(t *testing.T, c *collectortest.Collector, td ptrace.Traces, ld plog.Logs) {
	t.Helper()
	conn, err := grpc.NewClient(c.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if td.SpanCount() > 0 {
		_, err = ptraceotlp.NewGRPCClient(conn).Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
		require.NoError(t, err)
	}
	if ld.LogRecordCount() > 0 {
		_, err = plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
		require.NoError(t, err)
	}
}

// runBuilder builds one run (trace) of spans and the log records pointing at them.
type runBuilder struct {
	trace pcommon.TraceID
	td    ptrace.Traces
	spans ptrace.SpanSlice
	ld    plog.Logs
	logs  plog.LogRecordSlice
	t0    time.Time
}

func newRun(trace byte, service string) *runBuilder {
	b := &runBuilder{trace: pcommon.TraceID{0x72, 0x75, 0x6e, 0x61, 0x67, 0x61, 0x69, 0x6e, 0xc1, 0, 0, 0, 0, 0, 0, trace},
		td: ptrace.NewTraces(), ld: plog.NewLogs(), t0: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC).Add(time.Duration(trace) * time.Minute)}
	rs := b.td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", service)
	b.spans = rs.ScopeSpans().AppendEmpty().Spans()
	rl := b.ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", service)
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName("@opentelemetry/instrumentation-openai")
	b.logs = sl.LogRecords()
	return b
}

// span adds a span id (1-based byte) under parent (0: root), from ms to ms+durMS after t0.
func (b *runBuilder) span(id, parent byte, name string, ms, durMS int, attrs map[string]any) ptrace.Span {
	s := b.spans.AppendEmpty()
	s.SetTraceID(b.trace)
	s.SetSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, 0, id})
	if parent != 0 {
		s.SetParentSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, 0, parent})
	}
	s.SetName(name)
	s.SetKind(ptrace.SpanKindClient)
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(b.t0.Add(time.Duration(ms) * time.Millisecond)))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(b.t0.Add(time.Duration(ms+durMS) * time.Millisecond)))
	if err := s.Attributes().FromRaw(attrs); err != nil {
		panic(err)
	}
	return s
}

// log adds a log record for span id at ms after t0, named by the attribute event.name as the
// JavaScript instrumentation does, with a Map body.
func (b *runBuilder) log(span byte, ms int, event string, body map[string]any) {
	lr := b.logs.AppendEmpty()
	lr.SetTraceID(b.trace)
	lr.SetSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, 0, span})
	lr.SetTimestamp(pcommon.NewTimestampFromTime(b.t0.Add(time.Duration(ms) * time.Millisecond)))
	lr.SetSeverityNumber(plog.SeverityNumberInfo)
	lr.Attributes().PutStr("event.name", event)
	lr.Attributes().PutStr("gen_ai.system", "openai")
	if err := lr.Body().SetEmptyMap().FromRaw(body); err != nil {
		panic(err)
	}
}

func (b *runBuilder) id() string { return b.trace.String() }

func (b *runBuilder) spanID(id byte) string { return pcommon.SpanID{0, 0, 0, 0, 0, 0, 0, id}.String() }

// chatAttrs are the span attributes @opentelemetry/instrumentation-openai sets on a chat call.
func chatAttrs(in, out int, finish string) map[string]any {
	return map[string]any{"gen_ai.operation.name": "chat", "gen_ai.system": "openai",
		"gen_ai.request.model": "gpt-4o-mini", "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
		"gen_ai.usage.input_tokens": in, "gen_ai.usage.output_tokens": out,
		"gen_ai.response.finish_reasons": []any{finish}, "server.address": "127.0.0.1"}
}

// waitShow polls `runagain show --json` until the run holds spans spans and logs agent records.
func waitShow(t *testing.T, c *collectortest.Collector, trace string, spans, logs int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var got struct {
		Spans []struct {
			Logs []json.RawMessage `json:"logs"`
		} `json:"spans"`
	}
	for time.Now().Before(deadline) {
		out, _, err := c.CLI("show", "--json", "--no-rehydrate", trace)
		if err == nil && json.Unmarshal([]byte(out), &got) == nil {
			n := 0
			for _, s := range got.Spans {
				n += len(s.Logs)
			}
			if len(got.Spans) == spans && n == logs {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	out, errOut, err := c.CLI("show", "--no-rehydrate", trace)
	t.Fatalf("run %s did not arrive whole (%d spans, %d records wanted): %v %s\n%s", trace, spans, logs, err, errOut, out)
}

// TestContentAsLogRecordsStep sends a two-call tool-using agent the way the official OpenAI
// instrumentations do (messages as log records with Map bodies, the prompt's records sharing
// one timestamp) and checks `runagain show --step N` gives exactly the messages of each call,
// labelled as reconstructed from log records, and `show` lists the records under their span as
// JSON, never as Go map text.
func TestContentAsLogRecordsStep(t *testing.T) {
	c := collectortest.Start(t, collectortest.Options{})
	r := newRun(1, "weather-agent")
	r.span(1, 0, "invoke_agent weather", 0, 3000, map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"})
	r.span(2, 1, "chat gpt-4o-mini", 10, 900, chatAttrs(52, 17, "tool_calls"))
	r.span(3, 1, "execute_tool get_weather", 1000, 100, map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"})
	r.span(4, 1, "chat gpt-4o-mini", 1200, 1500, chatAttrs(97, 12, "stop"))
	toolCall := map[string]any{"tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
		"function": map[string]any{"name": "get_weather", "arguments": `{"location":"Paris"}`}}}}
	// The prompt's records share one timestamp (the instrumentation stamps them together): their
	// order is the order they were sent.
	r.log(2, 10, "gen_ai.system.message", map[string]any{"content": "You are a weather bot."})
	r.log(2, 10, "gen_ai.user.message", map[string]any{"content": "Weather in Paris?"})
	r.log(2, 910, "gen_ai.choice", map[string]any{"index": 0, "finish_reason": "tool_calls", "message": toolCall})
	r.log(4, 1200, "gen_ai.system.message", map[string]any{"content": "You are a weather bot."})
	r.log(4, 1200, "gen_ai.user.message", map[string]any{"content": "Weather in Paris?"})
	r.log(4, 1200, "gen_ai.assistant.message", toolCall)
	r.log(4, 1200, "gen_ai.tool.message", map[string]any{"content": "rainy, 57°F", "id": "call_1"})
	r.log(4, 2700, "gen_ai.choice", map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"content": "It is rainy in Paris, 57°F."}})
	sendOTLP(t, c, r.td, r.ld)
	waitShow(t, c, r.id(), 4, 8)

	step2 := cli(t, c, "show", r.id(), "--step", "2")
	assert.Equal(t, `step 2 of 2: chat gpt-4o-mini (span `+r.spanID(4)+`, model gpt-4o-mini-2024-07-18)

=== input: 4 messages, reconstructed from log records (gen_ai.* events)

--- system
You are a weather bot.

--- user
Weather in Paris?

--- assistant
[tool_call get_weather id=call_1]
{"location":"Paris"}

--- tool
[tool_call_response id=call_1]
rainy, 57°F

=== output: 1 message, reconstructed from log records (gen_ai.* events)

--- assistant (finish_reason stop)
It is rainy in Paris, 57°F.
`, step2)

	step1 := cli(t, c, "show", r.id(), "--step", "1")
	assert.Contains(t, step1, "=== input: 2 messages, reconstructed from log records")
	assert.Contains(t, step1, "--- assistant (finish_reason tool_calls)\n[tool_call get_weather id=call_1]\n{\"location\":\"Paris\"}\n")

	show := cli(t, c, "show", r.id())
	assert.NotContains(t, show, "map[")
	assert.Contains(t, show, `log record gen_ai.tool.message`)
	assert.Contains(t, show, `body: {"content":"rainy, 57°F","id":"call_1"}`)
	assert.NotContains(t, show, "records pointing at this run", "the agent's records are under their spans")

	// Cost by hand from the genai-prices table: gpt-4o-mini $0.15/M input, $0.60/M output.
	var rows []store.RunSummary
	require.NoError(t, json.Unmarshal([]byte(cli(t, c, "sessions", "--json")), &rows))
	require.Len(t, rows, 1)
	assert.InDelta(t, (float64(52+97)*0.15+float64(17+12)*0.60)/1e6, rows[0].CostUSD, 1e-12)
}
