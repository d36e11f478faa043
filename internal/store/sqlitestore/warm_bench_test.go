// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
	"github.com/runagain/runagain/internal/testutil/benchtest"
)

// BenchmarkWarmWrite writes batches of span summaries as the warm tier's queue delivers them
// (2048 summaries of 50 runs a batch, each run continued by the next batches) in several ways in
// the same run: "apply", the incremental run index (RunBatch) with the multi-row INSERTs in a new
// file (16 KiB pages), "before", the same in a file of SQLite's default 4 KiB pages (a file of the
// build before), "rowbyrow", the same with one INSERT per summary (the writer before the
// multi-row INSERTs), and "recompute", each touched run recomputed from all its stored rows (the
// maintenance before version 4); "retry" writes after each batch as many new rows followed by
// its second half again (a queue re-delivering part of a batch merged after new requests), and
// "retry-before" the same with the writer before settleChunk (the batch rolled back and written
// again row by row). It
// reports ns per summary, the attributes' stored bytes per row and the file's bytes per summary
// at the end.
//
//	go test ./internal/store/sqlitestore/ -run '^$' -bench WarmWrite -benchmem -benchtime 40x
func BenchmarkWarmWrite(b *testing.B) {
	for _, mode := range []string{"apply", "before", "rowbyrow", "recompute", "retry", "retry-before"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			path := filepath.Join(b.TempDir(), "warm.db")
			if mode == "before" || mode == "rowbyrow" || mode == "recompute" {
				// a file of an earlier build: SQLite's default 4 KiB pages
				if err := createOldWarm(path); err != nil {
					b.Fatal(err)
				}
			}
			w, err := OpenWarm(path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			retry := mode == "retry" || mode == "retry-before"
			w.noSettle = mode == "retry-before"
			w.recomputeIndex = mode == "recompute"
			w.rowByRow = mode == "rowbyrow" || mode == "recompute"
			// One batch's summaries per iteration, built before the timer: 50 runs of 8 LLM calls
			// (with their tool calls), the run of iteration i continued at i+1 under the same trace.
			batches := make([][]store.SpanSummary, b.N)
			for it := range batches {
				var all []store.SpanSummary
				for r := 0; len(all) < 2048; r++ {
					run := storetest.Run{Seed: fmt.Sprintf("bench-%d-%d", it/4, r), Session: fmt.Sprintf("conv-%d", r), Service: "svc",
						Agent: "a", Model: "gpt-4.1", Start: int64(it+1) * 1e12, LLMCalls: 8, ToolFail: r%7 == 0}
					spans, _ := store.Summarize(storetest.Traces(run), nil, nil)
					ids := map[string]string{} // later iterations add spans (a copy of the run) to the run
					for i := range spans {
						ids[spans[i].SpanID] = fmt.Sprintf("%08x%08x", it%4, i)
					}
					for i := range spans {
						spans[i].SpanID = ids[spans[i].SpanID]
						if p, ok := ids[spans[i].ParentSpanID]; ok {
							spans[i].ParentSpanID = p
						}
					}
					all = append(all, spans...)
				}
				batches[it] = all
			}
			// next(it) is the first half of batch it+1 under other span ids (new rows)
			next := func(it int) []store.SpanSummary {
				n := batches[(it+1)%len(batches)]
				out := append([]store.SpanSummary(nil), n[:len(n)/2]...)
				for i := range out {
					out[i].SpanID = fmt.Sprintf("r%07x%08x", it, i)
				}
				return out
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := benchtest.CPUTime()
			rows := 0
			for it := 0; it < b.N; it++ {
				if err := w.write(ctx, batches[it], nil); err != nil {
					b.Fatal(err)
				}
				rows += len(batches[it])
				if retry {
					// new rows, then the batch's second half delivered again
					again := append(next(it), batches[it][len(batches[it])/2:]...)
					if err := w.write(ctx, again, nil); err != nil {
						b.Fatal(err)
					}
					rows += len(again)
				}
			}
			b.StopTimer()
			cpu = benchtest.CPUTime() - cpu
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(rows), "cpu-ns/summary")
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "summaries/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/summary")
			var attrs, pages float64
			if err := w.db.QueryRow(`SELECT AVG(length(attributes)) FROM span_summaries`).Scan(&attrs); err != nil {
				b.Fatal(err)
			}
			if err := w.db.QueryRow(`SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`).Scan(&pages); err != nil {
				b.Fatal(err)
			}
			var n float64
			if err := w.db.QueryRow(`SELECT COUNT(*) FROM span_summaries`).Scan(&n); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(attrs, "attr-B/row")
			b.ReportMetric(pages/n, "file-B/row")
		})
	}
}

// createOldWarm creates the file at path as a build before 16 KiB warm pages did: SQLite's
// default page size (4 KiB), WAL mode, the warm schema (version 4).
func createOldWarm(path string) error {
	old, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		return err
	}
	defer old.Close()
	if _, err := old.Exec(warmDDL + warmIndex.ddl() + warmIndex.orphansDDL() + `PRAGMA user_version = 4`); err != nil {
		return err
	}
	return old.Close()
}
