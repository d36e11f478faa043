// SPDX-License-Identifier: Apache-2.0

package store

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store/storetest"
	"github.com/runagain/runagain/internal/testutil/benchtest"
)

// benchRequest is one request as the bench's clients send it: about 256 spans of agent runs
// (8 LLM calls with their tool calls each, every seventh with a failed tool).
func benchRequest() ptrace.Traces {
	var runs []storetest.Run
	n := 0
	for r := 0; n < 256; r++ {
		run := storetest.Run{Seed: fmt.Sprintf("req-%d", r), Session: fmt.Sprintf("conv-%d", r%3), Service: "svc",
			Agent: "support-agent", Model: "gpt-4.1", Start: int64(r+1) * 1e12, LLMCalls: 8, ToolFail: r%7 == 0}
		runs = append(runs, run)
		n += run.Spans()
	}
	return storetest.Traces(runs...)
}

// BenchmarkRecords builds what the tiered exporter persists for one request before the warm and
// cold queues (the warm records: Summarize; the cold: Partials; each encoded by MarshalRecords),
// in two ways in the same run: "legacy", the summaries' attributes through a map and
// json.Marshal (summarizeLegacy, the code before attrJSON), and "new". It reports CPU ns and
// allocations per span.
//
//	go test ./internal/store/ -run '^$' -bench Records -benchmem -count 5
func BenchmarkRecords(b *testing.B) {
	td := benchRequest()
	spans := td.SpanCount()
	for _, mode := range []string{"legacy", "new"} {
		summarize := Summarize
		if mode == "legacy" {
			summarize = summarizeLegacy
		}
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			cpu := benchtest.CPUTime()
			for i := 0; i < b.N; i++ {
				s, e := summarize(td, nil, nil)
				if _, err := MarshalRecords(Records{Spans: s, Events: e}); err != nil {
					b.Fatal(err)
				}
				if _, err := MarshalRecords(Records{Partials: Partials(td, plog.Logs{}, nil, 1, nil)}); err != nil {
					b.Fatal(err)
				}
			}
			cpu = benchtest.CPUTime() - cpu
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*spans), "cpu-ns/span")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spans), "ns/span")
		})
	}
}
