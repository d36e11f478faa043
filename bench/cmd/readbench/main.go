// SPDX-License-Identifier: Apache-2.0

// Command readbench measures the read side over growing stores (issue 17, "Reads that do not
// grow with the store"): `runagain sessions --limit 20` and `runagain show` of one run over the
// embedded default's files (hot.db, warm.db, cold/) holding 10^4, 10^5 and 10^6 runs.
//
// It writes the runs directly through the store writers (sqlitestore.DB.WriteTraces and
// WarmDB.WriteTraces, coldstore.Store.Write: what the tiered exporter calls), in batches of
// -batch runs, growing one store to each size in turn, and at each size measures, in process
// and through the same readers the CLI opens (store.Tiered over hot, warm, cold, read-only):
//
//   - list: Tiered.Runs(Limit 20), the median of -reps calls, and the index rows it read
//     (sqlitestore.ProbeRowsRead on the hot and warm listing queries: rows SQLite visited);
//   - show: Tiered.Run of a run in the middle of the store, its median time and rows read
//     (span and log rows of that trace, counted the same way);
//   - baseline (sizes up to -baseline-max): the listing before the run index, the aggregate over
//     every span row of the hot file (sqlitestore.AggregateRunsQuery), its time and rows read;
//   - since: store.EachRun over the last 2 hours of runs (what `sessions --since 2h` walks);
//   - ui: the sessions page (internal/ui, in process) with each filter, sort and page of
//     uiQueries, the median of -reps requests;
//   - with -cli PATH (a built runagain), the CPU time (user + system, start-up included) and peak
//     RSS of `runagain --data-dir DIR sessions --limit 20`, `sessions --since T` and `show ID` as
//     processes, and `runagain ui` as a process: the wall time of each uiQueries page over HTTP
//     and the process's peak RSS (VmHWM) after all of them.
//
// A store can be grown without measuring (-write-only) and measured later, by a later build
// (-have, or -stores DIR:RUNS,... for stores of several sizes in one table; each is opened for
// writing first, which adds what this build's schema has).
//
// Usage: go run ./bench/cmd/readbench [-sizes 10000,100000,1000000] [-dir DIR] [-cli bin/runagain]
//
//	go run ./bench/cmd/readbench -write-only -sizes 10000 -dir D4   # then copy D4 to D5 and grow it
//	go run ./bench/cmd/readbench -stores D4:10000,D5:100000 -reps 3 -cli bin/runagain
//
// It prints a Markdown table; BENCHMARKS.md has the measured numbers and the command.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/coldstore"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/ui"
)

func main() {
	sizesFlag := flag.String("sizes", "10000,100000", "store sizes in runs, ascending (one store grows to each)")
	large := flag.Bool("large", false, "add a store of 10^6 runs to -sizes (about an hour to write on 2 cores)")
	dir := flag.String("dir", "", "data directory to grow (default: a new temporary directory, removed at the end)")
	batch := flag.Int("batch", 500, "runs per write (one transaction per tier)")
	reps := flag.Int("reps", 7, "measurements per reading (the median is reported)")
	baselineMax := flag.Int("baseline-max", 100000, "largest size at which the aggregation baseline is measured")
	cli := flag.String("cli", "", "path of a built runagain to time as a process (optional)")
	migrate := flag.Bool("migrate", false, "instead: make -dir's hot.db a version 2 file (no run index; its span bodies become unreadable: a scratch directory) and time the migration that rebuilds the index when the file is opened for writing")
	have := flag.Int("have", 0, "runs the store in -dir already holds (from an earlier run with the same -dir): measure without writing them again")
	stores := flag.String("stores", "", "instead: measure these existing stores, DIR:RUNS,DIR:RUNS (each grown by readbench to RUNS), in one table")
	skipUI := flag.String("skip-ui", "", "comma-separated substrings: skip the uiQueries that contain one (e.g. pattern)")
	writeOnly := flag.Bool("write-only", false, "grow the store in -dir to the largest of -sizes and measure nothing (a later run measures it with -have)")
	flag.Parse()
	var sizes []int
	for _, s := range strings.Split(*sizesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fail(fmt.Errorf("-sizes %q: want positive integers", *sizesFlag))
		}
		sizes = append(sizes, n)
	}
	if *large && sizes[len(sizes)-1] < 1000000 {
		sizes = append(sizes, 1000000)
	}
	sort.Ints(sizes)
	if *dir == "" {
		d, err := os.MkdirTemp("", "readbench-")
		if err != nil {
			fail(err)
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	if *migrate {
		if err := timeMigration(filepath.Join(*dir, "hot.db")); err != nil {
			fail(err)
		}
		return
	}
	if *skipUI != "" {
		var keep []string
		for _, q := range uiQueries {
			skip := false
			for _, sub := range strings.Split(*skipUI, ",") {
				skip = skip || sub != "" && strings.Contains(q, sub)
			}
			if !skip {
				keep = append(keep, q)
			}
		}
		uiQueries = keep
	}
	if *stores != "" {
		if err := measureStores(context.Background(), *stores, *reps, *baselineMax, *cli); err != nil {
			fail(err)
		}
		return
	}
	if *writeOnly {
		sizes = sizes[len(sizes)-1:]
		*reps = -1
	}
	if err := run(context.Background(), *dir, sizes, *have, *batch, *reps, *baselineMax, *cli); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "readbench:", err)
	os.Exit(1)
}

