// SPDX-License-Identifier: Apache-2.0

package agentredactionprocessor

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/runagain/runagain/processor/agentredactionprocessor/internal/metadatatest"
)

// resendTraces is one LLM call of a conversation that resends its history: a chat span whose
// gen_ai.input.messages holds msgs as user messages, with the same system instructions each time.
func resendTraces(msgs ...string) ptrace.Traces {
	var parts []map[string]any
	for _, m := range msgs {
		parts = append(parts, map[string]any{"role": "user", "parts": []map[string]any{{"type": "text", "content": m}}})
	}
	b, _ := json.Marshal(parts)
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	s := spans.AppendEmpty()
	s.SetName("chat gpt-4o")
	s.Attributes().PutStr("gen_ai.input.messages", string(b))
	s.Attributes().PutStr("gen_ai.system_instructions", `[{"type":"text","content":"You are a careful assistant. Answer from the documents the tools return; say when you do not know."}]`)
	setIDs(spans)
	return td
}

// TestCleanCacheResendHistory: on a conversation that resends its history, the processor with
// its clean-value cache gives exactly the output of the processor without one (clean_cache_mib:
// 0), the resent messages and system instructions come from the cache (hits counted), and a new
// message that differs from a cached one by one byte and holds an e-mail address is redacted.
func TestCleanCacheResendHistory(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	cached, uncached := new(consumertest.TracesSink), new(consumertest.TracesSink)
	cfg := createDefaultConfig().(*Config)
	cfg.HashKey = "0123456789abcdef0123456789abcdef"
	p, err := NewFactory().CreateTraces(context.Background(), metadatatest.NewSettings(tt), cfg, cached)
	require.NoError(t, err)
	off := *cfg
	off.CleanCacheMiB = 0
	q, err := NewFactory().CreateTraces(context.Background(), metadatatest.NewSettings(componenttest.NewTelemetry()), &off, uncached)
	require.NoError(t, err)

	m1 := "please summarise the quarterly revenue report for the board, and send it to jane.doe example.com"
	m2 := "also list the open questions from the meeting notes of thursday, in the order they were raised"
	m3 := strings.Replace(m1, "jane.doe example.com", "jane.doe@example.com", 1) // one byte changed
	calls := [][]string{{m1}, {m1, m2}, {m1, m2, m3}}
	for _, msgs := range calls {
		require.NoError(t, p.ConsumeTraces(context.Background(), resendTraces(msgs...)))
		require.NoError(t, q.ConsumeTraces(context.Background(), resendTraces(msgs...)))
	}
	require.Len(t, cached.AllTraces(), len(calls))
	for i := range calls {
		assert.Equal(t, dump(uncached.AllTraces()[i]), dump(cached.AllTraces()[i]), "call %d", i)
	}
	last := dump(cached.AllTraces()[2])
	assert.NotContains(t, last, "jane.doe@example.com")
	assert.Contains(t, last, "jane.doe example.com", "the cached clean message is kept as it was")

	// Lookups: array elements; for an array of two or more, the head entry of its first element
	// (the lengths of the runs from it seen before) and then such a run (the history of the call
	// before); in an element not known, JSON string leaves of 64 bytes or more and the JSON
	// between them (arrays are not looked up as whole values). Call 1 misses 8: the system
	// instructions' one element, its leaf, the JSON before and after it, and the same four of the
	// input messages. Call 2: the system instructions' element hits; m1's head entry misses, the
	// run [m1 m2] misses, the element m1 hits, the element m2 misses and in it the leaf m2
	// misses, the JSON before and after it hit (4 hits, 4 misses). Call 3: the system
	// instructions hit, m1's head entry hits and names the run [m1 m2], which hits, the element
	// m3 misses, in it the leaf m3 misses and the JSON before and after it hit (5 hits, 2
	// misses). 9 hits, 14 misses.
	metadatatest.AssertEqualProcessorAgentRedactionCleanCacheHits(t, tt, []metricdata.DataPoint[int64]{{Value: 9}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorAgentRedactionCleanCacheMisses(t, tt, []metricdata.DataPoint[int64]{{Value: 14}}, metricdatatest.IgnoreTimestamp())
	require.NoError(t, p.Shutdown(context.Background()))
	require.NoError(t, q.Shutdown(context.Background()))
}
