// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/connector/agentguardconnector/internal/metadata"
	"github.com/runagain/runagain/connector/agentguardconnector/internal/runaway"
	"github.com/runagain/runagain/internal/pricing"
)

func (h *harness) sessionCount() int {
	h.g.mu.Lock()
	defer h.g.mu.Unlock()
	return h.g.state.sessions.Len()
}

// TestSessionsBoundedAndExpired checks the LRU bound, that idle sessions end on the expiry
// ticker (driven by the injected clock), and that ended sessions feed the cost baseline.
func TestSessionsBoundedAndExpired(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.MaxSessions = 50
	h := newHarness(t, cfg)
	for batch := 0; batch < 10; batch++ {
		b := newTraceBuilder()
		for i := 0; i < 50; i++ {
			n := uint64(batch*50 + i)
			b.span("svc", n+1, n+1, t0.Add(time.Duration(n)*time.Second), time.Second,
				llmAttrs(fmt.Sprintf("s-%03d", n), "agent", "gpt-4o-mini", 1000, 100, "stop"))
		}
		h.feed(b.td)
		require.LessOrEqual(t, h.sessionCount(), 50)
	}
	assert.Equal(t, 50, h.sessionCount())

	// Not idle long enough: nothing ends.
	h.clock.Advance(cfg.SessionIdleTimeout / 2)
	h.g.expire()
	assert.Equal(t, 50, h.sessionCount())

	// The ticker goroutine ends them once the clock passes the idle timeout.
	require.NoError(t, h.clock.BlockUntilContext(context.Background(), 1))
	h.clock.Advance(cfg.SessionIdleTimeout)
	require.Eventually(t, func() bool { return h.sessionCount() == 0 }, 5*time.Second, time.Millisecond)

	h.g.mu.Lock()
	bl, ok := h.g.state.detectors[0].(*costSpikeDetector).groups.Get("agent\x00svc")
	h.g.mu.Unlock()
	require.True(t, ok)
	// 500 ended sessions: 450 evicted, 50 expired; baseline_sessions is 500, so all of them
	// are in the previous generation.
	assert.Equal(t, 500.0, bl.count())
	assert.InEpsilon(t, (1000*0.15+100*0.6)/1e6, bl.median(), 0.02)
}

// TestLogsOnlyPipeline checks that without a metrics pipeline the traces->logs instance does
// the analysis itself.
func TestLogsOnlyPipeline(t *testing.T) {
	ls := &consumertest.LogsSink{}
	set := connectortest.NewNopSettings(metadata.Type)
	set.ID = component.NewIDWithName(metadata.Type, "logs_only")
	ctx := clockwork.AddToContext(context.Background(), clockwork.NewFakeClockAt(t0))
	c, err := NewFactory().CreateTracesToLogs(ctx, set, createDefaultConfig(), ls)
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx, componenttest.NewNopHost()))
	defer func() { require.NoError(t, c.Shutdown(ctx)) }()
	require.NoError(t, c.ConsumeTraces(ctx, runaway.Generate(runaway.Default())))
	require.Equal(t, 1, ls.LogRecordCount())
}

// TestRecordedSpansUntouched checks that analysing a batch leaves the recorded spans as they
// were (inferred records are new records).
func TestRecordedSpansUntouched(t *testing.T) {
	td := runaway.Generate(runaway.Default())
	before := td.SpanCount()
	cp := runaway.Generate(runaway.Default())
	h := newHarness(t, createDefaultConfig())
	h.feed(td)
	require.Equal(t, before, td.SpanCount())
	a, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(cp)
	require.NoError(t, err)
	require.NotEmpty(t, b)
	assert.Equal(t, string(b), string(a))
}

