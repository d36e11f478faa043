// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/loadgen"
	"github.com/runagain/runagain/internal/testutil/benchtest"
)

// keyValue is one string the processor gives RedactValue: an attribute value under its key (a
// span name under "").
type keyValue struct{ key, value string }

// loadgenSpans returns the strings of make bench's traffic as the agent_redaction processor
// examines them, span by span: internal/loadgen with its default configuration (history resent
// with every LLM call, 512-byte messages, PII in 5% and secrets in 2% of the texts) for sessions
// sessions, in the order the sessions progress (round-robin over the sessions, turn by turn).
func loadgenSpans(sessions int) [][]keyValue {
	var spans [][]keyValue
	for specs := range loadgen.Turns(loadgen.DefaultConfig(), sessions, time.Unix(1_800_000_000, 0)) {
		for _, sp := range specs {
			kvs := []keyValue{{"", sp.Name}}
			attrs := pcommon.NewMap() // as the collector receives them
			loadgen.PutAttrs(attrs, sp.Attrs)
			for k, v := range attrs.All() {
				switch v.Type() {
				case pcommon.ValueTypeStr:
					kvs = append(kvs, keyValue{k, v.Str()})
				case pcommon.ValueTypeSlice:
					for _, e := range v.Slice().All() {
						kvs = append(kvs, keyValue{k, e.Str()})
					}
				}
			}
			if sp.StatusMessage != "" {
				kvs = append(kvs, keyValue{"", sp.StatusMessage})
			}
			spans = append(spans, kvs)
		}
	}
	return spans
}

// BenchmarkRedactLoadgen is RedactValue on every string of make bench's traffic (loadgenSpans: 100
// sessions of loadgen's defaults), span by span in order; the cache (8 MiB, the processor's
// default) is purged when the traffic starts over. One operation is one span. Rows, all in the
// same run: "nocache" (no CleanCache), "leaf" (the CleanCache with the earlier scan: string
// leaves looked up one by one, short values never cached), "elem-noshort" (array elements looked
// up whole, short values with digit clusters cached) and "elem" (today's: that, and short values
// found clean twice answered by shortMemo, which the purge leaves, as a restart-free collector
// keeps it). Reported per span: ns, CPU ns,
// allocations and bytes, and the cache's hit ratio; compare rows as ratios (benchstat).
//
//	go test -run '^$' -bench RedactLoadgen -benchmem -count 5 ./internal/redact/
func BenchmarkRedactLoadgen(b *testing.B) {
	spans := loadgenSpans(100)
	for _, mode := range []string{"nocache", "leaf", "elem-noshort", "elem"} {
		b.Run(mode, func(b *testing.B) {
			cfg := Config{HashKey: []byte("bench-key")}
			var cache *CleanCache
			if mode != "nocache" {
				cache = NewCleanCache(8 << 20)
				cfg.CleanCache = cache
			}
			r, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			r.legacyScan = mode == "leaf"
			r.noShortMemo = mode == "elem-noshort"
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			c0 := benchtest.CPUTime()
			i := 0
			for b.Loop() {
				if i%len(spans) == 0 {
					b.StopTimer()
					c := benchtest.CPUTime()
					cache.Purge()
					c0 += benchtest.CPUTime() - c
					b.StartTimer()
				}
				for _, kv := range spans[i%len(spans)] {
					r.RedactValue(kv.key, kv.value)
				}
				i++
			}
			cpu := benchtest.CPUTime() - c0
			runtime.ReadMemStats(&ms1)
			n := float64(i)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/span")
			b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/span")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/n, "allocs/span")
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/n, "B/span")
			if st := cache.Stats(); st.Hits+st.Misses > 0 {
				b.ReportMetric(float64(st.Hits)/float64(st.Hits+st.Misses), "hit_ratio")
			}
		})
	}
}