// t0 is the first run's start; runs start every 30 s (10^6 runs span 347 days).
var t0 = time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC).UnixNano()

const step = int64(30 * time.Second)

// traceID is run i's trace id: 16 bytes, i big-endian in the last 8, a fixed prefix.
func traceID(i int) pcommon.TraceID {
	id := pcommon.TraceID{0x72, 0x61, 0x69, 0x64, 0x78, 0x01}
	for b := 0; b < 8; b++ {
		id[15-b] = byte(uint64(i) >> (8 * b))
	}
	return id
}

func spanID(i, n int) pcommon.SpanID {
	id := pcommon.SpanID{byte(n + 1)}
	for b := 0; b < 7; b++ {
		id[7-b] = byte(uint64(i) >> (8 * b))
	}
	return id
}

var models = []string{"gpt-4.1", "claude-sonnet-4", "gpt-4.1-mini"}

// addRun appends run i: an agent span over one LLM call (usage, a short inline prompt), and every
// tenth run a failing tool call. Four consecutive runs share a session.
func addRun(td ptrace.Traces, i int) {
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "readbench")
	ss := rs.ScopeSpans().AppendEmpty()
	start := t0 + int64(i)*step
	session := fmt.Sprintf("conv-%d", i/4)
	root := ss.Spans().AppendEmpty()
	root.SetTraceID(traceID(i))
	root.SetSpanID(spanID(i, 0))
	root.SetName("invoke_agent support")
	root.SetStartTimestamp(pcommon.Timestamp(start))
	root.SetEndTimestamp(pcommon.Timestamp(start + int64(3*time.Second)))
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	root.Attributes().PutStr("gen_ai.agent.name", "support")
	root.Attributes().PutStr("gen_ai.conversation.id", session)
	llm := ss.Spans().AppendEmpty()
	llm.SetTraceID(traceID(i))
	llm.SetSpanID(spanID(i, 1))
	llm.SetParentSpanID(root.SpanID())
	model := models[i%len(models)]
	llm.SetName("chat " + model)
	llm.SetKind(ptrace.SpanKindClient)
	llm.SetStartTimestamp(pcommon.Timestamp(start + int64(time.Second)))
	llm.SetEndTimestamp(pcommon.Timestamp(start + int64(2*time.Second)))
	a := llm.Attributes()
	a.PutStr("gen_ai.operation.name", "chat")
	a.PutStr("gen_ai.request.model", model)
	a.PutInt("gen_ai.usage.input_tokens", int64(100+i%50))
	a.PutInt("gen_ai.usage.output_tokens", int64(20+i%7))
	a.PutStr("gen_ai.conversation.id", session)
	a.PutStr("gen_ai.input.messages", fmt.Sprintf(`[{"role":"user","parts":[{"type":"text","content":"question %d"}]}]`, i))
	if i%10 == 0 {
		tool := ss.Spans().AppendEmpty()
		tool.SetTraceID(traceID(i))
		tool.SetSpanID(spanID(i, 2))
		tool.SetParentSpanID(root.SpanID())
		tool.SetName("execute_tool lookup")
		tool.SetStartTimestamp(pcommon.Timestamp(start + int64(2*time.Second)))
		tool.SetEndTimestamp(pcommon.Timestamp(start + int64(2500*time.Millisecond)))
		tool.Status().SetCode(ptrace.StatusCodeError)
		tool.Attributes().PutStr("gen_ai.tool.name", "lookup")
	}
}

