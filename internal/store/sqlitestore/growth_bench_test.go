// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"math/rand/v2"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/testutil/benchtest"
)

// randomTraceIDs gives every trace of reqs a random trace id (as the OTel SDK does), keeping
// the spans of one trace together.
func randomTraceIDs(reqs []ptrace.Traces, rng *rand.Rand) {
	ids := map[pcommon.TraceID]pcommon.TraceID{}
	for _, td := range reqs {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, s := range ss.Spans().All() {
					n, ok := ids[s.TraceID()]
					if !ok {
						for i := range n {
							n[i] = byte(rng.Uint32())
						}
						ids[s.TraceID()] = n
					}
					s.SetTraceID(n)
				}
			}
		}
	}
}

// BenchmarkHotWriteGrowth writes the same shape of load (benchRequests: 190 requests of 256
// spans, 48,640 spans like make bench's, random trace ids as the OTel SDK makes them) rounds
// times into one hot file from 4 writers, and logs each round's process CPU per span and bytes
// read and written per span (/proc/self/io rchar and wchar: WAL frames, checkpoint copies and
// page reads). It reports round 1's figures and the last round's as ratios of them: how the
// write path's cost grows with the file (issue 35's growth table, without the rest of the
// collector). "default" is the file as Open creates it; "no-rank-indexes" drops runs_cost,
// runs_tokens and runs_duration first, to show their share.
//
//	go test ./internal/store/sqlitestore/ -run '^$' -bench HotWriteGrowth -benchtime 1x -v
func BenchmarkHotWriteGrowth(b *testing.B) {
	for _, mode := range []string{"default", "no-rank-indexes"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				benchHotWriteGrowth(b, mode, 8, 190)
			}
		})
	}
}

func benchHotWriteGrowth(b *testing.B, mode string, rounds, per int) {
	ctx := context.Background()
	db, _ := openBenchHot(b)
	if mode == "no-rank-indexes" {
		if _, err := db.db.Exec(`DROP INDEX runs_cost; DROP INDEX runs_tokens; DROP INDEX runs_duration`); err != nil {
			b.Fatal(err)
		}
		db.stmts.close()
		if err := db.stmts.prepare(ctx, db.db); err != nil {
			b.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var first [3]float64
	for round := 1; round <= rounds; round++ {
		b.StopTimer()
		reqs := benchRequests(per, uint64(round))
		randomTraceIDs(reqs, rng)
		b.StartTimer()
		cpu0 := benchtest.CPUTime()
		r0, w0, ok := benchtest.ProcIO()
		if !ok {
			b.Skip("no /proc/self/io here")
		}
		writeConcurrently(ctx, b, db, reqs, 4)
		r1, w1, _ := benchtest.ProcIO()
		spans := float64(per * 256)
		cur := [3]float64{float64(benchtest.CPUTime()-cpu0) / spans, float64(r1-r0) / spans, float64(w1-w0) / spans}
		b.Logf("%s round %d (%d spans in the file): %.0f cpu-ns/span, %.0f read-B/span, %.0f write-B/span",
			mode, round, round*per*256, cur[0], cur[1], cur[2])
		switch round {
		case 1:
			first = cur
			b.ReportMetric(cur[0], "round1-cpu-ns/span")
			b.ReportMetric(cur[2], "round1-write-B/span")
		case rounds:
			b.ReportMetric(cur[0]/first[0], "last/first-cpu")
			b.ReportMetric(cur[1]/first[1], "last/first-read-B")
			b.ReportMetric(cur[2]/first[2], "last/first-write-B")
		}
	}
}