// TestLoopWindow checks that identical calls spread wider than loop.window do not raise a loop
// alert, and that they do once N of them fall within the window.
func TestLoopWindow(t *testing.T) {
	cfg := createDefaultConfig() // N=5 within 10m
	h := newHarness(t, cfg)
	b := newTraceBuilder()
	for i := 0; i < 8; i++ { // one call every 3 minutes: at most 4 in any 10 minutes
		b.span("svc", 1, uint64(i+1), t0.Add(time.Duration(i)*3*time.Minute), time.Second, toolAttrs("s1", "lookup", `{"id":7}`))
		b.span("svc", 1, uint64(100+i), t0.Add(time.Duration(i)*3*time.Minute+time.Second), time.Second, toolAttrs("s1", "other", fmt.Sprintf(`{"n":%d}`, i)))
	}
	_, ld := h.feed(b.td)
	assert.Empty(t, alertsOf(ld))

	b = newTraceBuilder()
	for i := 0; i < 5; i++ { // then five within two minutes
		b.span("svc", 2, uint64(200+i), t0.Add(time.Hour+time.Duration(i)*20*time.Second), time.Second, toolAttrs("s1", "lookup", `{"id":7}`))
	}
	_, ld = h.feed(b.td)
	recs := alertsOf(ld)
	require.Len(t, recs, 1)
	assert.Equal(t, RuleRepeatedToolCall, attrStr(recs[0].Attributes(), AttrAlertRule))
}

// TestFingerprintsBounded checks that a session calling many distinct tools keeps at most
// loop.max_fingerprints fingerprints.
func TestFingerprintsBounded(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Loop.MaxFingerprints = 16
	h := newHarness(t, cfg)
	b := newTraceBuilder()
	for i := 0; i < 200; i++ {
		b.span("svc", 1, uint64(i+1), t0.Add(time.Duration(i)*time.Second), time.Second, toolAttrs("s1", fmt.Sprintf("tool%d", i%7), fmt.Sprintf(`{"n":%d}`, i)))
	}
	h.feed(b.td)
	h.g.mu.Lock()
	s, ok := h.g.state.sessions.Get("s1")
	n := len(s.loop.seen) + len(s.loop.reps)
	h.g.mu.Unlock()
	require.True(t, ok)
	// 200 distinct calls: the memory is full at its bound, not empty and not beyond it.
	assert.Equal(t, 16, n)
}

// TestOffloadedArgumentsCompareByContentHash: tool arguments moved to blob storage by
// payload_offload (gen_ai.tool.call.arguments_ref) are the same call when the content hash in
// the URI is the same, whatever the bucket; a different hash is a different call.
func TestOffloadedArgumentsCompareByContentHash(t *testing.T) {
	const h1 = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
	const h2 = "fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9"
	run := func(hashes []string) int {
		h := newHarness(t, createDefaultConfig())
		b := newTraceBuilder()
		for i, hh := range hashes {
			a := map[string]any{
				"gen_ai.operation.name":          "execute_tool",
				"gen_ai.tool.name":               "upload_report",
				"gen_ai.conversation.id":         "s-ref",
				"gen_ai.tool.call.arguments_ref": fmt.Sprintf("file:///data/blobs-%d/sha256/%s.zst", i%2, hh),
			}
			b.span("svc", 1, uint64(i+1), t0.Add(time.Duration(i)*time.Second), time.Second, a)
			b.span("svc", 1, uint64(100+i), t0.Add(time.Duration(i)*time.Second+500*time.Millisecond), time.Second, toolAttrs("s-ref", "notify", fmt.Sprintf(`{"i":%d}`, i)))
		}
		_, ld := h.feed(b.td)
		return len(alertsOf(ld))
	}
	assert.Equal(t, 1, run([]string{h1, h1, h1, h1, h1}))
	assert.Equal(t, 0, run([]string{h1, h2, h1, h2, h1}))
}

