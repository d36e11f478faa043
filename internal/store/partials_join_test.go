// SPDX-License-Identifier: Apache-2.0

package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/runview/rule"
)

// joinedHalves is a joined run in two batches: an instrumented agent's chat span (1,000 input
// tokens) and the proxy's exchange of the same call below it, its GenAI attributes derived.
func joinedHalves() (agent, proxy ptrace.Traces) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	add := func(sid, parent byte, exchange bool, startMS, endMS int) ptrace.Traces {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "svc")
		s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		s.SetTraceID(pcommon.TraceID{7})
		s.SetSpanID(pcommon.SpanID{sid})
		if parent != 0 {
			s.SetParentSpanID(pcommon.SpanID{parent})
		}
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(startMS) * time.Millisecond)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(endMS) * time.Millisecond)))
		a := s.Attributes()
		a.PutStr("gen_ai.operation.name", "chat")
		a.PutStr("gen_ai.request.model", "gpt-4o-mini")
		a.PutStr("session.id", "conv-7")
		a.PutInt("gen_ai.usage.input_tokens", 1000)
		a.PutInt("gen_ai.usage.output_tokens", 10)
		if exchange {
			a.PutStr(runagainattr.FixtureSource, "proxy")
			a.PutBool(runagainattr.GenAIDerived, true)
		}
		return td
	}
	return add(1, 0, false, 0, 100), add(2, 1, true, 10, 90)
}

// TestJoinedPartialsCountOnceAcrossBatches: the cold tier's session partials of a joined run whose
// halves arrive in separate batches add the call's tokens once, either half first, with a
// window; batch by batch (Partials), twice.
func TestJoinedPartialsCountOnceAcrossBatches(t *testing.T) {
	ingested := time.Date(2026, 11, 1, 10, 1, 0, 0, time.UTC).UnixNano()
	sum := func(join *rule.Window, batches ...ptrace.Traces) (in int64, spans int64) {
		for _, td := range batches {
			for _, p := range JoinedPartials(td, plog.Logs{}, nil, ingested, nil, join) {
				assert.Equal(t, "conv-7", p.SessionID)
				in += p.InputTokens
				spans += p.Spans
			}
		}
		return in, spans
	}
	agent, proxy := joinedHalves()
	in, spans := sum(nil, agent, proxy)
	assert.EqualValues(t, 2000, in, "batch by batch: twice")
	assert.EqualValues(t, 2, spans)
	for _, order := range [][2]ptrace.Traces{{agent, proxy}, {proxy, agent}} {
		in, spans = sum(rule.NewWindow(100, time.Minute), order[0], order[1])
		assert.EqualValues(t, 1000, in, "across batches: once")
		assert.EqualValues(t, 2, spans, "both spans are still the session's")
	}
}
