// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/open-telemetry/opentelemetry-collector-contrib/connector/spanmetricsconnector"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/connector/agentguardconnector/internal/metadata"
)

// benchLoad generates the benchmark spans: sessions x 10 spans (5 chat, 5 execute_tool with
// distinct arguments), 100 sessions starting per batch and each session spread over 10
// consecutive batches, so ~1000 spans per batch and ~1000 sessions active at once.
type benchLoad struct {
	sessions int
	models   []string
	tools    []string
}

const benchSpansPerSession = 10

func (l *benchLoad) batches() int { return l.sessions/100 + benchSpansPerSession - 1 }

func (l *benchLoad) batch(b int) ptrace.Traces {
	td := ptrace.NewTraces()
	byService := map[int]ptrace.SpanSlice{}
	for j := 0; j < benchSpansPerSession; j++ {
		block := b - j
		if block < 0 || block*100 >= l.sessions {
			continue
		}
		for s := block * 100; s < block*100+100 && s < l.sessions; s++ {
			svc := s % 10
			ss, ok := byService[svc]
			if !ok {
				rs := td.ResourceSpans().AppendEmpty()
				rs.Resource().Attributes().PutStr("service.name", fmt.Sprintf("agent-svc-%d", svc))
				ss = rs.ScopeSpans().AppendEmpty().Spans()
				byService[svc] = ss
			}
			sp := ss.AppendEmpty()
			var tid pcommon.TraceID
			var sid pcommon.SpanID
			putU64(tid[8:], uint64(s)+1)
			putU64(sid[:], uint64(s)*16+uint64(j)+1)
			sp.SetTraceID(tid)
			sp.SetSpanID(sid)
			start := t0.Add(time.Duration(b) * time.Second).Add(time.Duration(s%100) * time.Millisecond)
			sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
			sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(800 * time.Millisecond)))
			a := sp.Attributes()
			a.PutStr("gen_ai.conversation.id", "sess-"+strconv.Itoa(s))
			a.PutStr("gen_ai.agent.name", fmt.Sprintf("agent-%d", s%5))
			if j%2 == 0 {
				model := l.models[s%len(l.models)]
				sp.SetName("chat " + model)
				sp.SetKind(ptrace.SpanKindClient)
				a.PutStr("gen_ai.operation.name", "chat")
				a.PutStr("gen_ai.provider.name", "openai")
				a.PutStr("gen_ai.request.model", model)
				a.PutInt("gen_ai.usage.input_tokens", int64(500+s%1000+j*100))
				a.PutInt("gen_ai.usage.output_tokens", int64(20+s%200))
				a.PutEmptySlice("gen_ai.response.finish_reasons").AppendEmpty().SetStr("tool_calls")
			} else {
				tool := l.tools[(s+j)%len(l.tools)]
				sp.SetName("execute_tool " + tool)
				a.PutStr("gen_ai.operation.name", "execute_tool")
				a.PutStr("gen_ai.tool.name", tool)
				a.PutStr("gen_ai.tool.call.arguments", `{"query":"`+strconv.Itoa(s)+`","page":`+strconv.Itoa(j)+`}`)
				if (s+j)%17 == 0 {
					sp.Status().SetCode(ptrace.StatusCodeError)
				}
			}
		}
	}
	return td
}

func putU64(b []byte, v uint64) {
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

func heapAlloc() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// retainedAfterGC returns the live heap after a full collection.
func retainedAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	return heapAlloc()
}

