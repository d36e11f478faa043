// SPDX-License-Identifier: Apache-2.0

package agentredactionprocessor

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/runagain/runagain/internal/loadgen"
	"github.com/runagain/runagain/internal/testutil/benchtest"
)

// loadgenBatches returns make bench's traffic, generated offline by internal/loadgen with its
// default configuration (resend history, planted PII and secrets at their default rates) for
// sessions sessions: every turn of every session, in the order the sessions progress
// (round-robin, so a conversation's later calls come after its earlier ones), cut into batches of
// about 256 spans as the OTel SDK's batch span processor sends them.
func loadgenBatches(tb testing.TB, sessions int) (batches []ptrace.Traces, spans int) {
	td := ptrace.NewTraces()
	cur := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for specs := range loadgen.Turns(loadgen.DefaultConfig(), sessions, time.Unix(1_800_000_000, 0)) {
		for _, sp := range specs {
			out := cur.AppendEmpty()
			out.SetName(sp.Name)
			out.SetStartTimestamp(pcommon.NewTimestampFromTime(sp.Start))
			out.SetEndTimestamp(pcommon.NewTimestampFromTime(sp.End))
			if sp.StatusMessage != "" {
				out.Status().SetMessage(sp.StatusMessage)
			}
			loadgen.PutAttrs(out.Attributes(), sp.Attrs)
			spans++
		}
		if cur.Len() >= 256 {
			setIDs(cur)
			batches = append(batches, td)
			td = ptrace.NewTraces()
			cur = td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
		}
	}
	if cur.Len() > 0 {
		setIDs(cur)
		batches = append(batches, td)
	}
	require.NotEmpty(tb, batches)
	return batches, spans
}

// BenchmarkAgentRedactionLoadgen is the processor on make bench's traffic (loadgenBatches: 100
// sessions of loadgen's defaults, 5 turns of 3 tool calls, history resent, PII in 5% and secrets
// in 2% of the messages), one batch of about 256 spans per operation, in order; a new processor (an empty
// cache) is built, untimed, when the traffic starts over. "cache" is the default configuration, "nocache"
// clean_cache_mib: 0, "copy" only copies the batch: the same-run baseline. Reported per span.
//
//	go test -run '^$' -bench AgentRedactionLoadgen -benchmem ./processor/agentredactionprocessor/
func BenchmarkAgentRedactionLoadgen(b *testing.B) {
	batches, nspans := loadgenBatches(b, 100)
	benchBatches(b, batches, nspans)
}

// benchBatches runs the copy, nocache and cache rows of a batch benchmark.
func benchBatches(b *testing.B, batches []ptrace.Traces, nspans int) {
	perBatch := float64(nspans) / float64(len(batches))
	bytes := 0
	for _, td := range batches {
		bytes += (&ptrace.ProtoMarshaler{}).TracesSize(td)
	}
	for _, mode := range []string{"copy", "nocache", "cache"} {
		b.Run(mode, func(b *testing.B) {
			cfg := createDefaultConfig().(*Config)
			cfg.HashKey = "bench-key"
			if mode == "nocache" {
				cfg.CleanCacheMiB = 0
			}
			// a new processor (with an empty cache) each time the traffic starts over, built as
			// the factory builds it
			var p *redactionProcessor
			var hits, misses int64
			newProcessor := func() {
				if p != nil {
					st := p.r.CleanCacheStats()
					hits, misses = hits+st.Hits, misses+st.Misses
					require.NoError(b, p.shutdown(context.Background()))
				}
				var err error
				p, err = newRedactionProcessor(processortest.NewNopSettings(component.MustNewType("agent_redaction")), cfg)
				require.NoError(b, err)
			}
			b.SetBytes(int64(bytes / len(batches)))
			var ms0, ms1 runtime.MemStats
			var mallocs, allocBytes uint64
			var cpu time.Duration
			i := 0
			for b.Loop() {
				b.StopTimer()
				if i%len(batches) == 0 {
					newProcessor()
				}
				x := ptrace.NewTraces()
				batches[i%len(batches)].CopyTo(x)
				i++
				runtime.ReadMemStats(&ms0)
				b.StartTimer()
				c0 := benchtest.CPUTime()
				if mode == "copy" {
					y := ptrace.NewTraces()
					x.CopyTo(y)
				} else if _, err := p.processTraces(context.Background(), x); err != nil {
					b.Fatal(err)
				}
				cpu += benchtest.CPUTime() - c0
				b.StopTimer()
				runtime.ReadMemStats(&ms1)
				mallocs += ms1.Mallocs - ms0.Mallocs
				allocBytes += ms1.TotalAlloc - ms0.TotalAlloc
				b.StartTimer()
			}
			spans := perBatch * float64(i)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/spans, "ns/span")
			if cpu > 0 { // CPU time beside wall time: on a shared machine wall time counts the waits for a core
				b.ReportMetric(float64(cpu.Nanoseconds())/spans, "cpu-ns/span")
			}
			b.ReportMetric(float64(mallocs)/spans, "allocs/span")
			b.ReportMetric(float64(allocBytes)/spans, "B/span")
			st := p.r.CleanCacheStats()
			if hits, misses = hits+st.Hits, misses+st.Misses; hits+misses > 0 {
				b.ReportMetric(float64(hits)/float64(hits+misses), "hit_ratio")
			}
			require.NoError(b, p.shutdown(context.Background()))
		})
	}
}
