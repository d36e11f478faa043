// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

import (
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/plogtest"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/connector/agentguardconnector/internal/runaway"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*/ from the scenario builders and the connector output (review the diff!)")

// scenario is one golden test: input traces (one batch per ResourceSpans, in
// testdata/golden/<name>/input.yaml), expected metrics and logs of all batches concatenated
// (expected_metrics.yaml, expected_logs.yaml), and semantic checks that do not depend on the
// golden files.
type scenario struct {
	name  string
	cfg   func(*Config)
	build func() ptrace.Traces
	// between runs after batch i (e.g. advancing the clock past the idle timeout).
	between func(h *harness, i int)
	check   func(t *testing.T, perBatch []plog.Logs)
}

func TestGolden(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			dir := filepath.Join("testdata", "golden", sc.name)
			in := filepath.Join(dir, "input.yaml")
			if *update {
				require.NoError(t, golden.WriteTracesToFile(in, sc.build()))
			}
			td, err := golden.ReadTraces(in)
			require.NoError(t, err)

			cfg := createDefaultConfig()
			if sc.cfg != nil {
				sc.cfg(cfg)
			}
			h := newHarness(t, cfg)
			allM, allL := pmetric.NewMetrics(), plog.NewLogs()
			var perBatch []plog.Logs
			for i, b := range batches(td) {
				md, ld := h.feed(b)
				perBatch = append(perBatch, ld)
				md.ResourceMetrics().MoveAndAppendTo(allM.ResourceMetrics())
				cp := plog.NewLogs()
				ld.CopyTo(cp)
				cp.ResourceLogs().MoveAndAppendTo(allL.ResourceLogs())
				if sc.between != nil {
					sc.between(h, i)
				}
			}
			sc.check(t, perBatch)

			mf, lf := filepath.Join(dir, "expected_metrics.yaml"), filepath.Join(dir, "expected_logs.yaml")
			if *update {
				require.NoError(t, golden.WriteMetricsToFile(mf, allM, golden.SkipMetricTimestampNormalization()))
				require.NoError(t, golden.WriteLogsToFile(lf, allL))
			}
			wantM, err := golden.ReadMetrics(mf)
			require.NoError(t, err)
			require.NoError(t, pmetrictest.CompareMetrics(wantM, allM, pmetrictest.IgnoreMetricDataPointsOrder()))
			wantL, err := golden.ReadLogs(lf)
			require.NoError(t, err)
			require.NoError(t, plogtest.CompareLogs(wantL, allL))
		})
	}
}

// kinds returns the alert kinds (and loop rules) raised per batch.
func kinds(perBatch []plog.Logs) [][]string {
	out := make([][]string, len(perBatch))
	for i, ld := range perBatch {
		for _, lr := range alertsOf(ld) {
			k := attrStr(lr.Attributes(), AttrAlertKind)
			if r := attrStr(lr.Attributes(), AttrAlertRule); r != "" {
				k += "/" + r
			}
			out[i] = append(out[i], k)
		}
	}
	return out
}

func llmAttrs(session, agent, model string, in, out int64, finish string) map[string]any {
	return map[string]any{
		"gen_ai.operation.name":          "chat",
		"gen_ai.provider.name":           "openai",
		"gen_ai.request.model":           model,
		"gen_ai.conversation.id":         session,
		"gen_ai.agent.name":              agent,
		"gen_ai.usage.input_tokens":      in,
		"gen_ai.usage.output_tokens":     out,
		"gen_ai.response.finish_reasons": []any{finish},
	}
}

func toolAttrs(session, tool, args string) map[string]any {
	return map[string]any{
		"gen_ai.operation.name":      "execute_tool",
		"gen_ai.tool.name":           tool,
		"gen_ai.tool.call.arguments": args,
		"gen_ai.conversation.id":     session,
	}
}

