// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// TestMetricsFlushedOnTicker: batches are analysed as they arrive (alert records go out with
// their batch) but metrics wait for the flush ticker (metrics_flush_interval on the injected
// clock): one flush carries the cumulative values of every batch since the last one, stamped
// with the flush time, and at most exemplars.max_per_data_point exemplars, the first recorded.
// A flush with nothing changed sends nothing; Shutdown flushes what is left.
func TestMetricsFlushedOnTicker(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Exemplars.MaxPerDataPoint = 2
	h := newHarness(t, cfg)
	llm := map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
		"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": int64(1_000_000), "gen_ai.usage.output_tokens": int64(0)}
	consume := func(span uint64) {
		b := newTraceBuilder()
		b.span("svc", 1, span, t0, time.Second, llm)
		require.NoError(t, h.tm.ConsumeTraces(context.Background(), b.td))
		require.NoError(t, h.tl.ConsumeTraces(context.Background(), b.td))
	}
	for span := uint64(1); span <= 3; span++ {
		consume(span)
	}
	assert.Empty(t, h.ms.AllMetrics(), "no metrics before the flush ticker fires")

	// Both tickers (expiry, flush) are waiting on the fake clock; fire the flush ticker.
	require.NoError(t, h.clock.BlockUntilContext(context.Background(), 2))
	h.clock.Advance(cfg.MetricsFlushInterval)
	require.Eventually(t, func() bool { return len(h.ms.AllMetrics()) == 1 }, 10*time.Second, time.Millisecond,
		"one flush, one metrics batch")
	md := h.ms.AllMetrics()[0]
	var cost float64
	points := 0
	sumPoints(md, MetricCost, func(_ pcommon.Map, dp pmetric.NumberDataPoint) {
		points++
		cost = dp.DoubleValue()
		assert.Equal(t, pcommon.NewTimestampFromTime(h.clock.Now()), dp.Timestamp(), "stamped at the flush")
		assert.Equal(t, pcommon.NewTimestampFromTime(t0.Add(time.Hour)), dp.StartTimestamp(), "the series began with the first batch")
		require.Equal(t, 2, dp.Exemplars().Len(), "exemplars.max_per_data_point, the first ones")
		assert.Equal(t, spanID(1), dp.Exemplars().At(0).SpanID())
		assert.Equal(t, spanID(2), dp.Exemplars().At(1).SpanID())
	})
	assert.Equal(t, 1, points)
	assert.InDelta(t, 3*0.15, cost, 1e-9, "cumulative over the three batches")

	// Nothing new: a flush sends nothing (called here, as a tick's timing is not observable).
	h.g.flush(context.Background())
	assert.Len(t, h.ms.AllMetrics(), 1, "a flush with no series changed sends no batch")
	h.clock.Advance(cfg.MetricsFlushInterval)
	consume(4) // recorded after that tick (or before it: either way the flushes carry it once)
	require.NoError(t, h.tm.Shutdown(context.Background()))
	require.NoError(t, h.tl.Shutdown(context.Background()))
	var last float64
	n := 0
	for _, m := range h.ms.AllMetrics()[1:] {
		sumPoints(m, MetricCost, func(_ pcommon.Map, dp pmetric.NumberDataPoint) { last = dp.DoubleValue(); n++ })
	}
	assert.Equal(t, 1, n, "span 4 reaches the pipeline once: from a tick or from Shutdown's flush")
	assert.InDelta(t, 4*0.15, last, 1e-9, "the flush at Shutdown sends what the ticks had not")
}

// TestShutdownFlushesBeforeMetricsPipelineStops: the collector stops the traces to metrics
// instance before the metrics pipeline it feeds, but the traces to logs instance (the guard's
// last holder) may stop after that pipeline; the metrics left since the last tick must reach the
// pipeline when the metrics instance stops, not when the guard does.
func TestShutdownFlushesBeforeMetricsPipelineStops(t *testing.T) {
	h := newHarness(t, createDefaultConfig())
	b := newTraceBuilder()
	b.span("svc", 1, 1, t0, time.Second, map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
		"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": int64(1_000_000), "gen_ai.usage.output_tokens": int64(0)})
	require.NoError(t, h.tm.ConsumeTraces(context.Background(), b.td))
	require.NoError(t, h.tl.ConsumeTraces(context.Background(), b.td))
	require.NoError(t, h.tm.Shutdown(context.Background()))
	n := 0
	for _, m := range h.ms.AllMetrics() {
		sumPoints(m, MetricCost, func(pcommon.Map, pmetric.NumberDataPoint) { n++ })
	}
	assert.Equal(t, 1, n, "the cost reached the metrics pipeline when its instance stopped")
	h.ms.Reset() // the metrics pipeline has stopped: the guard's own stop must send nothing more
	require.NoError(t, h.tl.Shutdown(context.Background()))
	assert.Empty(t, h.ms.AllMetrics())
}
