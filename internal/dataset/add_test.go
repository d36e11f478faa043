// SPDX-License-Identifier: Apache-2.0

package dataset

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// chatRun is a proxy-recorded run of one chat completions call answering answer; withExchange
// false leaves only the agent's root span (nothing to replay).
func chatRun(t *testing.T, id byte, answer string, withExchange bool) *store.Run {
	t.Helper()
	trace := pcommon.TraceID{15: id}
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	root := spans.AppendEmpty()
	root.SetTraceID(trace)
	root.SetSpanID(pcommon.SpanID{7: 1})
	root.SetName("runagain proxy agent")
	root.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	root.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Second)))
	if withExchange {
		ex := &fixture.Exchange{Method: http.MethodPost, URL: "https://api.openai.com/v1/chat/completions", Status: 200,
			RequestHeader:  http.Header{"Content-Type": {"application/json"}},
			RequestBody:    []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`),
			ResponseHeader: http.Header{"Content-Type": {"application/json"}},
			ResponseBody:   []byte(`{"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"` + answer + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`),
			Source:         "proxy", Start: start.Add(10 * time.Millisecond), End: start.Add(500 * time.Millisecond)}
		sp := spans.AppendEmpty()
		fixture.ToSpan(ex, sp)
		sp.SetTraceID(trace)
		sp.SetSpanID(pcommon.SpanID{7: 2})
		sp.SetParentSpanID(root.SpanID())
	}
	return &store.Run{TraceID: trace.String(), Tier: store.TierHot, Traces: td, Logs: plog.NewLogs()}
}

func viewOf(t *testing.T, run *store.Run) *runview.View {
	t.Helper()
	v, err := runview.Build(context.Background(), run, runview.Options{})
	require.NoError(t, err)
	return v
}

// TestNewCaseAndAdd: the one path `dataset add` and the UI's "Add to dataset" take. A case
// carries its parsed expectations; a case that cannot work is named in problems (not refused);
// a run only in the warm tier and an unparsable expectation are refused with the run named;
// Add keeps the newest version's other cases and replaces one with the same id.
func TestNewCaseAndAdd(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())

	a, problems, err := NewCase(viewOf(t, chatRun(t, 1, "sunny", true)), "", "", []string{"output=recorded"})
	require.NoError(t, err)
	assert.Empty(t, problems)
	assert.Equal(t, pcommon.TraceID{15: 1}.String(), a.ID, "the case id defaults to the trace id")
	require.Len(t, a.Expect.Expect, 1)
	assert.Equal(t, 1, a.Fixtures())

	b, problems, err := NewCase(viewOf(t, chatRun(t, 2, "rain", false)), "no-replay", "", []string{"output=never said"})
	require.NoError(t, err)
	require.Len(t, problems, 2, "nothing to replay, and the recorded run fails its expectation")
	assert.Contains(t, problems[0], "no recorded HTTP exchanges")
	assert.Contains(t, problems[1], "the recorded run itself fails")

	warm := chatRun(t, 3, "x", true)
	warm.Tier = store.TierWarm
	_, _, err = NewCase(viewOf(t, warm), "", "", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "only in the warm tier")
	_, _, err = NewCase(viewOf(t, chatRun(t, 4, "x", true)), "", "", []string{"max_cost_usd=NaN"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), pcommon.TraceID{15: 4}.String())

	m1, created, err := st.Add(ctx, "smoke", "", []*Case{a, b})
	require.NoError(t, err)
	assert.True(t, created)
	assert.Len(t, m1.Cases, 2)

	// The same id again, from another run: replaced, the other case kept.
	a2, _, err := NewCase(viewOf(t, chatRun(t, 5, "cloudy", true)), a.ID, "", nil)
	require.NoError(t, err)
	m2, created, err := st.Add(ctx, "smoke", "", []*Case{a2})
	require.NoError(t, err)
	assert.True(t, created)
	cs, err := st.Cases(ctx, m2)
	require.NoError(t, err)
	byID := map[string]*Case{}
	for _, c := range cs {
		byID[c.ID] = c
	}
	require.Len(t, byID, 2)
	assert.Equal(t, pcommon.TraceID{15: 5}.String(), byID[a.ID].TraceID, "replaced by the new run")
	assert.Contains(t, byID, "no-replay")

	_, _, err = st.Add(ctx, "bad name/", "", []*Case{a})
	require.Error(t, err)
}
