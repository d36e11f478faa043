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