// TestMalformedSpans: odd values neither panic nor produce a negative cost, and the spans pass
// through unchanged.
func TestMalformedSpans(t *testing.T) {
	b := newTraceBuilder()
	b.span("svc", 1, 1, t0, time.Second, map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
		"gen_ai.usage.input_tokens": "many", "gen_ai.usage.output_tokens": int64(-50),
		"gen_ai.response.finish_reasons": int64(3),
	})
	b.span("svc", 1, 2, t0, -time.Second, map[string]any{ // ends before it starts
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "", "gen_ai.tool.call.arguments": `{"unterminated`,
	})
	sp := b.span("", 0, 0, t0, time.Second, map[string]any{"gen_ai.operation.name": "chat"}) // no ids, no model
	sp.SetTraceID(pcommon.NewTraceIDEmpty())
	// A valid input count beside a negative output count: priced on the input alone.
	b.span("svc", 1, 3, t0, time.Second, map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.provider.name": "openai",
		"gen_ai.usage.input_tokens": int64(1000), "gen_ai.usage.output_tokens": int64(-50),
	})
	before, _ := (&ptrace.ProtoMarshaler{}).MarshalTraces(b.td)
	h := newHarness(t, createDefaultConfig())
	md, _ := h.feed(b.td)
	r, ok := pricing.Default().Lookup("openai", "gpt-4o")
	require.True(t, ok)
	want := r.Cost(pricing.Usage{Input: 1000}, t0)
	require.Positive(t, want)
	var points []float64
	sumPoints(md, MetricCost, func(_ pcommon.Map, dp pmetric.NumberDataPoint) {
		points = append(points, dp.DoubleValue())
	})
	// Only the call with a valid count is priced (the one with "many" and -50 has no usage), and
	// the negative output count adds nothing: never a negative or inflated cost.
	require.Len(t, points, 1, "one cost point, for the span with a valid input count")
	assert.InDelta(t, want, points[0], 1e-15)
	after, _ := (&ptrace.ProtoMarshaler{}).MarshalTraces(b.td)
	assert.Equal(t, before, after)
}

// TestSeriesOverflow: attribute combinations beyond max_series go to one overflow series per
// metric, so metric cardinality stays bounded whatever models the agents name.
func TestSeriesOverflow(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.MaxSeries = 4
	h := newHarness(t, cfg)
	b := newTraceBuilder()
	for i := 0; i < 50; i++ {
		b.span("svc", uint64(i+1), uint64(i+1), t0, time.Second, llmAttrs(fmt.Sprintf("s%d", i), "a", fmt.Sprintf("custom-model-%d", i), 10, 1, "stop"))
	}
	md, _ := h.feed(b.td)
	overflow, total := 0.0, 0.0
	sumPoints(md, MetricUnpriced, func(_ pcommon.Map, dp pmetric.NumberDataPoint) {
		total += float64(dp.IntValue())
		if attrStr(dp.Attributes(), "otel.metric.overflow") == "true" {
			overflow += float64(dp.IntValue())
		}
	})
	assert.Equal(t, 50.0, total, "no call lost")
	assert.Greater(t, overflow, 0.0)
	h.g.mu.Lock()
	n := len(h.g.state.agg.series)
	h.g.mu.Unlock()
	assert.LessOrEqual(t, n, cfg.MaxSeries+int(numMetrics), "at most max_series plus one overflow series per metric")
}

// TestReasoningTokens: reasoning tokens are inside the output tokens by default and added to
// them with the runagain_storage extension's pricing::add_reasoning_tokens.
func TestReasoningTokens(t *testing.T) {
	cost := func(add bool) float64 {
		h := newHarnessOn(t, createDefaultConfig(), withPrices(t, pricing.Config{AddReasoningTokens: add,
			Models: []pricing.Override{overrideFor("", "thinker-1", 1, 10)}}))
		b := newTraceBuilder()
		a := llmAttrs("s", "a", "thinker-1", 1000, 100, "stop")
		a["gen_ai.usage.reasoning.output_tokens"] = int64(400)
		b.span("svc", 1, 1, t0, time.Second, a)
		md, _ := h.feed(b.td)
		got := 0.0
		sumPoints(md, MetricCost, func(_ pcommon.Map, dp pmetric.NumberDataPoint) { got += dp.DoubleValue() })
		return got
	}
	assert.InDelta(t, (1000*1+100*10)/1e6, cost(false), 1e-15)
	assert.InDelta(t, (1000*1+500*10)/1e6, cost(true), 1e-15)
}