// tiers is the embedded default's three tiers, open for writing.
type tiers struct {
	hot  *sqlitestore.DB
	warm *sqlitestore.WarmDB
	cold *coldstore.Store
}

func openTiers(ctx context.Context, dir string) (*tiers, error) {
	hot, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{})
	if err != nil {
		return nil, err
	}
	warm, err := sqlitestore.OpenWarm(filepath.Join(dir, "warm.db"), sqlitestore.Options{})
	if err != nil {
		return nil, err
	}
	cold, err := coldstore.Open(ctx, filepath.Join(dir, "cold"), coldstore.Options{})
	if err != nil {
		return nil, err
	}
	return &tiers{hot: hot, warm: warm, cold: cold}, nil
}

func (t *tiers) close() {
	t.hot.Close()
	t.warm.Close()
	t.cold.Close()
}

func (t *tiers) write(ctx context.Context, from, to int) error {
	td := ptrace.NewTraces()
	ld := plog.NewLogs()
	div := plog.NewLogs() // replay divergence records: replay sends them, only the hot file keeps them
	for i := from; i < to; i++ {
		addRun(td, i)
		if i%70 == 0 {
			lr := div.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
			lr.SetEventName(runagainattr.EventDivergence)
			lr.SetTimestamp(pcommon.Timestamp(t0 + int64(i)*step + int64(2*time.Second)))
			lr.SetTraceID(traceID(i))
			lr.SetSpanID(spanID(i, 1))
			lr.Body().SetStr("replay diverged at request 2")
		}
		if i%50 == 0 {
			lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
			lr.SetEventName(store.AlertEventName)
			lr.SetTimestamp(pcommon.Timestamp(t0 + int64(i)*step + int64(time.Second)))
			lr.SetTraceID(traceID(i))
			lr.SetSpanID(spanID(i, 1))
			lr.Body().SetStr("loop detected")
		}
	}
	if _, err := t.hot.WriteTraces(ctx, td); err != nil {
		return err
	}
	if err := t.warm.WriteTraces(ctx, td); err != nil {
		return err
	}
	if div.LogRecordCount() > 0 {
		if err := t.hot.WriteLogs(ctx, div); err != nil {
			return err
		}
	}
	if ld.LogRecordCount() > 0 {
		if err := t.hot.WriteLogs(ctx, ld); err != nil {
			return err
		}
		if err := t.warm.WriteLogs(ctx, ld); err != nil {
			return err
		}
	}
	_, err := t.cold.Write(ctx, store.Partials(td, ld, nil, time.Now().UnixNano(), nil))
	return err
}

// row is one line of the result table.
type row struct {
	runs                   int
	genRate                float64 // runs written per second while growing to this size
	bytes                  int64   // hot.db + warm.db (with WAL) + cold/
	list, show             time.Duration
	listRead, showRead     int64
	base                   time.Duration
	baseRead               int64
	cliList, cliShow       time.Duration
	coldRead, listReturned int
	// issue 35: the reads that used to hold every run: store.EachRun over the last 2 hours
	// (what sessions --since 2h walks) and the UI's sessions page with each filter.
	since     time.Duration
	sinceRows int
	ui        map[string]time.Duration
	// with -cli: sessions --since 2h as a process (CPU), the peak RSS of each CLI process, and
	// the UI as a process (`runagain ui`): each page's wall time and the process's peak RSS.
	cliSince                            time.Duration
	cliListRSS, cliSinceRSS, cliShowRSS int64 // KiB
	uiProc                              map[string]time.Duration
	uiRSS                               int64 // KiB, VmHWM after every page
}

