// SPDX-License-Identifier: Apache-2.0

package runagainstorageextension

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/coldstore"
	"github.com/runagain/runagain/internal/store/storetest"
	"github.com/runagain/runagain/internal/testutil/benchtest"
)

// TestColdRecordsCountOnceAfterRebatch: the cold queue merged requests a and b and the Parquet
// backend wrote them, then the collector was killed before the queue marked them done; after the
// restart the queue sends b again, merged this time with c. Every session's totals in the real
// cold bucket are those of a, b and c each counted once (before, each write combined its requests
// into one partial per session under a new batch id, and b's spans, tokens and cost counted twice).
func TestColdRecordsCountOnceAfterRebatch(t *testing.T) {
	ctx := context.Background()
	st, err := coldstore.Open(ctx, filepath.Join(t.TempDir(), "cold"), coldstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	b := &coldParquet{st: st, now: time.Now}
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	req := func(seed, session string, at int64) store.Records {
		run := storetest.Run{Seed: seed, Session: session, Service: "svc", Agent: "weather", Model: "gpt-4.1", Start: at, LLMCalls: 2, ToolFail: true}
		return b.TraceRecords(storetest.Traces(run))
	}
	a, bb, c := req("a", "conv-1", start), req("b", "conv-1", start+int64(time.Minute)), req("c", "conv-2", start+int64(time.Hour))
	merged := func(rs ...store.Records) store.Records {
		var out store.Records
		for _, r := range rs {
			out.Append(r)
		}
		return out
	}
	require.NoError(t, b.WriteRecords(ctx, merged(a, bb)))
	require.NoError(t, b.WriteRecords(ctx, merged(bb, c))) // b again after the crash, merged with c

	got, err := st.Sessions(ctx)
	require.NoError(t, err)
	want := store.MergePartials(merged(a, bb, c).Partials)
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i].SessionID, got[i].SessionID)
		assert.Equal(t, want[i].Spans, got[i].Spans, want[i].SessionID)
		assert.Equal(t, want[i].InputTokens, got[i].InputTokens, want[i].SessionID)
		assert.Equal(t, want[i].OutputTokens, got[i].OutputTokens, want[i].SessionID)
		assert.InDelta(t, want[i].CostUSD, got[i].CostUSD, 1e-12, want[i].SessionID)
		assert.Equal(t, want[i].Errors, got[i].Errors, want[i].SessionID)
		assert.Equal(t, want[i].TraceIDs, got[i].TraceIDs, want[i].SessionID)
	}
	assert.EqualValues(t, 2*storetest.Run{LLMCalls: 2, ToolFail: true}.Spans(), got[len(got)-1].Spans, "conv-1: runs a and b once each")
}

// BenchmarkColdWriteRecords writes one cold batch the queue merged from 64 requests of about 256
// spans each (3 sessions a request) to a real Parquet directory, in two ways in the same run:
// "combined", one partial per session (combinePartials, the write before per-request rows),
// and "per-request", the rows as they are (coldParquet.WriteRecords). It reports CPU ns per span
// and the object's bytes per span.
//
//	go test ./extension/runagainstorageextension/ -run '^$' -bench ColdWriteRecords -count 5
func BenchmarkColdWriteRecords(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	st, err := coldstore.Open(ctx, dir, coldstore.Options{})
	require.NoError(b, err)
	defer st.Close()
	cp := &coldParquet{st: st, now: time.Now}
	var r store.Records
	spans := 0
	for i := range 64 {
		var runs []storetest.Run
		for j := range 24 {
			runs = append(runs, storetest.Run{Seed: fmt.Sprintf("r%d-%d", i, j), Session: fmt.Sprintf("conv-%d", j%3), Service: "svc",
				Agent: "support", Model: "gpt-4.1", Start: int64(i*24+j+1) * 1e12, LLMCalls: 4, ToolFail: j%7 == 0})
		}
		td := storetest.Traces(runs...)
		spans += td.SpanCount()
		r.Append(cp.TraceRecords(td))
	}
	for _, mode := range []string{"combined", "per-request"} {
		b.Run(mode, func(b *testing.B) {
			cpu := benchtest.CPUTime()
			var bytes int
			for range b.N {
				ps := r.Partials
				if mode == "combined" {
					ps = combinePartials(ps)
				}
				keys, err := st.Write(ctx, ps)
				require.NoError(b, err)
				bytes = 0
				for _, k := range keys {
					fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(k)))
					if err == nil {
						bytes += int(fi.Size())
					}
				}
			}
			cpu = benchtest.CPUTime() - cpu
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*spans), "cpu-ns/span")
			b.ReportMetric(float64(bytes)/float64(spans), "B/span")
		})
	}
}

// combinePartials is the cold write before per-request rows (store.CombinePartials, removed), kept
// as BenchmarkColdWriteRecords's baseline: partials of several batches folded into one partial per
// session under the id of the set (store.BatchOf), which counted a request twice when a queue
// sent it again merged with other requests.
func combinePartials(ps []store.SessionPartial) []store.SessionPartial {
	batch, several := store.BatchOf(ps)
	if !several {
		return ps
	}
	ingested := map[string]int64{}
	for _, p := range ps {
		ingested[p.SessionID] = max(ingested[p.SessionID], p.Ingested)
	}
	merged := store.MergePartials(ps)
	out := make([]store.SessionPartial, 0, len(merged))
	for _, m := range merged {
		out = append(out, store.SessionPartial{
			SessionID: m.SessionID, BatchID: batch, FirstSeen: m.FirstSeen, LastSeen: m.LastSeen,
			Agent: m.Agent, Service: m.Service, Models: m.Models, TraceIDs: m.TraceIDs,
			Spans: m.Spans, InputTokens: m.InputTokens, OutputTokens: m.OutputTokens, CostUSD: m.CostUSD,
			Unpriced: m.Unpriced, Errors: m.Errors, Alerts: m.Alerts, Ingested: ingested[m.SessionID],
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SessionID < out[j].SessionID })
	return out
}
