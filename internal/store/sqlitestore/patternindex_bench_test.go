// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/testutil/benchtest"
)

// BenchmarkHotWritePatterns is what computing failure signatures at ingest costs the hot tier's
// writer, measured against the same writer with signatures off (DB.noPatterns) in the same run:
// each op writes one of the bench's requests (benchRequests: 256 spans of loadgen's default
// traffic, whose tool errors and length stops make about 1 run in 10 fail) to a file with
// signatures and the same request to one without, alternating which goes first, the process's
// CPU time of each call summed apart. It reports cpu-ns/span of both and sig-share: (with -
// without) / with, the share of the writer's CPU that marking, reading back and signing the
// failing runs takes. agent_guard's alerts are not part of the traffic (no loop alert marks a
// run here), and both writers classify each span for SpanSignal.
//
//	go test ./internal/store/sqlitestore/ -run '^$' -bench HotWritePatterns -benchtime 300x -count 3
func BenchmarkHotWritePatterns(b *testing.B) {
	ctx := context.Background()
	open := func(name string, off bool) *DB {
		db, err := Open(filepath.Join(b.TempDir(), name), Options{})
		if err != nil {
			b.Fatal(err)
		}
		db.noPatterns = off
		for _, td := range benchRequests(trainSpans/256+2, 99) {
			if _, err := db.WriteTraces(ctx, td); err != nil {
				b.Fatal(err)
			}
		}
		return db
	}
	with, without := open("with.db", false), open("without.db", true)
	defer with.Close()
	defer without.Close()
	reqs := benchRequests(b.N, 1)
	var cpuWith, cpuWithout int64
	write := func(db *DB, td ptrace.Traces, sum *int64) {
		c := benchtest.CPUTime()
		if _, err := db.WriteTraces(ctx, td); err != nil {
			b.Fatal(err)
		}
		*sum += int64(benchtest.CPUTime() - c)
	}
	b.ResetTimer()
	for i, td := range reqs {
		if i%2 == 0 {
			write(with, td, &cpuWith)
			write(without, td, &cpuWithout)
		} else {
			write(without, td, &cpuWithout)
			write(with, td, &cpuWith)
		}
	}
	b.StopTimer()
	spans := float64(b.N * 256)
	b.ReportMetric(float64(cpuWith)/spans, "cpu-ns/span-with")
	b.ReportMetric(float64(cpuWithout)/spans, "cpu-ns/span-without")
	b.ReportMetric(float64(cpuWith-cpuWithout)/float64(cpuWith), "sig-share")
	var failing int
	if err := with.db.QueryRowContext(ctx, `SELECT count(*) FROM run_patterns WHERE pattern_id != ''`).Scan(&failing); err != nil {
		b.Fatal(err)
	}
	var runs int
	if err := with.db.QueryRowContext(ctx, `SELECT count(*) FROM runs`).Scan(&runs); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(failing)/float64(runs), "failing-share")
}

