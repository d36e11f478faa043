// SPDX-License-Identifier: Apache-2.0

package agentredactionprocessor

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runagain/runagain/internal/redact"
	"github.com/runagain/runagain/internal/testutil/benchtest"

	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/redactionprocessor"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
)

// contribBlockedValues are the contrib redaction processor's equivalents of our rules: one
// regex per kind planted in the benchmark spans (email, phone, card, SSN, IBAN, IPv4, OpenAI
// key, AWS access key id).
var contribBlockedValues = []string{
	`[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}`,
	`\+?\d{1,3}?[ .\-]?\(?\d{3}\)?[ .\-]?\d{3}[ .\-]?\d{4}`,
	`\b(?:\d[ \-]?){13,16}\b`,
	`\b\d{3}-\d{2}-\d{4}\b`,
	`\b[A-Z]{2}\d{2}[A-Z0-9]{11,30}\b`,
	`\b(?:\d{1,3}\.){3}\d{1,3}\b`,
	`sk-[A-Za-z0-9_\-]{20,}`,
	`AKIA[0-9A-Z]{16}`,
}

var vocabulary = strings.Fields(`the agent called tool search with query weather forecast for tomorrow and
returned results including temperature humidity wind speed please summarise the following document
about quarterly revenue growth customers churn pipeline deployment kubernetes cluster error retry
timeout function arguments output assistant user system message content model response tokens
order invoice shipment tracking number status delivered pending refund policy section paragraph`)

// planted returns the sensitive values planted in span i, in formats that vary across spans.
func planted(i int) []string {
	return []string{
		fmt.Sprintf("user%d.name@example%d.com", i, i%7),
		[]string{"+44 20 7946 0958", "(415) 555-2671", "+49 30 901820", "020 7946 0018"}[i%4],
		[]string{"4111 1111 1111 1111", "5500005555555559", "3782 822463 10005", "6011000990139424"}[i%4],
		fmt.Sprintf("%03d-%02d-%04d", 100+i%500, 10+i%80, 1000+i),
		[]string{"DE89 3704 0044 0532 0130 00", "GB82WEST12345698765432", "FR1420041010050500013M02606", "NL91ABNA0417164300"}[i%4],
		fmt.Sprintf("10.%d.%d.%d", i%250, (i*7)%250, (i*13)%250+1),
		"sk-proj-" + strings.Repeat(fmt.Sprintf("A%dbC%dd", i%10, (i*3)%10), 6),
		fmt.Sprintf("AKIA%016d", 1000000000+i)[:4] + fmt.Sprintf("Q%015dZ", i)[:16],
	}
}

// benchSpans builds n agent chat spans whose gen_ai.input.messages hold 10 KB to 100 KB of JSON
// with the planted values spread through the text.
func benchSpans(n int) (ptrace.Traces, [][]string, int) {
	rng := rand.New(rand.NewPCG(1, 2))
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	var all [][]string
	total := 0
	for i := 0; i < n; i++ {
		size := 10_000 + i*90_000/max(1, n-1)
		vals := planted(i)
		all = append(all, vals)
		var msgs []map[string]any
		cur := 0
		vi := 0
		for cur < size {
			var sb strings.Builder
			for sb.Len() < 1500 {
				sb.WriteString(vocabulary[rng.IntN(len(vocabulary))])
				sb.WriteByte(' ')
				if rng.IntN(40) == 0 {
					fmt.Fprintf(&sb, "%d ", rng.IntN(100000))
				}
			}
			if vi < len(vals) && cur > vi*size/len(vals) {
				sb.WriteString(" value: " + vals[vi] + ". ")
				vi++
			}
			role := []string{"user", "assistant", "tool"}[len(msgs)%3]
			msgs = append(msgs, map[string]any{"role": role, "parts": []map[string]any{{"type": "text", "content": sb.String()}}})
			cur += sb.Len() + 60
		}
		for ; vi < len(vals); vi++ {
			msgs = append(msgs, map[string]any{"role": "user", "parts": []map[string]any{{"type": "text", "content": "also " + vals[vi]}}})
		}
		b, _ := json.Marshal(msgs)
		s := spans.AppendEmpty()
		s.SetName("chat gpt-4o")
		s.Attributes().PutStr("gen_ai.operation.name", "chat")
		s.Attributes().PutStr("gen_ai.input.messages", string(b))
		total += len(b)
	}
	setIDs(spans)
	return td, all, total
}

type tracesProc interface {
	ConsumeTraces(context.Context, ptrace.Traces) error
	Shutdown(context.Context) error
}