// BenchmarkAgentGuardVsSpanMetrics runs 1,000,000 spans over 100,000 sessions (override with
// RUNAGAIN_BENCH_SESSIONS) through agent_guard and, in the same run, through the contrib
// span_metrics connector (exemplars on, dimensions provider/model/agent; both flushed every 10
// batches), and reports throughput and peak heap of both and their ratios. Run with
//
//	go test -run '^$' -bench AgentGuardVsSpanMetrics -benchtime 1x ./connector/agentguardconnector/
func BenchmarkAgentGuardVsSpanMetrics(b *testing.B) {
	sessions := 100000
	if v, err := strconv.Atoi(os.Getenv("RUNAGAIN_BENCH_SESSIONS")); err == nil && v > 0 {
		sessions = v
	}
	l := &benchLoad{sessions: sessions, models: []string{"gpt-4o-mini", "gpt-4o", "claude-sonnet-4-5", "gemini-2.0-flash", "o3-mini"},
		tools: []string{"search", "fetch_page", "read_file", "write_file", "run_sql", "send_email", "get_weather", "calculator"}}
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		base := retainedAfterGC()

		// agent_guard, as wired in a collector: one traces->metrics and one traces->logs instance,
		// on a fake clock: its metrics are flushed below on span_metrics' schedule.
		set := connectortest.NewNopSettings(metadata.Type)
		set.ID = component.NewIDWithName(metadata.Type, fmt.Sprintf("bench%d", i))
		f := NewFactory()
		cfg := createDefaultConfig()
		agCtx := clockwork.AddToContext(ctx, clockwork.NewFakeClock())
		tm, err := f.CreateTracesToMetrics(agCtx, set, cfg, consumertest.NewNop())
		if err != nil {
			b.Fatal(err)
		}
		tl, err := f.CreateTracesToLogs(agCtx, set, cfg, consumertest.NewNop())
		if err != nil {
			b.Fatal(err)
		}
		_ = tm.Start(ctx, componenttest.NewNopHost())
		_ = tl.Start(ctx, componenttest.NewNopHost())

		// span_metrics on the same spans, driven by a fake clock so that its flushes are timed
		// too.
		clock := clockwork.NewFakeClock()
		smf := spanmetricsconnector.NewFactory()
		smCfg := smf.CreateDefaultConfig().(*spanmetricsconnector.Config)
		smCfg.Dimensions = []spanmetricsconnector.Dimension{{Name: "gen_ai.provider.name"}, {Name: "gen_ai.request.model"}, {Name: "gen_ai.agent.name"}}
		smCfg.Exemplars.Enabled = true
		flushed := make(chan struct{}, 1)
		sink, _ := consumer.NewMetrics(func(context.Context, pmetric.Metrics) error {
			select {
			case flushed <- struct{}{}:
			default:
			}
			return nil
		})
		smSet := connectortest.NewNopSettings(component.MustNewType("spanmetrics"))
		sm, err := smf.CreateTracesToMetrics(clockwork.AddToContext(ctx, clock), smSet, smCfg, sink)
		if err != nil {
			b.Fatal(err)
		}
		_ = sm.Start(ctx, componenttest.NewNopHost())
		_ = clock.BlockUntilContext(ctx, 1)
		smFlush := func() {
			clock.Advance(smCfg.MetricsFlushInterval)
			select {
			case <-flushed:
			case <-time.After(30 * time.Second):
				b.Fatal("span_metrics did not flush")
			}
		}

		// Each batch goes to both connectors back to back, each timed on its own, so both see
		// the same machine load (the team shares two cores).
		var agTime, smTime time.Duration
		var peak uint64
		spans := 0
		for bn := 0; bn < l.batches(); bn++ {
			td := l.batch(bn)
			spans += td.SpanCount()
			t := time.Now()
			_ = tm.ConsumeTraces(ctx, td)
			_ = tl.ConsumeTraces(ctx, td)
			if bn%10 == 9 {
				tm.(*handle).g.flush(ctx)
			}
			agTime += time.Since(t)
			t = time.Now()
			_ = sm.ConsumeTraces(ctx, td)
			if bn%10 == 9 {
				smFlush()
			}
			smTime += time.Since(t)
			if bn%25 == 0 {
				if h := heapAlloc(); h > peak {
					peak = h
				}
			}
		}
		// Live heap held by each connector: drop one at a time and collect.
		both := retainedAfterGC()
		_ = sm.Shutdown(ctx)
		sm = nil
		onlyAG := retainedAfterGC()
		_ = tm.Shutdown(ctx)
		_ = tl.Shutdown(ctx)
		tm, tl = nil, nil
		none := retainedAfterGC()
		agHeap := float64(onlyAG) - float64(none)
		smHeap := float64(both) - float64(onlyAG)

		agRate := float64(spans) / agTime.Seconds()
		smRate := float64(spans) / smTime.Seconds()
		b.ReportMetric(float64(spans), "spans")
		b.ReportMetric(agRate, "agent_guard_spans/s")
		b.ReportMetric(smRate, "spanmetrics_spans/s")
		b.ReportMetric(agRate/smRate, "throughput_ratio")
		b.ReportMetric(agHeap/(1<<20), "agent_guard_live_heap_MB")
		b.ReportMetric(smHeap/(1<<20), "spanmetrics_live_heap_MB")
		b.ReportMetric(agHeap/max(smHeap, 1), "live_heap_ratio")
		b.ReportMetric(float64(peak-min(peak, base))/(1<<20), "process_peak_heap_MB")
	}
}

var _ connector.Traces = (*handle)(nil)

// BenchmarkMetricsFlush measures agent_guard per span (the benchLoad batches, ~1,000 spans
// each, 3,000 sessions) with its metrics emitted after every batch, as before
// metrics_flush_interval (every_batch, the in-run baseline), and with one flush every 5
// batches: the default 1 s ticker at the quick bench's ~5 OTLP requests per second
// (every_5_batches). Both on a fake clock, into a no-op metrics consumer (the downstream
// exporter's work per emitted batch is not counted). Run with
//
//	go test -run '^$' -bench MetricsFlush -benchmem -count 5 ./connector/agentguardconnector/
func BenchmarkMetricsFlush(b *testing.B) {
	l := &benchLoad{sessions: 3000, models: []string{"gpt-4o-mini", "gpt-4o", "claude-sonnet-4-5", "gemini-2.0-flash", "o3-mini"},
		tools: []string{"search", "fetch_page", "read_file", "write_file", "run_sql", "send_email", "get_weather", "calculator"}}
	tds := make([]ptrace.Traces, l.batches())
	spans := 0
	for i := range tds {
		tds[i] = l.batch(i)
		spans += tds[i].SpanCount()
	}
	for _, every := range []int{1, 5} {
		name := "every_batch"
		if every > 1 {
			name = fmt.Sprintf("every_%d_batches", every)
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				set := connectortest.NewNopSettings(metadata.Type)
				set.ID = component.NewIDWithName(metadata.Type, fmt.Sprintf("flush%d-%d", every, i))
				cfg := createDefaultConfig()
				agCtx := clockwork.AddToContext(ctx, clockwork.NewFakeClock())
				tm, err := NewFactory().CreateTracesToMetrics(agCtx, set, cfg, consumertest.NewNop())
				if err != nil {
					b.Fatal(err)
				}
				_ = tm.Start(ctx, componenttest.NewNopHost())
				g := tm.(*handle).g
				b.StartTimer()
				for bn, td := range tds {
					_ = tm.ConsumeTraces(ctx, td)
					if bn%every == every-1 {
						g.flush(ctx)
					}
				}
				g.flush(ctx)
				b.StopTimer()
				_ = tm.Shutdown(ctx)
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spans), "ns/span")
		})
	}
}