// patternBenchRuns writes n runs to db in batches of 1,000, in the shape of readbench's (an
// agent span over one LLM call, starts 30 s apart ending at end, four runs a session), every
// tenth with a failing tool call whose message names an order id and a number (three kinds of
// error, so three patterns whatever n), and an agent_guard loop alert every 50th run.
func patternBenchRuns(b *testing.B, db *DB, n int, end time.Time) {
	ctx := context.Background()
	const step = 30 * time.Second
	start := end.Add(-time.Duration(n) * step)
	msgs := []string{"lookup: order o_%d not found", "lookup: upstream timeout after %d ms", "refund: HTTP 503 from payments (request req_%d)"}
	for from := 0; from < n; from += 1000 {
		td, ld := ptrace.NewTraces(), plog.NewLogs()
		for i := from; i < min(n, from+1000); i++ {
			tid := pcommon.TraceID{0x70, 0x62}
			for k := 0; k < 8; k++ {
				tid[15-k] = byte(uint64(i) >> (8 * k))
			}
			t0 := start.Add(time.Duration(i) * step)
			ss := td.ResourceSpans().AppendEmpty()
			ss.Resource().Attributes().PutStr("service.name", "patternbench")
			spans := ss.ScopeSpans().AppendEmpty().Spans()
			span := func(n byte, parent byte, name string, from, to time.Duration) ptrace.Span {
				s := spans.AppendEmpty()
				s.SetTraceID(tid)
				s.SetSpanID(pcommon.SpanID{tid[12], tid[13], tid[14], tid[15], 0, 0, 0, n})
				if parent > 0 {
					s.SetParentSpanID(pcommon.SpanID{tid[12], tid[13], tid[14], tid[15], 0, 0, 0, parent})
				}
				s.SetName(name)
				s.SetStartTimestamp(pcommon.NewTimestampFromTime(t0.Add(from)))
				s.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(to)))
				return s
			}
			root := span(1, 0, "invoke_agent support", 0, 3*time.Second)
			root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
			root.Attributes().PutStr("gen_ai.agent.name", "support")
			root.Attributes().PutStr("gen_ai.conversation.id", "conv-"+strconv.Itoa(i/4))
			llm := span(2, 1, "chat gpt-4.1", time.Second, 2*time.Second)
			a := llm.Attributes()
			a.PutStr("gen_ai.operation.name", "chat")
			a.PutStr("gen_ai.request.model", "gpt-4.1")
			a.PutInt("gen_ai.usage.input_tokens", int64(100+i%50))
			a.PutInt("gen_ai.usage.output_tokens", int64(20+i%7))
			if i%10 == 0 {
				tool := span(3, 1, "execute_tool lookup", 2*time.Second, 2500*time.Millisecond)
				tool.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
				tool.Attributes().PutStr("gen_ai.tool.name", "lookup")
				tool.Status().SetCode(ptrace.StatusCodeError)
				tool.Status().SetMessage(fmt.Sprintf(msgs[(i/10)%len(msgs)], 1000+i))
			}
			if i%50 == 25 {
				lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
				lr.SetEventName(store.AlertEventName)
				lr.SetTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Second)))
				lr.SetTraceID(tid)
				lr.Attributes().PutStr(runagainattr.AttrAlertKind, "loop")
			}
		}
		if _, err := db.WriteTraces(ctx, td); err != nil {
			b.Fatal(err)
		}
		if ld.LogRecordCount() > 0 {
			if err := db.WriteLogs(ctx, ld); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkPatternsList is `runagain patterns --since 30d` on a hot file of N runs
// (RUNAGAIN_BENCH_PATTERN_RUNS, default 100000; patternBenchRuns: starts 30 s apart, so 30 days
// hold 86,400 runs at any N above that), against the baseline of the same run: walking the same
// range of the run index (store.EachRun, what `runagain sessions --since 30d` reads) without
// grouping. Each op does both; it reports ms of each (wall time, medians are left to -count)
// and x-scan, their ratio. The file is written once per process (setup, not timed).
//
//	RUNAGAIN_BENCH_PATTERN_RUNS=1000000 go test ./internal/store/sqlitestore/ -run '^$' -bench PatternsList -benchtime 5x -count 3
func BenchmarkPatternsList(b *testing.B) {
	n := 100_000
	if v := os.Getenv("RUNAGAIN_BENCH_PATTERN_RUNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("RUNAGAIN_BENCH_PATTERN_RUNS=%q: want a positive number of runs", v)
		}
	}
	db := patternBenchFile(b, n)
	ctx := context.Background()
	since := patternBenchEnd.Add(-30 * 24 * time.Hour)
	var list, scan time.Duration
	var rep patterns.Report
	var scanned int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		var err error
		rep, err = patterns.List(ctx, db, store.PatternFilter{Since: since})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		scanned = 0
		if err := store.EachRun(ctx, db, store.RunFilter{Since: since}, func(store.RunSummary) bool { scanned++; return true }); err != nil {
			b.Fatal(err)
		}
		list, scan = list+t1.Sub(t0), scan+time.Since(t1)
	}
	b.StopTimer()
	if rep.Runs != int64(scanned) || len(rep.Patterns) != 4 {
		b.Fatalf("patterns read %d runs in %d patterns, the run index %d: want the same runs in 4 patterns (3 errors, 1 alert)", rep.Runs, len(rep.Patterns), scanned)
	}
	b.ReportMetric(float64(list.Microseconds())/1000/float64(b.N), "ms-patterns")
	b.ReportMetric(float64(scan.Microseconds())/1000/float64(b.N), "ms-scan")
	b.ReportMetric(float64(list)/float64(scan), "x-scan")
	b.ReportMetric(float64(rep.Runs), "runs-in-range")
}

var patternBenchEnd = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

var (
	patternBenchDBs  = map[int]*DB{}
	patternBenchDirs []string
)

// TestMain removes the files BenchmarkPatternsList wrote once per process.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, db := range patternBenchDBs {
		db.Close()
	}
	for _, d := range patternBenchDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// patternBenchFile is a hot file of n runs (patternBenchRuns), written once per process.
