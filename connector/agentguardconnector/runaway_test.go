// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/connector/agentguardconnector/internal/runaway"
)

// TestRunawaySessionRaisesOneLoopAlert feeds a generated runaway session (the same tool with the
// same arguments 20 times) in small batches, as an SDK batch span processor would, and checks
// that exactly one loop alert is raised, in the batch holding the N-th identical call.
func TestRunawaySessionRaisesOneLoopAlert(t *testing.T) {
	cfg := createDefaultConfig()
	n := cfg.Loop.Repeats
	td := runaway.Generate(runaway.Default())
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()

	h := newHarness(t, cfg)
	const perBatch = 3
	toolCalls, crossing, alerts := 0, -1, 0
	var alertBatch int
	var alertSpan pcommon.SpanID
	var nthCall pcommon.SpanID
	for start, batch := 0, 0; start < spans.Len(); start, batch = start+perBatch, batch+1 {
		b := ptrace.NewTraces()
		rs := b.ResourceSpans().AppendEmpty()
		td.ResourceSpans().At(0).Resource().CopyTo(rs.Resource())
		ss := rs.ScopeSpans().AppendEmpty()
		for i := start; i < start+perBatch && i < spans.Len(); i++ {
			sp := spans.At(i)
			sp.CopyTo(ss.Spans().AppendEmpty())
			if v, ok := sp.Attributes().Get("gen_ai.operation.name"); ok && v.Str() == "execute_tool" {
				toolCalls++
				if toolCalls == n {
					crossing, nthCall = batch, sp.SpanID()
				}
			}
		}
		md, ld := h.feed(b)
		for _, lr := range alertsOf(ld) {
			alerts++
			alertBatch = batch
			alertSpan = lr.SpanID()
			assert.Equal(t, KindLoop, attrStr(lr.Attributes(), AttrAlertKind))
			assert.Equal(t, RuleRepeatedToolCall, attrStr(lr.Attributes(), AttrAlertRule))
			assert.Equal(t, "runaway-session-1", attrStr(lr.Attributes(), "session.id"))
			assert.Equal(t, runaway.TraceID(1), lr.TraceID())
			assert.Equal(t, int64(n), attrInt(lr.Attributes(), "runagain.alert.count"))
			ids, _ := lr.Attributes().Get(AttrAlertSpanIDs)
			assert.Equal(t, n, ids.Slice().Len(), "one span id per repeated call")
			// The alert counter moves in the same batch, with an exemplar pointing at the span.
			found := false
			sumPoints(md, MetricAlerts, func(res pcommon.Map, dp pmetric.NumberDataPoint) {
				found = true
				assert.Equal(t, int64(1), dp.IntValue())
				assert.Equal(t, "weather-agent", attrStr(res, "service.name"))
				assert.Equal(t, "weather_assistant", attrStr(dp.Attributes(), "gen_ai.agent.name"))
				require.Equal(t, 1, dp.Exemplars().Len())
				assert.Equal(t, nthCall, dp.Exemplars().At(0).SpanID())
			})
			assert.True(t, found, "runagain.alerts data point in the alert batch")
		}
	}
	require.Equal(t, 20, toolCalls)
	assert.Equal(t, 1, alerts, "exactly one loop alert for 20 identical calls")
	assert.Equal(t, crossing, alertBatch, "alert raised in the batch that crosses N")
	assert.Equal(t, nthCall, alertSpan, "alert record points at the N-th call")
}

// TestRunawaySessionFile checks that testdata/runaway_session.json (the file the make-run
// end-to-end imports) is what cmd/genrunaway writes, and that it raises a loop alert.
func TestRunawaySessionFile(t *testing.T) {
	want := runaway.Generate(runaway.Default())
	raw, err := os.ReadFile("testdata/runaway_session.json")
	require.NoError(t, err)
	got, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
	require.NoError(t, err)
	wantJSON, err := (&ptrace.JSONMarshaler{}).MarshalTraces(want)
	require.NoError(t, err)
	require.JSONEq(t, string(wantJSON), string(raw), "regenerate with: go run ./connector/agentguardconnector/cmd/genrunaway -o connector/agentguardconnector/testdata/runaway_session.json")
	require.Equal(t, want.SpanCount(), got.SpanCount())
	h := newHarness(t, createDefaultConfig())
	_, ld := h.feed(got)
	recs := alertsOf(ld)
	require.Len(t, recs, 1)
	assert.Equal(t, KindLoop, attrStr(recs[0].Attributes(), AttrAlertKind))
}