func newAgentProc(tb testing.TB, next consumer.Traces) tracesProc {
	cfg := createDefaultConfig().(*Config)
	cfg.HashKey = "bench-key"
	p, err := NewFactory().CreateTraces(context.Background(), processortest.NewNopSettings(component.MustNewType("agent_redaction")), cfg, next)
	require.NoError(tb, err)
	return p
}

func newContribProc(tb testing.TB, next consumer.Traces) tracesProc {
	f := redactionprocessor.NewFactory()
	cfg := f.CreateDefaultConfig().(*redactionprocessor.Config)
	cfg.AllowAllKeys = true
	cfg.BlockedValues = contribBlockedValues
	p, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(f.Type()), cfg, next)
	require.NoError(tb, err)
	return p
}

// recall is the fraction of planted values absent from the processed spans.
func recall(tb testing.TB, mk func(testing.TB, consumer.Traces) tracesProc, td ptrace.Traces, vals [][]string) float64 {
	sink := new(consumertest.TracesSink)
	p := mk(tb, sink)
	in := ptrace.NewTraces()
	td.CopyTo(in)
	require.NoError(tb, p.ConsumeTraces(context.Background(), in))
	spans := sink.AllTraces()[0].ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	found, total := 0, 0
	for i := 0; i < spans.Len(); i++ {
		v, _ := spans.At(i).Attributes().Get("gen_ai.input.messages")
		for _, pv := range vals[i] {
			total++
			if !strings.Contains(v.Str(), pv) {
				found++
			}
		}
	}
	return float64(found) / float64(total)
}

// BenchmarkAgentVsContrib runs both processors on the same agent spans (10 KB to 100 KB of JSON
// messages each) in one run and reports MB/s of each, the throughput ratio, and each one's
// recall of the planted values.
func BenchmarkAgentVsContrib(b *testing.B) {
	td, vals, size := benchSpans(20)
	agentRecall := recall(b, newAgentProc, td, vals)
	contribRecall := recall(b, newContribProc, td, vals)
	agent, contrib := newAgentProc(b, consumertest.NewNop()), newContribProc(b, consumertest.NewNop())
	var agentDur, contribDur, agentCPU, contribCPU time.Duration
	n := 0
	for b.Loop() {
		x, y := ptrace.NewTraces(), ptrace.NewTraces()
		td.CopyTo(x)
		td.CopyTo(y)
		runtime.GC() // neither side pays for the other's garbage
		t0, c0 := time.Now(), benchtest.CPUTime()
		if err := agent.ConsumeTraces(context.Background(), x); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		agentDur += t1.Sub(t0)
		agentCPU += benchtest.CPUTime() - c0
		runtime.GC()
		t1, c0 = time.Now(), benchtest.CPUTime()
		if err := contrib.ConsumeTraces(context.Background(), y); err != nil {
			b.Fatal(err)
		}
		contribDur += time.Since(t1)
		contribCPU += benchtest.CPUTime() - c0
		n++
	}
	mb := float64(size*n) / 1e6
	b.ReportMetric(mb/agentDur.Seconds(), "agent_MB/s")
	b.ReportMetric(mb/contribDur.Seconds(), "contrib_MB/s")
	b.ReportMetric(contribDur.Seconds()/agentDur.Seconds(), "speedup_x")
	if agentCPU > 0 && contribCPU > 0 {
		// per CPU second: on a shared machine wall time counts the waits for a core
		b.ReportMetric(mb/agentCPU.Seconds(), "agent_cpu_MB/s")
		b.ReportMetric(mb/contribCPU.Seconds(), "contrib_cpu_MB/s")
		b.ReportMetric(contribCPU.Seconds()/agentCPU.Seconds(), "cpu_speedup_x")
	}
	b.ReportMetric(agentRecall, "agent_recall")
	b.ReportMetric(contribRecall, "contrib_recall")
	_ = agent.Shutdown(context.Background())
	_ = contrib.Shutdown(context.Background())
}