// TestEmptyIDsSkipped: spans with an all-zero trace or span id (which the hot tier refuses)
// are not counted, so no metric point or alert can point at them.
func TestEmptyIDsSkipped(t *testing.T) {
	for _, name := range []string{"trace", "span"} {
		t.Run(name, func(t *testing.T) {
			cfg := createDefaultConfig()
			b := newTraceBuilder()
			for i := 0; i < 3*cfg.Loop.Repeats; i++ {
				sp := b.span("svc", 1, uint64(i+1), t0.Add(time.Duration(i)*time.Second), time.Second, map[string]any{
					"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
					"gen_ai.tool.call.arguments": `{"city":"Paris"}`, "gen_ai.conversation.id": "s1",
				})
				if name == "trace" {
					sp.SetTraceID(pcommon.NewTraceIDEmpty())
				} else {
					sp.SetSpanID(pcommon.NewSpanIDEmpty())
				}
			}
			md, ld := newHarness(t, cfg).feed(b.td)
			assert.Zero(t, md.DataPointCount())
			assert.Empty(t, alertsOf(ld))
		})
	}
}

// TestSessionsMemoryBound feeds sessions of the bench's shape (an LLM call and distinct tool
// calls each) until max_sessions_mib evicts: the accounted total stays within the bound after
// every batch, the evicted sessions are the least recently active ones, and the estimate is
// checked against the Go heap the sessions hold (live heap after GC with and without them).
func TestSessionsMemoryBound(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.MaxSessionsMiB = 1
	cfg.MaxSeenSpans = 1 // the seen-span LRU and the join window are not session state
	cfg.JoinWindow.MaxSpans = 0
	h := newHarness(t, cfg)
	const perBatch, tools = 200, 12
	n := uint64(0)
	feed := func(batch int) {
		b := newTraceBuilder()
		for i := 0; i < perBatch; i++ {
			sess := fmt.Sprintf("session-%06d", batch*perBatch+i)
			n++
			tr := n
			b.span("svc", tr, n, t0.Add(time.Duration(n)*time.Millisecond), time.Millisecond,
				llmAttrs(sess, "agent", "gpt-4o-mini", 1000, 100, "stop"))
			for k := 0; k < tools; k++ {
				n++
				b.span("svc", tr, n, t0.Add(time.Duration(n)*time.Millisecond), time.Millisecond,
					toolAttrs(sess, "search_web", fmt.Sprintf(`{"q":"query %d of %s"}`, k, sess)))
			}
		}
		h.feed(b.td)
	}
	accounted := func() (int64, int) {
		h.g.mu.Lock()
		defer h.g.mu.Unlock()
		return h.g.state.bytes, h.g.state.sessions.Len()
	}
	const batches = 40
	for batch := 0; batch < batches; batch++ {
		feed(batch)
		b, _ := accounted()
		require.LessOrEqual(t, b, int64(1<<20), "batch %d", batch)
	}
	b, live := accounted()
	require.Less(t, live, batches*perBatch, "the bound evicted no session")
	require.Greater(t, b, int64(1<<20)*9/10, "the total is not near the bound: %d", b)
	// The survivors are the newest sessions.
	h.g.mu.Lock()
	_, oldest, _ := h.g.state.sessions.GetOldest()
	h.g.mu.Unlock()
	assert.Equal(t, fmt.Sprintf("session-%06d", batches*perBatch-live), oldest.id)
	// Sum the accounted bytes against the heap: drop every session and measure what is freed.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	h.g.mu.Lock()
	h.g.state.sessions.Purge()
	h.g.mu.Unlock()
	runtime.GC()
	runtime.ReadMemStats(&after)
	freed := int64(before.HeapAlloc) - int64(after.HeapAlloc)
	t.Logf("%d sessions: accounted %d bytes, heap freed %d bytes (%.2f)", live, b, freed, float64(freed)/float64(b))
	assert.InDelta(t, 1, float64(freed)/float64(b), 0.35, "estimate off: accounted %d, freed %d", b, freed)
}
