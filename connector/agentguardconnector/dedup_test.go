// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// TestRedeliveredSpanCountedOnce: the same span delivered twice (an exporter retrying after a
// lost acknowledgement) counts its cost and tokens once; a different span with the same content
// counts again; with max_seen_spans 1, a redelivery after one newer span counts again (bounded).
func TestRedeliveredSpanCountedOnce(t *testing.T) {
	llm := map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
		"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": int64(1_000_000), "gen_ai.usage.output_tokens": int64(0)}
	cost := func(md pmetric.Metrics) float64 {
		total := 0.0
		sumPoints(md, MetricCost, func(_ pcommon.Map, dp pmetric.NumberDataPoint) { total += dp.DoubleValue() })
		return total
	}
	send := func(h *harness, span uint64) float64 {
		b := newTraceBuilder()
		b.span("svc", 1, span, t0, time.Second, llm)
		md, _ := h.feed(b.td)
		return cost(md)
	}

	// runagain.cost is a cumulative counter: each batch with priced spans emits the running total.
	h := newHarness(t, createDefaultConfig())
	assert.InDelta(t, 0.15, send(h, 1), 1e-9, "1M input tokens of gpt-4o-mini: $0.15")
	assert.Zero(t, send(h, 1), "the same (trace id, span id) again: nothing counted, nothing emitted")
	assert.InDelta(t, 0.30, send(h, 2), 1e-9, "another span: counted")

	cfg := createDefaultConfig()
	cfg.MaxSeenSpans = 1
	h = newHarness(t, cfg)
	assert.InDelta(t, 0.15, send(h, 1), 1e-9)
	assert.InDelta(t, 0.30, send(h, 2), 1e-9)
	assert.InDelta(t, 0.45, send(h, 1), 1e-9, "span 1 left the window of 1: counted again")
}