func patternBenchFile(b *testing.B, n int) *DB {
	if db := patternBenchDBs[n]; db != nil {
		return db
	}
	dir, err := os.MkdirTemp("", "patternbench-")
	if err != nil {
		b.Fatal(err)
	}
	patternBenchDirs = append(patternBenchDirs, dir)
	db, err := Open(filepath.Join(dir, "hot.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	patternBenchRuns(b, db, n, patternBenchEnd)
	b.Logf("wrote %d runs in %s to %s", n, time.Since(t0).Round(time.Millisecond), dir)
	patternBenchDBs[n] = db
	return db
}

// TestSignedFromTheBatchAsReadBack: the signatures the writer computes from a batch's own spans
// (batchRuns, the usual case at ingest) are the ones computed from the run read back, for every
// failing run of loadgen traffic whose runs straddle requests.
func TestSignedFromTheBatchAsReadBack(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "hot.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reqs := benchRequests(40, 5)
	inBatch := 0
	for _, td := range reqs {
		if _, err := db.WriteTraces(ctx, td); err != nil {
			t.Fatal(err)
		}
		inBatch += countWhole(t, db.db, hotWholeRuns([]*traceWrite{{td: td}}, keys(traceIDsOf(td))), hotWholeQuery)
	}
	checkSignedAsReadBack(t, db.db, db.Run, db.sessionKeys, inBatch)
}

// TestWarmSignedFromTheBatchAsReadBack: the warm writer signs a run whose every summary and key
// event is in its batch from the batch (the tiered exporter's trimmed spans, as it writes them),
// and every stored signature equals the one computed from the run read back.
func TestWarmSignedFromTheBatchAsReadBack(t *testing.T) {
	ctx := context.Background()
	w, err := OpenWarm(filepath.Join(t.TempDir(), "warm.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	inBatch := 0
	for _, td := range benchRequests(40, 5) {
		r := w.TraceRecords(store.TrimTraces(td, nil))
		if err := w.WriteRecords(ctx, r); err != nil {
			t.Fatal(err)
		}
		inBatch += countWhole(t, w.db, warmWholeRuns(r.Spans, r.Events, keys(traceIDsOf(td))), warmWholeQuery)
	}
	checkSignedAsReadBack(t, w.db, w.Run, w.sessionKeys, inBatch)
}

// TestHotAndWarmSignaturesAgree: the same traffic written to a hot file and, trimmed as the
// tiered exporter writes it, to a warm file gives every failing run the same pattern, variant
// and agent in both (the listing merges the tiers by run), each tier signing on its own and
// with the two writers sharing a patterns.Memo (the collector's set-up), where the warm writer
// takes most signatures from the hot writer's and every stored one equals the run read back.
func TestHotAndWarmSignaturesAgree(t *testing.T) {
	t.Run("own", func(t *testing.T) { hotAndWarmAgree(t, nil) })
	t.Run("memo", func(t *testing.T) {
		memo := patterns.NewMemo(0)
		hot, warm := hotAndWarmAgree(t, memo)
		hits, misses := memo.Stats()
		t.Logf("memo: %d hits, %d misses", hits, misses)
		if hits < 50 || hits < misses {
			t.Fatalf("memo: %d hits, %d misses: the warm writer signed most runs again", hits, misses)
		}
		checkSignedAsReadBack(t, hot.db, hot.Run, hot.sessionKeys, 1)
		checkSignedAsReadBack(t, warm.db, warm.Run, warm.sessionKeys, 1)
	})
}

func hotAndWarmAgree(t *testing.T, memo *patterns.Memo) (*DB, *WarmDB) {
	ctx := context.Background()
	dir := t.TempDir()
	hot, err := Open(filepath.Join(dir, "hot.db"), Options{Memo: memo})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hot.Close() })
	warm, err := OpenWarm(filepath.Join(dir, "warm.db"), Options{Memo: memo})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { warm.Close() })
	// queued takes the records through a persistent queue's encoding as an entry written before
	// it kept SpanSummary.Signal: its writer reads the signals from the summaries' attributes.
	queued, err := OpenWarm(filepath.Join(dir, "queued.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { queued.Close() })
	known := 0
	for _, td := range benchRequests(40, 7) {
		if _, err := hot.WriteTraces(ctx, td); err != nil {
			t.Fatal(err)
		}
		r := warm.TraceRecords(store.TrimTraces(td, nil))
		enc, err := store.MarshalRecords(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range r.Spans {
			if s.Signal == store.SignalYes {
				known++
			}
		}
		if err := warm.WriteRecords(ctx, r); err != nil {
			t.Fatal(err)
		}
		dec, err := store.UnmarshalRecords(enc)
		if err != nil {
			t.Fatal(err)
		}
		for i := range dec.Spans {
			dec.Spans[i].Signal = store.SignalUnknown
		}
		if err := queued.WriteRecords(ctx, dec); err != nil {
			t.Fatal(err)
		}
	}
	if known == 0 {
		t.Fatal("TraceRecords set no span's Signal")
	}
	read := func(db *sql.DB) map[string]string {
		for id, dirty := range runPatternRows(t, db, "dirty") {
			if dirty != "0" {
				t.Fatalf("run %s still marked", id)
			}
		}
		return runPatternRows(t, db, "pattern_id || ' ' || variant_id || ' ' || agent")
	}
	h := read(hot.db)
	if len(h) < 50 {
		t.Fatalf("only %d failing runs in the traffic", len(h))
	}
	for name, w := range map[string]map[string]string{"warm": read(warm.db), "queued warm": read(queued.db)} {
		for id, v := range h {
			if w[id] != v {
				t.Errorf("run %s: hot %q, %s %q", id, v, name, w[id])
			}
		}
		for id := range w {
			if _, ok := h[id]; !ok {
				t.Errorf("run %s fails in %s only: %q", id, name, w[id])
			}
		}
	}
	return hot, warm
}

// runPatternRows is expr of every run_patterns row of db, by run.
func runPatternRows(t *testing.T, db *sql.DB, expr string) map[string]string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT trace_id, `+expr+` FROM run_patterns`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, v string
		if err := rows.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		out[id] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// countWhole counts the runs of batch that the committed file db holds exactly as the batch
// did (signWhole's test, run after the commit: no later write touched them).
func countWhole(t *testing.T, db *sql.DB, batch map[string]wholeRun, query string) int {
	t.Helper()
	var ids []string
	for id := range batch {
		ids = append(ids, id)
	}
	rows, err := db.QueryContext(context.Background(), query, idsJSON(ids))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id string
		var spans, events int
		if err := rows.Scan(&id, &spans, &events); err != nil {
			t.Fatal(err)
		}
		if b := batch[id]; b.n == spans && b.events == events {
			n++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkSignedAsReadBack asserts that every signature row of db is clean and equals the signature
// of its run read back with load, that enough runs failed and some were whole in their batch.
func checkSignedAsReadBack(t *testing.T, db *sql.DB, load runLoader, sessionKeys []string, inBatch int) {
	t.Helper()
	n := checkStoredAsReadBack(t, db, load, sessionKeys)
	if n < 10 || inBatch == 0 {
		t.Fatalf("%d failing runs signed, %d runs whole in their batch: the traffic does not exercise both paths", n, inBatch)
	}
	t.Logf("%d failing runs; %d runs were whole in their batch", n, inBatch)
}

// checkStoredAsReadBack checks that every run_patterns row of db is signed, as the run read back
// signs, and returns the number of rows.
func checkStoredAsReadBack(t *testing.T, db *sql.DB, load runLoader, sessionKeys []string) int {
	t.Helper()
	ctx := context.Background()
	rows, err := db.QueryContext(ctx, `SELECT trace_id, pattern_id, variant_id, agent, dirty FROM run_patterns`)
	if err != nil {
		t.Fatal(err)
	}
	type stored struct {
		id, pid, vid, agent string
		dirty               int
	}
	var all []stored
	for rows.Next() {
		var r stored
		if err := rows.Scan(&r.id, &r.pid, &r.vid, &r.agent, &r.dirty); err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	rows.Close() // the file's one connection, which signature's read needs
	n := 0
	for _, r := range all {
		sig, a, err := signature(ctx, load, sessionKeys, nil, r.id)
		if err != nil {
			t.Fatal(err)
		}
		if r.dirty != 0 || r.pid != sig.ID() || r.vid != sig.VariantID() || r.agent != a {
			t.Errorf("run %s: stored %s/%s agent %q dirty %d, read back %s/%s agent %q", r.id, r.pid, r.vid, r.agent, r.dirty, sig.ID(), sig.VariantID(), a)
		}
		n++
	}
	return n
}

// traceIDsOf is the set of td's trace ids.
func traceIDsOf(td ptrace.Traces) map[string]bool {
	ids := map[string]bool{}
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				ids[sp.TraceID().String()] = true
			}
		}
	}
	return ids
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