func scenarios() []scenario {
	return []scenario{
		{
			// N=5 identical calls (JSON key order differs: arguments compare canonically) in one
			// session; a second session calls the same tool with other arguments each time.
			name: "loop_repeated_tool_call",
			build: func() ptrace.Traces {
				b := newTraceBuilder()
				argsForms := []string{`{"city":"Paris","unit":"c"}`, `{"unit":"c", "city":"Paris"}`}
				for i := 0; i < 5; i++ {
					at := t0.Add(time.Duration(i) * 10 * time.Second)
					b.span("travel-agent", 1, uint64(10+2*i), at, 2*time.Second, llmAttrs("s-loop", "planner", "gpt-4o-mini", 800, 20, "tool_calls"))
					b.span("travel-agent", 1, uint64(11+2*i), at.Add(3*time.Second), time.Second, toolAttrs("s-loop", "get_weather", argsForms[i%2]))
					b.span("travel-agent", 2, uint64(100+i), at, time.Second, toolAttrs("s-fine", "get_weather", fmt.Sprintf(`{"city":"City%d"}`, i)))
				}
				return b.td
			},
			check: func(t *testing.T, pb []plog.Logs) {
				assert.Equal(t, [][]string{{"loop/repeated_tool_call"}}, kinds(pb))
				lr := alertsOf(pb[0])[0]
				assert.Equal(t, "s-loop", attrStr(lr.Attributes(), "session.id"))
				assert.Equal(t, spanID(19), lr.SpanID(), "points at the 5th call")
				assert.Equal(t, traceID(1), lr.TraceID())
			},
		},
		{
			// The same tool M=10 times in a row with different arguments; LLM calls in between
			// do not break the run.
			name: "loop_consecutive_tool",
			build: func() ptrace.Traces {
				b := newTraceBuilder()
				for i := 0; i < 11; i++ {
					at := t0.Add(time.Duration(i) * 5 * time.Second)
					b.span("crawler", 3, uint64(200+2*i), at, time.Second, llmAttrs("s-crawl", "crawler", "gpt-4o-mini", 500, 10, "tool_calls"))
					b.span("crawler", 3, uint64(201+2*i), at.Add(2*time.Second), time.Second, toolAttrs("s-crawl", "fetch_page", fmt.Sprintf(`{"page":%d}`, i)))
					if i == 4 {
						b.nextBatch()
					}
				}
				return b.td
			},
			check: func(t *testing.T, pb []plog.Logs) {
				assert.Equal(t, [][]string{nil, {"loop/consecutive_tool"}}, kinds(pb))
				lr := alertsOf(pb[1])[0]
				assert.Equal(t, int64(10), attrInt(lr.Attributes(), "runagain.alert.count"))
				assert.Equal(t, spanID(219), lr.SpanID(), "points at the 10th call")
			},
		},
		{
			// The same LLM request 5 times; the messages were offloaded, so the spans carry only
			// gen_ai.input.messages_ref, with the same content hash in different buckets.
			name: "loop_repeated_llm_request",
			build: func() ptrace.Traces {
				b := newTraceBuilder()
				const h = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
				for i := 0; i < 5; i++ {
					a := llmAttrs("s-llm", "summariser", "gpt-4o", 3000, 200, "stop")
					a["gen_ai.input.messages_ref"] = fmt.Sprintf("s3://payloads-%d/runagain/sha256/%s.manifest.zst?region=eu-west-1", i%2, h)
					b.span("summary-svc", 4, uint64(300+i), t0.Add(time.Duration(i)*time.Minute), 4*time.Second, a)
				}
				return b.td
			},
			check: func(t *testing.T, pb []plog.Logs) {
				assert.Equal(t, [][]string{{"loop/repeated_llm_request"}}, kinds(pb))
			},
		},
		{
			// 20 ended sessions of one call each (gpt-4o, 10k in / 1k out: 0.035 USD) make the
			// baseline; a later session of the same agent and service passes 5 x the median on
			// its 6th call, while still running.
			name: "cost_spike",
			build: func() ptrace.Traces {
				b := newTraceBuilder()
				for i := 0; i < 20; i++ {
					b.span("research", uint64(400+i), uint64(400+i), t0.Add(time.Duration(i)*time.Second), 3*time.Second,
						llmAttrs(fmt.Sprintf("s-base-%02d", i), "researcher", "gpt-4o", 10000, 1000, "stop"))
				}
				b.nextBatch()
				for i := 0; i < 8; i++ {
					b.span("research", 500, uint64(500+i), t0.Add(2*time.Hour+time.Duration(i)*10*time.Second), 3*time.Second,
						llmAttrs("s-expensive", "researcher", "gpt-4o", 10000, 1000, "stop"))
				}
				return b.td
			},
			between: func(h *harness, i int) {
				if i == 0 {
					h.expireIdle(time.Hour)
				}
			},
			check: func(t *testing.T, pb []plog.Logs) {
				require.Equal(t, [][]string{nil, {"cost_spike"}}, kinds(pb))
				lr := alertsOf(pb[1])[0]
				a := lr.Attributes()
				assert.Equal(t, "s-expensive", attrStr(a, "session.id"))
				assert.Equal(t, spanID(505), lr.SpanID(), "raised on the 6th call, not at session end")
				med, _ := a.Get("runagain.alert.median_cost")
				cost, _ := a.Get("runagain.alert.session_cost")
				assert.InEpsilon(t, 0.035, med.Double(), 0.02, "median from the sketch, 1% relative accuracy")
				assert.InEpsilon(t, 6*0.035, cost.Double(), 1e-9)
				assert.Equal(t, int64(20), attrInt(a, "runagain.alert.baseline_sessions"))
			},
		},
		{
			// search_db fails 1 call in 10 for 30 minutes (its baseline), then 8 of 12 calls in
			// one minute.
			name: "tool_error_spike",
			build: func() ptrace.Traces {
				b := newTraceBuilder()
				for i := 0; i < 30; i++ {
					a := toolAttrs(fmt.Sprintf("s-db-%02d", i), "search_db", fmt.Sprintf(`{"q":%d}`, i))
					sp := b.span("support-bot", uint64(600+i), uint64(600+i), t0.Add(time.Duration(i)*time.Minute), time.Second, a)
					if i%10 == 9 {
						sp.Status().SetCode(ptrace.StatusCodeError)
						sp.Attributes().PutStr("error.type", "timeout")
					}
				}
				b.nextBatch()
				for i := 0; i < 12; i++ {
					a := toolAttrs(fmt.Sprintf("s-db-burst-%d", i/4), "search_db", fmt.Sprintf(`{"q":"b%d"}`, i))
					sp := b.span("support-bot", 700, uint64(700+i), t0.Add(31*time.Minute+time.Duration(i)*5*time.Second), time.Second, a)
					if i%3 != 0 {
						sp.Status().SetCode(ptrace.StatusCodeError)
					}
				}
				return b.td
			},
			check: func(t *testing.T, pb []plog.Logs) {
				require.Equal(t, [][]string{nil, {"tool_error_spike"}}, kinds(pb))
				a := alertsOf(pb[1])[0].Attributes()
				rate, _ := a.Get("runagain.alert.error_rate")
				base, _ := a.Get("runagain.alert.baseline_error_rate")
				assert.GreaterOrEqual(t, rate.Double(), 0.5)
				assert.Greater(t, base.Double(), 0.0)
				assert.Less(t, base.Double(), 0.25)
				assert.GreaterOrEqual(t, attrInt(a, "runagain.alert.calls"), int64(10))
			},
		},
		{
			// 24 responses of gpt-4o-mini within 4 minutes, every third cut at the token limit
			// (finish reason length); another model only stops normally.
			name: "context_pressure",
			build: func() ptrace.Traces {
				b := newTraceBuilder()
				for i := 0; i < 24; i++ {
					finish := "stop"
					if i%3 == 2 {
						finish = "length"
					}
					at := t0.Add(time.Duration(i) * 10 * time.Second)
					b.span("writer", uint64(800+i), uint64(800+i), at, 2*time.Second, llmAttrs(fmt.Sprintf("s-w-%02d", i), "writer", "gpt-4o-mini", 120000, 4096, finish))
					b.span("writer", uint64(800+i), uint64(900+i), at, 2*time.Second, llmAttrs(fmt.Sprintf("s-w-%02d", i), "writer", "gpt-4o", 1000, 100, "stop"))
				}
				return b.td
			},
			check: func(t *testing.T, pb []plog.Logs) {
				require.Equal(t, [][]string{{"context_pressure"}}, kinds(pb))
				lr := alertsOf(pb[0])[0]
				a := lr.Attributes()
				assert.Equal(t, "gpt-4o-mini", attrStr(a, "gen_ai.request.model"))
				// min_responses is 20; every third response is cut, so the first hit at or after the
				// 20th response is the 21st (i=20).
				assert.Equal(t, int64(21), attrInt(a, "runagain.alert.responses"))
				assert.Equal(t, int64(7), attrInt(a, "runagain.alert.truncated"))
				assert.Equal(t, spanID(820), lr.SpanID())
			},
		},
		{
			// A runaway session from the generator split in two batches: one alert, in the
			// batch with the 5th call; the consecutive rule does not add a second alert.
			name: "runaway_session",
			build: func() ptrace.Traces {
				o := runaway.Default()
				td := runaway.Generate(o)
				spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
				out := ptrace.NewTraces()
				for _, r := range [][2]int{{0, 8}, {8, spans.Len()}} {
					rs := out.ResourceSpans().AppendEmpty()
					td.ResourceSpans().At(0).Resource().CopyTo(rs.Resource())
					ss := rs.ScopeSpans().AppendEmpty()
					for i := r[0]; i < r[1]; i++ {
						spans.At(i).CopyTo(ss.Spans().AppendEmpty())
					}
				}
				return out
			},
			check: func(t *testing.T, pb []plog.Logs) {
				assert.Equal(t, [][]string{nil, {"loop/repeated_tool_call"}}, kinds(pb))
			},
		},
	}
}