// uiQueries are the sessions-page filters readbench times (internal/ui), in report order:
// every filter and sort of the page. SINCE stands for the start of the last 2 hours of runs (an
// RFC 3339 time: the UI process's clock is not readbench's), PATTERN for the most frequent
// failure pattern of the store (every tenth run fails a tool call).
var uiQueries = []string{"/", "/?page=3", "/?errors=1", "/?alerts=1", "/?model=gpt", "/?agent=support",
	"/?q=question+77", "/?q=refund", "/?pattern=PATTERN", "/?since=SINCE", "/?cost_min=0.01",
	"/?sort=cost", "/?sort=cost&order=asc", "/?sort=cost&page=3", "/?sort=duration", "/?sort=tokens",
	"/?sort=errors", "/?since=SINCE&sort=cost"}

// uiURL is q with its placeholders filled in.
func uiURL(q string, since time.Time, pattern string) string {
	return strings.NewReplacer("SINCE", url.QueryEscape(since.Format(time.RFC3339Nano)), "PATTERN", pattern).Replace(q)
}

func run(ctx context.Context, dir string, sizes []int, have, batch, reps, baselineMax int, cli string) error {
	t, err := openTiers(ctx, dir)
	if err != nil {
		return err
	}
	var rows []row
	for _, size := range sizes {
		began := time.Now()
		for from := have; from < size; from += batch {
			if err := t.write(ctx, from, min(from+batch, size)); err != nil {
				t.close()
				return err
			}
		}
		r := row{runs: size, genRate: float64(size-have) / time.Since(began).Seconds()}
		have = max(have, size)
		fmt.Fprintf(os.Stderr, "readbench: %d runs written (%.0f runs/s); measuring\n", size, r.genRate)
		if reps < 0 { // -write-only
			continue
		}
		if _, err := t.hot.SQL().ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			return err
		}
		if _, err := t.warm.SQL().ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			return err
		}
		if err := measure(ctx, dir, &r, reps, size <= baselineMax, cli); err != nil {
			t.close()
			return err
		}
		r.bytes = dirBytes(dir)
		rows = append(rows, r)
	}
	t.close()
	if len(rows) > 0 {
		report(rows, cli != "")
	}
	return nil
}

// measureStores measures each DIR:RUNS of list (stores readbench grew) after opening it for
// writing once (which brings its schema up to this build's) and checkpointing its WAL.
func measureStores(ctx context.Context, list string, reps, baselineMax int, cli string) error {
	var rows []row
	for _, item := range strings.Split(list, ",") {
		dir, n, ok := strings.Cut(item, ":")
		runs, err := strconv.Atoi(n)
		if !ok || err != nil || runs <= 0 {
			return fmt.Errorf("-stores %q: want DIR:RUNS items, comma-separated", list)
		}
		began := time.Now()
		t, err := openTiers(ctx, dir)
		if err != nil {
			return err
		}
		for _, db := range []*sql.DB{t.hot.SQL(), t.warm.SQL()} {
			if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
				t.close()
				return err
			}
		}
		t.close()
		fmt.Fprintf(os.Stderr, "readbench: %s (%d runs) opened for writing in %s; measuring\n", dir, runs, time.Since(began).Round(time.Millisecond))
		r := row{runs: runs}
		if err := measure(ctx, dir, &r, reps, runs <= baselineMax, cli); err != nil {
			return err
		}
		r.bytes = dirBytes(dir)
		rows = append(rows, r)
	}
	report(rows, cli != "")
	return nil
}