func benchOne(b *testing.B, mk func(testing.TB, consumer.Traces) tracesProc) {
	td, _, size := benchSpans(20)
	p := mk(b, consumertest.NewNop())
	b.SetBytes(int64(size))
	for b.Loop() {
		b.StopTimer()
		x := ptrace.NewTraces()
		td.CopyTo(x)
		b.StartTimer()
		if err := p.ConsumeTraces(context.Background(), x); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAgentRedaction is agent_redaction alone on the benchmark spans (MB/s from SetBytes).
func BenchmarkAgentRedaction(b *testing.B) { benchOne(b, newAgentProc) }

// BenchmarkContribRedaction is the contrib redaction processor alone on the same spans.
func BenchmarkContribRedaction(b *testing.B) { benchOne(b, newContribProc) }

// TestBenchmarkData checks the benchmark's inputs: the spans span 10 KB to 100 KB, and
// agent_redaction removes every planted value (so its recall in the table means something).
func TestBenchmarkData(t *testing.T) {
	td, vals, _ := benchSpans(20)
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	first, _ := spans.At(0).Attributes().Get("gen_ai.input.messages")
	last, _ := spans.At(spans.Len() - 1).Attributes().Get("gen_ai.input.messages")
	require.GreaterOrEqual(t, len(first.Str()), 10_000)
	require.LessOrEqual(t, len(last.Str()), 110_000)
	require.Equal(t, 1.0, recall(t, newAgentProc, td, vals))
}

// cleanSpans builds n agent chat spans of 2 KB to 8 KB of gen_ai.input.messages JSON (system
// prompt, user turn, assistant turn with a tool call whose arguments are JSON in a string, tool
// result) that hold nothing redaction removes: the common case on a gateway.
func cleanSpans(n int) (ptrace.Traces, int) {
	rng := rand.New(rand.NewPCG(3, 4))
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	total := 0
	text := func(size int) string {
		var sb strings.Builder
		for sb.Len() < size {
			sb.WriteString(vocabulary[rng.IntN(len(vocabulary))])
			sb.WriteByte(' ')
			if rng.IntN(30) == 0 {
				sb.WriteString(".\n")
			}
		}
		return sb.String()
	}
	for i := 0; i < n; i++ {
		size := 2_000 + i*6_000/max(1, n-1)
		args, _ := json.Marshal(map[string]any{"query": text(40), "limit": 10, "units": "metric"})
		msgs := []map[string]any{
			{"role": "system", "parts": []map[string]any{{"type": "text", "content": text(size / 4)}}},
			{"role": "user", "parts": []map[string]any{{"type": "text", "content": text(size / 4)}}},
			{"role": "assistant", "parts": []map[string]any{{"type": "tool_call", "id": fmt.Sprintf("call_%d", i), "name": "search", "arguments": string(args)}}},
			{"role": "tool", "parts": []map[string]any{{"type": "tool_call_response", "id": fmt.Sprintf("call_%d", i), "response": text(size / 2)}}},
		}
		b, _ := json.Marshal(msgs)
		s := spans.AppendEmpty()
		s.SetName("chat gpt-4o")
		s.Attributes().PutStr("gen_ai.operation.name", "chat")
		s.Attributes().PutStr("gen_ai.request.model", "gpt-4o")
		s.Attributes().PutStr("gen_ai.input.messages", string(b))
		total += len(b)
	}
	setIDs(spans)
	return td, total
}

// BenchmarkAgentRedactionPerSpan is agent_redaction on one span per operation (cycling through
// 20 spans), so that -benchmem reports B/op and allocs/op per span, and MB/s (SetBytes: the mean
// gen_ai.input.messages size). planted: the 10 KB to 100 KB spans with eight planted values each
// (BenchmarkAgentVsContrib's); clean: 2 KB to 8 KB chat spans with nothing to redact;
// planted-nocache: the planted spans without the clean cache (every string scanned). Each runs
// with every rule (rules=all) and without the rules issue 33 added (rules=before33), the baseline
// of its cost measured in the same run:
//
//	go test -run '^$' -bench 'AgentRedactionPerSpan' -count 8 ./processor/agentredactionprocessor/ > b.txt
//	benchstat -col /rules b.txt
//
//	go test -run '^$' -bench AgentRedactionPerSpan -benchmem ./processor/agentredactionprocessor/
func BenchmarkAgentRedactionPerSpan(b *testing.B) {
	planted, _, plantedSize := benchSpans(20)
	clean, cleanSize := cleanSpans(20)
	for _, tc := range []struct {
		name    string
		td      ptrace.Traces
		size    int
		noCache bool
	}{{"planted", planted, plantedSize, false}, {"clean", clean, cleanSize, false}, {"planted-nocache", planted, plantedSize, true}} {
		for _, rules := range []string{"all", "before33"} {
			b.Run(tc.name+"/rules="+rules, func(b *testing.B) {
				var disabled []string
				if rules == "before33" {
					// the same-run baseline: without the rules issue 33 added (generic
					// detector, detectors of shape, password hashes, Veles)
					disabled = redact.Issue33Rules()
				}
				perSpan(b, newAgentProcWith(b, consumertest.NewNop(), disabled, tc.noCache), tc.td, tc.size)
			})
		}
	}
}

// newAgentProcWith is newAgentProc with rules disabled and, with noCache, no clean cache (every
// string scanned: the cost of detection itself).
func newAgentProcWith(tb testing.TB, next consumer.Traces, disabled []string, noCache bool) tracesProc {
	cfg := createDefaultConfig().(*Config)
	cfg.HashKey = "bench-key"
	cfg.DisabledRules = disabled
	if noCache {
		cfg.CleanCacheMiB = 0
	}
	p, err := NewFactory().CreateTraces(context.Background(), processortest.NewNopSettings(component.MustNewType("agent_redaction")), cfg, next)
	require.NoError(tb, err)
	return p
}

// perSpan runs p on one span of td per operation (cycling through them); size is the total of
// their gen_ai.input.messages bytes.
func perSpan(b *testing.B, p tracesProc, td ptrace.Traces, size int) {
	src := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	b.SetBytes(int64(size / src.Len()))
	i := 0
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		x := ptrace.NewTraces()
		src.At(i % src.Len()).CopyTo(x.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty())
		i++
		b.StartTimer()
		c0 := benchtest.CPUTime()
		if err := p.ConsumeTraces(context.Background(), x); err != nil {
			b.Fatal(err)
		}
		cpu += benchtest.CPUTime() - c0
	}
	if cpu > 0 {
		// CPU time beside wall time: on a shared machine wall time counts the waits for a core
		b.ReportMetric(float64(cpu.Microseconds())/float64(i), "cpu-µs/span")
		b.ReportMetric(float64(size/src.Len()*i)/1e6/cpu.Seconds(), "cpu-MB/s")
	}
}

// resendBatches returns the traffic of convs conversations of turns turns with tools tool calls
// per turn, shaped as loadgen sends it by default: one batch per LLM call index, holding that
// call's chat span of every conversation (gen_ai.input.messages resending the whole history,
// gen_ai.output.messages, gen_ai.system_instructions, the usual scalar attributes) and the tool
// span that follows it (arguments and result). Messages are about msgBytes of prose.
func resendBatches(convs, turns, tools, msgBytes int) (batches []ptrace.Traces, spans int) {
	rng := rand.New(rand.NewPCG(21, 22))
	text := func(size int) string {
		var sb strings.Builder
		for sb.Len() < size {
			sb.WriteString(vocabulary[rng.IntN(len(vocabulary))])
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	system := `[{"type":"text","content":` + q(text(1024)) + `}]`
	hist := make([][]string, convs)
	for turn := 0; turn < turns; turn++ {
		for c := range convs {
			hist[c] = append(hist[c], `{"role":"user","parts":[{"type":"text","content":`+q(text(msgBytes))+`}]}`)
		}
		for k := 0; k <= tools; k++ {
			td := ptrace.NewTraces()
			ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
			for c := range convs {
				id := fmt.Sprintf("call_%d_%d_%d", c, turn, k)
				var out string
				if k == tools {
					out = `{"role":"assistant","parts":[{"type":"text","content":` + q(text(msgBytes)) + `}],"finish_reason":"stop"}`
				} else {
					out = `{"role":"assistant","parts":[{"type":"tool_call","id":"` + id + `","name":"search","arguments":{"query":` + q(text(120)) + `}}],"finish_reason":"tool_calls"}`
				}
				s := ss.Spans().AppendEmpty()
				s.SetName("chat gpt-4o")
				a := s.Attributes()
				a.PutStr("gen_ai.operation.name", "chat")
				a.PutStr("gen_ai.provider.name", "openai")
				a.PutStr("gen_ai.request.model", "gpt-4o")
				a.PutStr("gen_ai.response.model", "gpt-4o-2024-08-06")
				a.PutStr("gen_ai.response.id", fmt.Sprintf("chatcmpl-%x", rng.Uint64()))
				a.PutStr("gen_ai.conversation.id", fmt.Sprintf("conv-%d", c))
				a.PutInt("gen_ai.usage.input_tokens", 1000)
				a.PutStr("server.address", "api.openai.com")
				a.PutStr("gen_ai.input.messages", "["+strings.Join(hist[c], ",")+"]")
				a.PutStr("gen_ai.output.messages", "["+out+"]")
				a.PutStr("gen_ai.system_instructions", system)
				hist[c] = append(hist[c], out)
				spans++
				if k == tools {
					continue
				}
				result := q(text(msgBytes))
				t := ss.Spans().AppendEmpty()
				t.SetName("execute_tool search")
				ta := t.Attributes()
				ta.PutStr("gen_ai.operation.name", "execute_tool")
				ta.PutStr("gen_ai.tool.name", "search")
				ta.PutStr("gen_ai.tool.call.id", id)
				ta.PutStr("gen_ai.conversation.id", fmt.Sprintf("conv-%d", c))
				ta.PutStr("gen_ai.tool.call.arguments", `{"query":`+q(text(120))+`}`)
				ta.PutStr("gen_ai.tool.call.result", result)
				hist[c] = append(hist[c], `{"role":"tool","parts":[{"type":"tool_call_response","id":"`+id+`","response":`+result+`}]}`)
				spans++
			}
			setIDs(ss.Spans())
			batches = append(batches, td)
		}
	}
	return batches, spans
}

// BenchmarkAgentRedactionResendHistory is the processor on agent traffic that resends its
// history (resendBatches: 20 conversations, 5 turns of 3 tool calls, 512-byte messages, make
// bench's loadgen shape), one batch per operation, in call order; a new processor (an empty
// clean-value cache) is built, untimed, when the traffic starts over. "cache" is the default configuration, "nocache" clean_cache_mib:
// 0, and "copy" only copies the batch (CopyTo, which every row also pays untimed): the same-run
// baseline. Reported per span: ns/span, allocs/span, B/span, and MB/s of attribute bytes.
//
//	go test -run '^$' -bench AgentRedactionResendHistory -benchmem ./processor/agentredactionprocessor/
func BenchmarkAgentRedactionResendHistory(b *testing.B) {
	batches, nspans := resendBatches(20, 5, 3, 512)
	benchBatches(b, batches, nspans)
}

// BenchmarkShapeDetectorCost is the cost of the detectors of shape (prefixed_token: a vendor
// prefix and a random body, base64-encoded or bare; url_token) on agent_redaction, as a ratio
// against the same processor without them, measured in the same run: each operation sends one
// span (cycling through 20) through both processors, interleaved (which goes first alternates),
// so that the load of a shared machine falls on both alike. It reports the median ns/span of each
// (wall time of ConsumeTraces only: the copy of the span is outside the timing; the median, as a
// core taken away or a GC pause lands on one call of one of them) and shape/base, the ratio of
// the medians. clean: 2 KB to 8 KB chat spans with nothing to redact, with the clean cache (the
// default: after the first pass every string is known clean) and without it (every string
// scanned: the cost of detection itself); planted-nocache: the 10 KB to 100 KB spans with eight
// planted values each.
//
//	go test -run '^$' -bench ShapeDetectorCost -benchtime 3000x ./processor/agentredactionprocessor/
func BenchmarkShapeDetectorCost(b *testing.B) {
	planted, _, _ := benchSpans(20)
	clean, _ := cleanSpans(20)
	for _, tc := range []struct {
		name    string
		td      ptrace.Traces
		noCache bool
	}{{"clean", clean, false}, {"clean-nocache", clean, true}, {"planted-nocache", planted, true}} {
		b.Run(tc.name, func(b *testing.B) {
			shape := newAgentProcWith(b, consumertest.NewNop(), nil, tc.noCache)
			base := newAgentProcWith(b, consumertest.NewNop(), []string{redact.RulePrefixedToken, redact.RuleURLToken}, tc.noCache)
			src := tc.td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
			var tShape, tBase []time.Duration
			i := 0
			run := func(p tracesProc, span ptrace.Span) time.Duration {
				x := ptrace.NewTraces()
				span.CopyTo(x.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty())
				t0 := time.Now()
				if err := p.ConsumeTraces(context.Background(), x); err != nil {
					b.Fatal(err)
				}
				return time.Since(t0)
			}
			for b.Loop() {
				span := src.At(i % src.Len())
				if i%2 == 0 {
					tShape = append(tShape, run(shape, span))
					tBase = append(tBase, run(base, span))
				} else {
					tBase = append(tBase, run(base, span))
					tShape = append(tShape, run(shape, span))
				}
				i++
			}
			ms, mb := median(tShape), median(tBase)
			b.ReportMetric(float64(ms.Nanoseconds()), "shape-ns/span")
			b.ReportMetric(float64(mb.Nanoseconds()), "base-ns/span")
			b.ReportMetric(float64(ms)/float64(mb), "shape/base")
		})
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}
