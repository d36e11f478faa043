// SPDX-License-Identifier: Apache-2.0

package agentrun

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/proxy"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/sqlitestore"
)

// holder is a Holder whose exchanges are given by the test; Emit keeps what was sent.
type holder struct {
	held, sent []ptrace.Traces
}

func (h *holder) Hold()                     {}
func (h *holder) TakeHeld() []ptrace.Traces { out := h.held; h.held = nil; return out }
func (h *holder) Emit(td ptrace.Traces)     { h.sent = append(h.sent, td) }
func (h *holder) spans() (n int)            { return countSpans(h.sent) }
func countSpans(tds []ptrace.Traces) (n int) {
	for _, td := range tds {
		n += td.SpanCount()
	}
	return n
}

// agentSpans is an instrumented agent's root span and one LLM call in trace, its resource
// carrying the execution's id (what OTEL_RESOURCE_ATTRIBUTES from Joiner.ResourceEnv gives);
// parent is the root's parent (the proxy's root when the SDK read TRACEPARENT).
func agentSpans(trace pcommon.TraceID, parent pcommon.SpanID, exec pcommon.TraceID, start time.Time) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "weather-agent")
	rs.Resource().Attributes().PutStr(runagainattr.ExecutionTraceID, exec.String())
	sps := rs.ScopeSpans().AppendEmpty().Spans()
	root := sps.AppendEmpty()
	root.SetTraceID(trace)
	root.SetSpanID(pcommon.SpanID{0xa, 1})
	root.SetParentSpanID(parent)
	root.SetName("invoke_agent weather")
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	root.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	root.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Second)))
	llm := sps.AppendEmpty()
	llm.SetTraceID(trace)
	llm.SetSpanID(pcommon.SpanID{0xa, 2})
	llm.SetParentSpanID(root.SpanID())
	llm.SetName("chat gpt-4o-mini")
	llm.Attributes().PutStr("gen_ai.operation.name", "chat")
	llm.Attributes().PutStr("gen_ai.request.model", "gpt-4o-mini")
	llm.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(100 * time.Millisecond)))
	llm.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(600 * time.Millisecond)))
	return td
}

// joinStore is a real hot SQLite file holding td, and the Joiner's opener for it.
func joinStore(t *testing.T, td ptrace.Traces) func() (store.Reader, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hot.db")
	db, err := sqlitestore.Open(path, sqlitestore.Options{})
	require.NoError(t, err)
	rejected, err := db.WriteTraces(context.Background(), td)
	require.NoError(t, err)
	require.Empty(t, rejected)
	require.NoError(t, db.Close())
	return func() (store.Reader, error) { return sqlitestore.Open(path, sqlitestore.Options{ReadOnly: true}) }
}

var otlpEnv = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318"}

// An attempt whose requests all carried a traceparent (or made none) holds no exchange, yet its
// root span still belongs in the agent's trace: Join waits for that trace and returns it, so the
// caller's PlaceRoot makes the execution one run, not the agent's plus a lone root span.
func TestJoinWaitsWithNothingHeld(t *testing.T) {
	root := proxy.Root{TraceID: proxy.NewTraceID(), SpanID: proxy.NewSpanID()}
	start := time.Now().Add(-2 * time.Second)
	agent := pcommon.TraceID{0xa1, 0xa1}
	j := NewJoiner(5*time.Second, root, otlpEnv, joinStore(t, agentSpans(agent, pcommon.SpanID{}, root.TraceID, start)), "rerun")
	require.NotNil(t, j)

	var errOut bytes.Buffer
	h := &holder{}
	jn := j.Join(context.Background(), h, start, &errOut)
	require.NotNil(t, jn, errOut.String())
	assert.Equal(t, agent, jn.Trace)
	assert.Equal(t, pcommon.SpanID{0xa, 1}, jn.AgentRoot)
	assert.Contains(t, errOut.String(), "runagain rerun: joined the agent's trace "+agent.String()+" (by resource): no exchange without traceparent to place")
	assert.Zero(t, h.spans())

	// Attempt places the attempt's root span under the agent's root.
	rootSpan := proxy.Command{Root: root, Args: []string{"node", "agent.js"}, Start: start, End: time.Now()}.RootSpan()
	into, ok := j.Attempt(context.Background(), h, nil, rootSpan, start, &bytes.Buffer{})
	require.True(t, ok)
	assert.Equal(t, agent, into)
	sp := rootSpan.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	assert.Equal(t, agent, sp.TraceID())
	assert.Equal(t, jn.AgentRoot, sp.ParentSpanID())
}