// measure reads the store as the CLI does: read-only handles, store.Tiered over hot, warm, cold.
func measure(ctx context.Context, dir string, r *row, reps int, baseline bool, cli string) error {
	hot, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer hot.Close()
	warm, err := sqlitestore.OpenWarm(filepath.Join(dir, "warm.db"), sqlitestore.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer warm.Close()
	cold := &countingCold{}
	cold.Store, err = coldstore.Open(ctx, filepath.Join(dir, "cold"), coldstore.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	tiered := store.NewTiered(hot, warm, cold)
	defer tiered.Close()

	f := store.RunFilter{Limit: 20}
	var got []store.RunSummary
	r.list, err = median(reps, func() error {
		var err error
		got, err = tiered.Runs(ctx, f)
		return err
	})
	if err != nil {
		return err
	}
	r.listReturned = len(got)
	r.coldRead = cold.calls
	q, args := sqlitestore.RunsQuery(f)
	for _, db := range []*sql.DB{hot.SQL(), warm.SQL()} {
		n, err := probe(ctx, db, q, args...)
		if err != nil {
			return err
		}
		r.listRead += n
	}

	id := traceID(r.runs / 2).String()
	r.show, err = median(reps, func() error {
		run, err := tiered.Run(ctx, id)
		if err == nil && run.Tier != store.TierHot {
			err = fmt.Errorf("run %s read from the %s tier", id, run.Tier)
		}
		return err
	})
	if err != nil {
		return err
	}
	for _, q := range []string{`SELECT otlp FROM spans WHERE trace_id = ? ORDER BY start_time_unix_nano, span_id`,
		`SELECT otlp FROM logs WHERE trace_id = ? ORDER BY time_unix_nano, rowid`} {
		n, err := probe(ctx, hot.SQL(), q, id)
		if err != nil {
			return err
		}
		r.showRead += n
	}

	if baseline {
		bq, bargs := sqlitestore.AggregateRunsQuery(f, "spans", "SUM(cost_usd), SUM(unpriced)")
		r.base, err = median(min(reps, 3), func() error { _, err := count(ctx, hot.SQL(), bq, bargs...); return err })
		if err != nil {
			return err
		}
		if r.baseRead, err = probe(ctx, hot.SQL(), bq, bargs...); err != nil {
			return err
		}
	}
	// the newest run starts at t0 + (runs-1)*step: "since 2h" is the last 240 runs at any size
	newest := time.Unix(0, t0+int64(r.runs-1)*step).UTC()
	sf := store.RunFilter{Since: newest.Add(-2 * time.Hour)}
	r.since, err = median(reps, func() error {
		r.sinceRows = 0
		return store.EachRun(ctx, tiered, sf, func(store.RunSummary) bool { r.sinceRows++; return true })
	})
	if err != nil {
		return err
	}
	rep, err := patterns.List(ctx, tiered, store.PatternFilter{})
	if err != nil {
		return err
	}
	pattern := "none"
	if len(rep.Patterns) > 0 {
		pattern = rep.Patterns[0].ID
	}
	sinceUI := newest.Add(-2 * time.Hour)
	srv, err := ui.New(ui.Options{Reader: tiered, Now: func() time.Time { return newest.Add(time.Minute) }})
	if err != nil {
		return err
	}
	defer srv.Close()
	r.ui = map[string]time.Duration{}
	for _, q := range uiQueries {
		u := uiURL(q, sinceUI, pattern)
		r.ui[q], err = median(reps, func() error {
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, httptest.NewRequest("GET", u, nil))
			if rec.Code != 200 {
				return fmt.Errorf("ui %s: %d", u, rec.Code)
			}
			return nil
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "readbench: %d runs: ui %s %s ms\n", r.runs, q, ms(r.ui[q]))
	}
	if cli != "" {
		r.cliList, r.cliListRSS, err = cpuMedian(reps, cli, "--data-dir", dir, "sessions", "--limit", "20")
		if err != nil {
			return fmt.Errorf("%s sessions: %w", cli, err)
		}
		r.cliSince, r.cliSinceRSS, err = cpuMedian(reps, cli, "--data-dir", dir, "sessions", "--since", sf.Since.Format(time.RFC3339Nano))
		if err != nil {
			return fmt.Errorf("%s sessions --since: %w", cli, err)
		}
		r.cliShow, r.cliShowRSS, err = cpuMedian(reps, cli, "--data-dir", dir, "show", id)
		if err != nil {
			return fmt.Errorf("%s show: %w", cli, err)
		}
		if r.uiProc, r.uiRSS, err = uiProcess(ctx, reps, cli, dir, sinceUI, pattern); err != nil {
			return fmt.Errorf("%s ui: %w", cli, err)
		}
	}
	return nil
}

// uiProcess starts `cli --data-dir dir ui` on a free loopback port, times each of uiQueries
// (the median of reps, after one warm-up request, wall time of the whole response) and returns
// the times and the process's peak RSS (VmHWM, KiB) after the last, then stops it.
func uiProcess(ctx context.Context, reps int, cli, dir string, since time.Time, pattern string) (map[string]time.Duration, int64, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.CommandContext(ctx, cli, "--data-dir", dir, "ui", "--listen", addr)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	get := func(u string) error {
		resp, err := http.Get("http://" + addr + u)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s: %s", u, resp.Status)
		}
		return nil
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := get("/"); err == nil {
			break
		} else if time.Now().After(deadline) {
			return nil, 0, err
		}
	}
	out := map[string]time.Duration{}
	for _, q := range uiQueries {
		u := uiURL(q, since, pattern)
		if out[q], err = median(reps, func() error { return get(u) }); err != nil {
			return nil, 0, err
		}
	}
	rss, err := peakRSS(cmd.Process.Pid)
	return out, rss, err
}

// peakRSS is the VmHWM of process pid, in KiB (Linux /proc).
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// timeMigration makes path a version 2 hot file (no run index, no otlp codec columns) and times
// opening it for writing, which builds the index from every span row. The span bodies stay as a
// version 5 build encoded them while the columns naming their codec go (they read as raw
// protobuf afterwards and fail to decode): use a scratch directory.
func timeMigration(path string) error {
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	if _, err := raw.Exec(`DROP TRIGGER IF EXISTS spans_runs_delete; DROP TRIGGER IF EXISTS logs_runs_delete; DROP TABLE IF EXISTS runs;
	  DROP TRIGGER IF EXISTS spans_orphans_delete; DROP TABLE IF EXISTS span_orphans;
	  ALTER TABLE spans DROP COLUMN otlp_codec; ALTER TABLE spans DROP COLUMN otlp_dict;
	  ALTER TABLE logs DROP COLUMN otlp_codec; ALTER TABLE logs DROP COLUMN otlp_dict; DROP TABLE IF EXISTS zstd_dicts;
	  PRAGMA user_version = 2;`); err != nil {
		raw.Close()
		return err
	}
	var spans int64
	if err := raw.QueryRow(`SELECT COUNT(*) FROM spans`).Scan(&spans); err != nil {
		raw.Close()
		return err
	}
	raw.Close()
	began := time.Now()
	db, err := sqlitestore.Open(path, sqlitestore.Options{})
	if err != nil {
		return err
	}
	took := time.Since(began)
	var runs int64
	err = db.SQL().QueryRow(`SELECT COUNT(*) FROM runs`).Scan(&runs)
	db.Close()
	fmt.Printf("migration of %s: %d span rows -> %d index rows in %s\n", path, spans, runs, took.Round(time.Millisecond))
	return err
}

// countingCold counts the cold listings Tiered asked for (each reads every Parquet object).
type countingCold struct {
	*coldstore.Store
	calls int
}

func (c *countingCold) Runs(ctx context.Context, f store.RunFilter) ([]store.RunSummary, error) {
	c.calls++
	return c.Store.Runs(ctx, f)
}

func (c *countingCold) ListsSessions() bool { return true }

func probe(ctx context.Context, db *sql.DB, q string, args ...any) (int64, error) {
	before := sqlitestore.RowsReadProbe.Load()
	if _, err := count(ctx, db, sqlitestore.ProbeRowsRead(q), args...); err != nil {
		return 0, err
	}
	return sqlitestore.RowsReadProbe.Load() - before, nil
}

func count(ctx context.Context, db *sql.DB, q string, args ...any) (int, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	return n, rows.Err()
}

// cpuMedian runs the command reps times and returns the median of its CPU time (user + system):
// on a loaded machine a process's wall time is mostly waiting for a core; and the largest peak
// RSS of the runs in KiB (0 without /usr/bin/time). The peak RSS is /usr/bin/time's: the
// ru_maxrss that wait4 gives readbench for its own child counts readbench's RSS too (Go starts a
// child with vfork, and exec records the high-water mark of the memory it shared).
func cpuMedian(reps int, name string, args ...string) (time.Duration, int64, error) {
	ds := make([]time.Duration, 0, reps)
	var rss int64
	out, err := os.CreateTemp("", "readbench-rss-")
	if err != nil {
		return 0, 0, err
	}
	out.Close()
	defer os.Remove(out.Name())
	_, noTime := os.Stat("/usr/bin/time")
	for i := 0; i < reps; i++ {
		cmd := exec.Command(name, args...)
		if noTime == nil {
			cmd = exec.Command("/usr/bin/time", append([]string{"-f", "%M", "-o", out.Name(), name}, args...)...)
		}
		if err := cmd.Run(); err != nil {
			return 0, 0, err
		}
		// wait4's CPU times of /usr/bin/time include the command it waited for
		ds = append(ds, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		if noTime == nil {
			b, err := os.ReadFile(out.Name())
			if err != nil {
				return 0, 0, err
			}
			kb, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("/usr/bin/time -f %%M: %q: %w", b, err)
			}
			rss = max(rss, kb)
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], rss, nil
}

func median(reps int, f func() error) (time.Duration, error) {
	if err := f(); err != nil { // warm-up: the first call opens connections and reads the schema
		return 0, err
	}
	ds := make([]time.Duration, 0, reps)
	for i := 0; i < reps; i++ {
		began := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(began))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], nil
}

func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }

func report(rows []row, cli bool) {
	fmt.Println("| runs | store MB | sessions --limit 20: ms (rows read) | x the smallest | show one run: ms (rows read) | x the smallest | baseline aggregate listing: ms (rows read) | cold tier read |" +
		map[bool]string{true: " CLI process CPU ms: sessions / show |", false: ""}[cli])
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|" + map[bool]string{true: "---:|", false: ""}[cli])
	for _, r := range rows {
		base := "-"
		if r.baseRead > 0 {
			base = fmt.Sprintf("%s (%d)", ms(r.base), r.baseRead)
		}
		line := fmt.Sprintf("| %d | %.0f | %s (%d) | %.2f | %s (%d) | %.2f | %s | %s |", r.runs, float64(r.bytes)/1e6,
			ms(r.list), r.listRead, float64(r.list)/float64(rows[0].list), ms(r.show), r.showRead,
			float64(r.show)/float64(rows[0].show), base, map[bool]string{true: "yes", false: "no"}[r.coldRead > 0])
		if cli {
			line += fmt.Sprintf(" %s / %s |", ms(r.cliList), ms(r.cliShow))
		}
		fmt.Println(line)
	}
	fmt.Println()
	// One line a read, one column pair a size: its median and its ratio to the smallest size's.
	head, sep := "| read |", "|---|"
	for _, r := range rows {
		head += fmt.Sprintf(" %d runs ms | x |", r.runs)
		sep += "---:|---:|"
	}
	fmt.Println(head)
	fmt.Println(sep)
	line := func(name string, d func(row) time.Duration) {
		l := "| " + name + " |"
		for _, r := range rows {
			l += fmt.Sprintf(" %s | %.2f |", ms(d(r)), float64(d(r))/float64(d(rows[0])))
		}
		fmt.Println(l)
	}
	line(fmt.Sprintf("EachRun since 2h (%d runs)", rows[0].sinceRows), func(r row) time.Duration { return r.since })
	line("show one run", func(r row) time.Duration { return r.show })
	for _, q := range uiQueries {
		line("ui `"+q+"`", func(r row) time.Duration { return r.ui[q] })
	}
	if cli {
		line("CLI `sessions --limit 20` (CPU)", func(r row) time.Duration { return r.cliList })
		line("CLI `sessions --since 2h` (CPU)", func(r row) time.Duration { return r.cliSince })
		line("CLI `show ID` (CPU)", func(r row) time.Duration { return r.cliShow })
		for _, q := range uiQueries {
			line("ui process `"+q+"` (wall)", func(r row) time.Duration { return r.uiProc[q] })
		}
		fmt.Println()
		fmt.Println("| runs | peak RSS MB: CLI sessions --limit 20 | CLI sessions --since 2h | CLI show | ui process after every page |")
		fmt.Println("|---:|---:|---:|---:|---:|")
		for _, r := range rows {
			fmt.Printf("| %d | %.0f | %.0f | %.0f | %.0f |\n", r.runs, float64(r.cliListRSS)/1024, float64(r.cliSinceRSS)/1024,
				float64(r.cliShowRSS)/1024, float64(r.uiRSS)/1024)
		}
	}
	for _, r := range rows {
		fmt.Fprintf(os.Stderr, "readbench: %d runs: written at %.0f runs/s; listing returned %d rows\n", r.runs, r.genRate, r.listReturned)
	}
}
