// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/runagainattr"
)

// joinedRun is one run of an instrumented agent joined with the proxy's recorded exchanges of its
// two LLM calls, as two batches (the agent's SDK and the proxy export separately): the agent's
// chat spans, and the exchanges with their GenAI attributes derived from the bodies (one below
// the first chat span, one beside the second, overlapping it). 1M input tokens a call.
func joinedRun(trace uint64) (agent, proxy ptrace.Traces) {
	chat := func(exchange bool) map[string]any {
		a := map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
			"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": int64(1_000_000), "gen_ai.usage.output_tokens": int64(0)}
		if exchange {
			a[runagainattr.FixtureSource] = "proxy"
			a[runagainattr.GenAIDerived] = true
		}
		return a
	}
	b := newTraceBuilder()
	root := b.span("svc", trace, 1, t0, 10*time.Second, map[string]any{"gen_ai.operation.name": "invoke_agent"})
	c1 := b.span("svc", trace, 2, t0.Add(time.Second), 2*time.Second, chat(false))
	c1.SetParentSpanID(root.SpanID())
	c2 := b.span("svc", trace, 3, t0.Add(4*time.Second), 2*time.Second, chat(false))
	c2.SetParentSpanID(root.SpanID())
	b.nextBatch()
	x1 := b.span("proxy", trace, 4, t0.Add(1100*time.Millisecond), 1800*time.Millisecond, chat(true))
	x1.SetParentSpanID(c1.SpanID())
	x2 := b.span("proxy", trace, 5, t0.Add(4100*time.Millisecond), 1800*time.Millisecond, chat(true))
	x2.SetParentSpanID(root.SpanID())
	halves := batches(b.td)
	return halves[0], halves[1]
}

// meteredCost feeds batches to h in order and returns the run's final metered cost (USD): the
// last cumulative value of every runagain.cost series, summed.
func meteredCost(h *harness, in ...ptrace.Traces) float64 {
	last := map[[2]string]float64{}
	for _, td := range in {
		md, _ := h.feed(td)
		sumPoints(md, MetricCost, func(res pcommon.Map, dp pmetric.NumberDataPoint) {
			last[[2]string{attrStr(res, "service.name"), mapKey(dp.Attributes())}] = dp.DoubleValue()
		})
	}
	total := 0.0
	for _, v := range last {
		total += v
	}
	return total
}

func mapKey(m pcommon.Map) string { return fmt.Sprint(m.AsRaw()) }

// TestJoinedRunMeteredOnceAcrossBatches: a joined run whose halves arrive in separate batches is
// metered once (two calls of 1M gpt-4o-mini input tokens: $0.30) whichever half arrives first;
// with join_window.max_spans 0 (the rule within each batch only) it is metered twice, as before.
func TestJoinedRunMeteredOnceAcrossBatches(t *testing.T) {
	for _, first := range []string{"agent", "proxy"} {
		t.Run(first+" first", func(t *testing.T) {
			agent, proxy := joinedRun(1)
			order := []ptrace.Traces{agent, proxy}
			if first == "proxy" {
				order = []ptrace.Traces{proxy, agent}
			}
			h := newHarness(t, createDefaultConfig())
			assert.InDelta(t, 0.30, meteredCost(h, order...), 1e-9, "each call once")
			spans, traces := h.g.state.join.Remembered()
			assert.Equal(t, [2]int{5, 1}, [2]int{spans, traces}, "the run's spans are remembered, bounded by join_window")

			cfg := createDefaultConfig()
			cfg.JoinWindow.MaxSpans = 0
			agent, proxy = joinedRun(1)
			order = []ptrace.Traces{agent, proxy}
			if first == "proxy" {
				order = []ptrace.Traces{proxy, agent}
			}
			assert.InDelta(t, 0.60, meteredCost(newHarness(t, cfg), order...), 1e-9, "per batch: each call twice")
		})
	}
	// Both halves in one batch: once, with or without the window.
	agent, proxy := joinedRun(2)
	proxy.ResourceSpans().MoveAndAppendTo(agent.ResourceSpans())
	cfg := createDefaultConfig()
	cfg.JoinWindow.MaxSpans = 0
	assert.InDelta(t, 0.30, meteredCost(newHarness(t, cfg), agent), 1e-9)
}