// An agent whose SDK read TRACEPARENT writes its spans into the execution's own trace: the run is
// one already. Join finds that at once instead of waiting out --join-wait for another trace, says
// nothing, and sends the held exchanges as they are (in the execution's trace, their parent the
// proxy's root).
func TestJoinDoesNotWaitWhenTheAgentReadTraceparent(t *testing.T) {
	root := proxy.Root{TraceID: proxy.NewTraceID(), SpanID: proxy.NewSpanID()}
	start := time.Now().Add(-2 * time.Second)
	j := NewJoiner(time.Minute, root, otlpEnv, joinStore(t, agentSpans(root.TraceID, root.SpanID, root.TraceID, start)), "proxy")
	require.NotNil(t, j)

	ex := ptrace.NewTraces()
	sp := ex.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(root.TraceID)
	sp.SetSpanID(proxy.NewSpanID())
	sp.SetParentSpanID(root.SpanID)
	h := &holder{held: []ptrace.Traces{ex}}

	var errOut bytes.Buffer
	began := time.Now()
	jn := j.Join(context.Background(), h, start, &errOut)
	assert.Nil(t, jn)
	assert.Less(t, time.Since(began), 30*time.Second, "waited out --join-wait for a trace that is not coming")
	assert.NotContains(t, errOut.String(), "joined")
	assert.NotContains(t, errOut.String(), "no trace")
	require.Equal(t, 1, h.spans(), "the held exchange is sent")
	assert.Equal(t, root.TraceID, sp.TraceID())
	assert.Equal(t, root.SpanID, sp.ParentSpanID())

	jn = j.Find(context.Background(), start, &errOut)
	assert.Nil(t, jn)
	assert.NotContains(t, errOut.String(), "joined", "replay's Find is as quiet")
	assert.NotContains(t, errOut.String(), "no trace", "replay's Find is as quiet")
}

// No trace of the command's own: after the wait, Join says the run is the proxy's own, whether
// or not it held exchanges.
func TestJoinSaysWhenNoTraceArrived(t *testing.T) {
	root := proxy.Root{TraceID: proxy.NewTraceID(), SpanID: proxy.NewSpanID()}
	other := pcommon.TraceID{0xb2}
	start := time.Now().Add(-2 * time.Second)
	j := NewJoiner(600*time.Millisecond, root, otlpEnv, joinStore(t, agentSpans(other, pcommon.SpanID{}, proxy.NewTraceID(), start)), "proxy")
	var errOut bytes.Buffer
	assert.Nil(t, j.Join(context.Background(), &holder{}, start, &errOut))
	assert.Contains(t, errOut.String(), "no trace of the command's own arrived within --join-wait 600ms; the run is the proxy's own trace")
}

// --join-wait: negative is refused; 0 with an OTLP exporter configured warns that an agent's own
// trace would make a second run; 0 without one, or a positive wait, says nothing.
func TestCheckJoinWait(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	_, err := CheckJoinWait("proxy", -time.Second, nil)
	require.ErrorContains(t, err, "--join-wait -1s: want 0 (no join) or a positive duration")
	w, err := CheckJoinWait("rerun", 0, otlpEnv)
	require.NoError(t, err)
	assert.Equal(t, "runagain rerun: --join-wait 0: the command's own trace is not joined; an agent whose SDK ignores TRACEPARENT gives a second run beside this one, counting the same calls", w)
	for _, c := range []struct {
		wait time.Duration
		env  []string
	}{{0, nil}, {10 * time.Second, otlpEnv}, {0, []string{"OTEL_TRACES_EXPORTER=none"}}} {
		w, err := CheckJoinWait("proxy", c.wait, c.env)
		assert.NoError(t, err)
		assert.Empty(t, w, "%+v", c)
	}
}
