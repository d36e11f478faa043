// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

var indexT0 = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC).UnixNano()

// indexRuns are fixture runs: sessions shared and absent, failing tools, several models, an
// unknown model (unpriced).
func indexRuns() []storetest.Run {
	var runs []storetest.Run
	models := []string{"gpt-4.1", "claude-sonnet-4", "no-such-model-xyz"}
	for i := 0; i < 12; i++ {
		r := storetest.Run{Seed: fmt.Sprintf("ix-%d", i), Service: "svc", Agent: "a", Model: models[i%3],
			Start: indexT0 + int64(i)*int64(time.Minute), LLMCalls: 1 + i%3, ToolFail: i%4 == 0}
		if i%2 == 0 {
			r.Session = fmt.Sprintf("conv-%d", i%3)
		}
		if i == 5 {
			r.Start = runs[4].Start // same start: the trace id breaks the tie
		}
		runs = append(runs, r)
	}
	return runs
}

// splitChildrenFirst returns the spans of run other than its root, then the root alone: a run
// whose children arrive before their parent.
func splitChildrenFirst(r storetest.Run) (children, root ptrace.Traces) {
	all := storetest.Traces(r)
	children, root = ptrace.NewTraces(), ptrace.NewTraces()
	all.CopyTo(children)
	all.CopyTo(root)
	children.ResourceSpans().At(0).ScopeSpans().At(0).Spans().RemoveIf(func(s ptrace.Span) bool { return s.ParentSpanID().IsEmpty() })
	root.ResourceSpans().At(0).ScopeSpans().At(0).Spans().RemoveIf(func(s ptrace.Span) bool { return !s.ParentSpanID().IsEmpty() })
	return children, root
}

// filters are the listings compared between the index and the aggregation over span rows.
func filters(runs []storetest.Run) []store.RunFilter {
	mid := time.Unix(0, runs[6].Start)
	return []store.RunFilter{
		{}, {Limit: 1}, {Limit: 5}, {Since: mid}, {Until: mid}, {Since: mid, Limit: 2},
		{Since: time.Unix(0, runs[2].Start), Until: time.Unix(0, runs[9].Start), Limit: 3},
		{SessionID: "conv-0"}, {SessionID: "conv-1", Limit: 1}, {SessionID: "conv-2", Since: mid},
		{SessionID: storetest.TraceID("ix-3").String()}, {SessionID: storetest.TraceID("ix-2").String()},
		{SessionID: "no-such-session"},
	}
}

// TestRunIndexListsWhatTheSpansSay: after writes, retried batches, a run whose children arrive
// before its root, alerts and expiry, the indexed listing of the hot and the warm file returns
// exactly what aggregating their span rows returns (listRuns, the listing before the index), for
// every filter.
func TestRunIndexListsWhatTheSpansSay(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	dir := t.TempDir()
	hot, err := Open(filepath.Join(dir, "hot.db"), Options{Now: clock})
	require.NoError(t, err)
	defer hot.Close()
	warm, err := OpenWarm(filepath.Join(dir, "warm.db"), Options{Now: clock})
	require.NoError(t, err)
	defer warm.Close()
	write := func(td ptrace.Traces) {
		_, err := hot.WriteTraces(ctx, td)
		require.NoError(t, err)
		require.NoError(t, warm.WriteTraces(ctx, td))
	}
	check := func(stage string) {
		t.Helper()
		for _, f := range filters(indexRuns()) {
			for _, c := range []struct {
				db   *sql.DB
				list func() ([]store.RunSummary, error)
				cost string
				tier string
			}{
				{hot.db, func() ([]store.RunSummary, error) { return hot.Runs(ctx, f) }, "SUM(cost_usd), SUM(unpriced)", "hot"},
				{warm.db, func() ([]store.RunSummary, error) { return warm.Runs(ctx, f) }, "SUM(cost_usd), SUM(unpriced)", "warm"},
			} {
				table := map[string]string{"hot": "spans", "warm": "span_summaries"}[c.tier]
				want, err := listRuns(ctx, c.db, f, table, c.cost, c.tier)
				require.NoError(t, err)
				got, err := c.list()
				require.NoError(t, err)
				assert.Equal(t, want, got, "%s: %s tier, filter %+v", stage, c.tier, f)
			}
		}
	}

	runs := indexRuns()
	write(storetest.Traces(runs[:6]...))
	check("first batch")
	write(storetest.Traces(runs[:6]...))
	check("the same batch retried")
	children, root := splitChildrenFirst(runs[6])
	write(children)
	rows, err := hot.Runs(ctx, store.RunFilter{SessionID: runs[6].Session})
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	assert.True(t, rows[0].Incomplete, "children without their root")
	assert.Equal(t, "no root span; 1 orphan span (parent not received)", rows[0].IncompleteReason)
	check("children before their root")
	write(root)
	check("the root arrived")
	rows, err = hot.Runs(ctx, store.RunFilter{Limit: 1, Since: time.Unix(0, runs[6].Start), Until: time.Unix(0, runs[6].Start+1)})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.False(t, rows[0].Incomplete)
	require.NoError(t, hot.WriteLogs(ctx, storetest.Alert(runs[1], "loop")))
	require.NoError(t, warm.WriteLogs(ctx, storetest.Alert(runs[1], "loop")))
	var alerts [2]int
	require.NoError(t, hot.db.QueryRow(`SELECT alerts FROM runs WHERE trace_id = ?`, storetest.TraceID("ix-1").String()).Scan(&alerts[0]))
	require.NoError(t, warm.db.QueryRow(`SELECT alerts FROM runs WHERE trace_id = ?`, storetest.TraceID("ix-1").String()).Scan(&alerts[1]))
	assert.Equal(t, [2]int{1, 1}, alerts, "the alert is counted in both files")

	now = now.Add(time.Hour)
	write(storetest.Traces(runs[6:]...))
	check("later runs")
	// The first six runs were ingested an hour earlier: expiry removes them and their index rows.
	_, err = hot.Expire(ctx, now.Add(-time.Minute))
	require.NoError(t, err)
	_, err = warm.Expire(ctx, now.Add(-time.Minute))
	require.NoError(t, err)
	check("after expiry")
	all, err := hot.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	assert.Len(t, all, len(runs)-6)

	// Deleting a run's rows by any path (here a plain DELETE) drops its index row (trigger); an
	// erasure of a session (store.Eraser) drops the index rows of its runs in both files.
	gone := storetest.TraceID("ix-7").String()
	_, err = hot.db.ExecContext(ctx, `DELETE FROM spans WHERE trace_id = ?`, gone)
	require.NoError(t, err)
	_, err = warm.db.ExecContext(ctx, `DELETE FROM span_summaries WHERE trace_id = ?`, gone)
	require.NoError(t, err)
	check("after a plain delete")
	_, err = hot.Run(ctx, gone)
	assert.ErrorIs(t, err, store.ErrNotFound)
	for _, e := range []store.Eraser{hot, warm} {
		ids, err := e.SessionTraces(ctx, "conv-2")
		require.NoError(t, err)
		require.NotEmpty(t, ids)
		_, err = e.Erase(ctx, store.Erasure{Session: "conv-2", TraceIDs: ids})
		require.NoError(t, err)
	}
	check("after erasing a session")
	for _, db := range []*sql.DB{hot.db, warm.db} {
		var n int
		require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM runs WHERE session_id = 'conv-2'`).Scan(&n))
		assert.Zero(t, n)
	}
	// RefreshRuns recomputes named runs in the caller's transaction.
	tx, err := hot.db.BeginTx(ctx, nil)
	require.NoError(t, err)
	_, err = tx.ExecContext(ctx, `DELETE FROM runs`)
	require.NoError(t, err)
	var left []string
	for _, r := range all {
		left = append(left, r.TraceID)
	}
	require.NoError(t, hot.RefreshRuns(ctx, tx, left))
	require.NoError(t, tx.Commit())
	check("after RefreshRuns")
}

// TestRunIndexMigratesOlderFiles: a version 2 hot file and a version 1 warm file (no index) are
// listed by aggregation when opened read-only, and opened for writing they build the index from
// their rows and list the same.
func TestRunIndexMigratesOlderFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	runs := indexRuns()
	td := storetest.Traces(runs...)
	for _, c := range []struct {
		name, file string
		version    int
		write      func(path string) error
		open       func(path string, o Options) (store.Reader, error)
	}{
		{"hot", "hot.db", 2, func(path string) error {
			db, err := Open(path, Options{})
			if err != nil {
				return err
			}
			defer db.Close()
			_, err = db.WriteTraces(ctx, td)
			return err
		}, func(path string, o Options) (store.Reader, error) { return Open(path, o) }},
		{"warm", "warm.db", 1, func(path string) error {
			db, err := OpenWarm(path, Options{})
			if err != nil {
				return err
			}
			defer db.Close()
			return db.WriteTraces(ctx, td)
		}, func(path string, o Options) (store.Reader, error) { return OpenWarm(path, o) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.file)
			require.NoError(t, c.write(path))
			if c.name == "hot" {
				downgradeToV3(t, path)
			}
			// Make it an older file: no run index, the older version.
			raw, err := sql.Open("sqlite", "file:"+path)
			require.NoError(t, err)
			_, err = raw.Exec(fmt.Sprintf(`DROP TABLE runs; PRAGMA user_version = %d;`, c.version))
			require.NoError(t, err)
			require.NoError(t, raw.Close())

			r, err := c.open(path, Options{ReadOnly: true})
			require.NoError(t, err)
			want, err := r.Runs(ctx, store.RunFilter{})
			require.NoError(t, err)
			require.Len(t, want, len(runs), "read-only: listed by aggregation")
			limited, err := r.Runs(ctx, store.RunFilter{Limit: 3, SessionID: "conv-0"})
			require.NoError(t, err)
			require.NoError(t, r.Close())

			w, err := c.open(path, Options{})
			require.NoError(t, err, "opened for writing: migrated")
			require.NoError(t, w.Close())
			raw, err = sql.Open("sqlite", "file:"+path)
			require.NoError(t, err)
			var n int
			require.NoError(t, raw.QueryRow(`SELECT COUNT(*) FROM runs`).Scan(&n))
			require.NoError(t, raw.Close())
			assert.Equal(t, len(runs), n, "the index is built from the rows")
			r, err = c.open(path, Options{ReadOnly: true})
			require.NoError(t, err)
			defer r.Close()
			got, err := r.Runs(ctx, store.RunFilter{})
			require.NoError(t, err)
			assert.Equal(t, want, got)
			got, err = r.Runs(ctx, store.RunFilter{Limit: 3, SessionID: "conv-0"})
			require.NoError(t, err)
			assert.Equal(t, limited, got)
		})
	}
}

// TestRunIndexReadsOnlyTheRowsItReturns: listing the newest runs, a time range or a session walks
// an index in the listing's order (no sort of the whole table) and visits as many index rows as it
// returns, counted by a probe in the query; reading one run searches its rows by trace id.
func TestRunIndexReadsOnlyTheRowsItReturns(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "hot.db"), Options{})
	require.NoError(t, err)
	defer db.Close()
	td := ptrace.NewTraces()
	for i := 0; i < 300; i++ {
		r := storetest.Run{Seed: fmt.Sprintf("n-%d", i), Service: "svc", Model: "gpt-4.1", Start: indexT0 + int64(i)*int64(time.Second), LLMCalls: 1}
		if i%10 == 0 {
			r.Session = "conv-tenth"
		}
		storetest.Add(td, r)
	}
	_, err = db.WriteTraces(ctx, td)
	require.NoError(t, err)

	for _, c := range []struct {
		f     store.RunFilter
		index string
		want  int
	}{
		{store.RunFilter{Limit: 20}, "runs_start", 20},
		{store.RunFilter{Limit: 20, Since: time.Unix(0, indexT0+100*int64(time.Second))}, "runs_start", 20},
		{store.RunFilter{Limit: 20, Until: time.Unix(0, indexT0+100*int64(time.Second))}, "runs_start", 20},
		{store.RunFilter{Limit: 5, SessionID: "conv-tenth"}, "runs_session", 5},
	} {
		q, args := RunsQuery(c.f)
		plan := queryPlan(t, db.db, q, args...)
		assert.Contains(t, plan, "USING INDEX "+c.index, "%+v", c.f)
		assert.NotContains(t, plan, "TEMP B-TREE", "no sort of the whole table: %+v", c.f)
		rows, read := rowsRead(t, db.db, q, args...)
		assert.Equal(t, c.want, rows, "%+v", c.f)
		assert.EqualValues(t, c.want, read, "index rows visited for %+v", c.f)
	}
	// The aggregation the index replaces visits every span row for the same 20 runs.
	q, args := AggregateRunsQuery(store.RunFilter{Limit: 20}, "spans", "SUM(cost_usd), SUM(unpriced)")
	rows, read := rowsRead(t, db.db, q, args...)
	assert.Equal(t, 20, rows)
	assert.EqualValues(t, 600, read, "300 runs of 2 spans")
	plan := queryPlan(t, db.db, `SELECT otlp FROM spans WHERE trace_id = ? ORDER BY start_time_unix_nano, span_id`, "x")
	assert.Contains(t, plan, "SEARCH spans USING INDEX sqlite_autoindex_spans_1 (trace_id=?)", "show reads one run's rows")
	plan = queryPlan(t, db.db, `SELECT otlp FROM logs WHERE trace_id = ? ORDER BY time_unix_nano, rowid`, "x")
	assert.Contains(t, plan, "USING INDEX logs_trace (trace_id=?)")
}

func queryPlan(t *testing.T, db *sql.DB, q string, args ...any) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+q, args...)
	require.NoError(t, err)
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		b.WriteString(detail + "\n")
	}
	require.NoError(t, rows.Err())
	return b.String()
}

// rowsRead runs q with a counting probe added to its WHERE clause (a function SQLite calls once
// per row it visits before LIMIT stops the scan) and returns the rows returned and visited.
func rowsRead(t *testing.T, db *sql.DB, q string, args ...any) (int, int64) {
	t.Helper()
	probed := ProbeRowsRead(q)
	require.NotEqual(t, q, probed)
	before := RowsReadProbe.Load()
	rows, err := db.Query(probed, args...)
	require.NoError(t, err)
	n := 0
	for rows.Next() {
		n++
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	return n, RowsReadProbe.Load() - before
}

// TestRunIndexIncrementalCountsEachSpanOnce: the writer adds each batch's new span rows to their
// runs' index rows; a retried batch, a batch mixing retried and new spans, a retried span whose
// content changed, spans arriving before their parents over several batches (grandchildren
// first), and a later batch for a run whose rows were partly deleted by a plain DELETE all leave
// the index equal to the aggregation over the span rows.
func TestRunIndexIncrementalCountsEachSpanOnce(t *testing.T) {
	ctx := context.Background()
	hot, err := Open(filepath.Join(t.TempDir(), "hot.db"), Options{})
	require.NoError(t, err)
	defer hot.Close()
	check := func(stage string) {
		t.Helper()
		for _, f := range []store.RunFilter{{}, {SessionID: "conv-a"}} {
			want, err := listRuns(ctx, hot.db, f, "spans", "SUM(cost_usd), SUM(unpriced)", "hot")
			require.NoError(t, err)
			got, err := hot.Runs(ctx, f)
			require.NoError(t, err)
			require.Equal(t, want, got, stage)
		}
		// The orphans table holds exactly the missing parents of the stored rows.
		var want, got int
		require.NoError(t, hot.db.QueryRow(`SELECT COUNT(*) FROM spans s WHERE parent_span_id != '' AND NOT EXISTS
		  (SELECT 1 FROM spans p WHERE p.trace_id = s.trace_id AND p.span_id = s.parent_span_id)`).Scan(&want))
		require.NoError(t, hot.db.QueryRow(`SELECT COALESCE(SUM(spans), 0) FROM span_orphans`).Scan(&got))
		require.Equal(t, want, got, "%s: span_orphans", stage)
	}
	write := func(td ptrace.Traces) {
		t.Helper()
		_, err := hot.WriteTraces(ctx, td)
		require.NoError(t, err)
	}
	// spansOf returns the spans of run numbered in nums (0 is the root, 1.. the LLM calls).
	spansOf := func(r storetest.Run, nums ...int) ptrace.Traces {
		td := storetest.Traces(r)
		keep := map[pcommon.SpanID]bool{}
		for _, n := range nums {
			keep[storetest.SpanID(r.Seed, n)] = true
		}
		td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().RemoveIf(func(s ptrace.Span) bool { return !keep[s.SpanID()] })
		return td
	}
	a := storetest.Run{Seed: "inc-a", Session: "conv-a", Service: "svc", Model: "gpt-4.1", Start: indexT0, LLMCalls: 4}
	b := storetest.Run{Seed: "inc-b", Service: "svc2", Model: "claude-sonnet-4", Start: indexT0 + 5, LLMCalls: 2, ToolFail: true}

	write(spansOf(a, 1, 2))
	check("children first")
	write(spansOf(a, 1, 2))
	check("the same batch retried")
	mixed := spansOf(a, 2, 3)
	storetest.Add(mixed, b)
	write(mixed)
	check("a retried span and new ones, two runs")
	rows, err := hot.Runs(ctx, store.RunFilter{SessionID: "conv-a"})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.EqualValues(t, 3, rows[0].Spans, "spans 1, 2 and 3 once each")
	assert.EqualValues(t, 3, rows[0].Orphans)

	changed := spansOf(a, 3)
	changed.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().PutInt("gen_ai.usage.input_tokens", 7)
	write(changed)
	check("a retried span with other content replaces it")
	rows, err = hot.Runs(ctx, store.RunFilter{SessionID: "conv-a"})
	require.NoError(t, err)
	assert.EqualValues(t, 100+100+7, rows[0].InputTokens)

	write(spansOf(a, 0, 4))
	check("the root arrived with a sibling")
	rows, err = hot.Runs(ctx, store.RunFilter{SessionID: "conv-a"})
	require.NoError(t, err)
	assert.False(t, rows[0].Incomplete)
	assert.EqualValues(t, 5, rows[0].Spans)

	// Part of run b deleted outside any writer: its index row goes (trigger); the next span of
	// the run brings the row back computed from every remaining row.
	_, err = hot.db.ExecContext(ctx, `DELETE FROM spans WHERE trace_id = ? AND parent_span_id = ''`, storetest.TraceID("inc-b").String())
	require.NoError(t, err)
	extra := storetest.Traces(storetest.Run{Seed: "inc-b", Service: "svc2", Model: "gpt-4.1", Start: indexT0 + 5, LLMCalls: 3})
	extra.ResourceSpans().At(0).ScopeSpans().At(0).Spans().RemoveIf(func(s ptrace.Span) bool {
		return s.SpanID() != storetest.SpanID("inc-b", 3) // LLM call 3: the tool span of b had this number
	})
	extra.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).SetSpanID(storetest.SpanID("inc-b", 9))
	write(extra)
	check("a run whose rows were partly deleted")
	all, err := hot.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, all, 2)
}

// TestRunIndexAlertsCountedOnce: an alert record retried is counted once; an alert that arrives
// before its run's spans is counted when the run's index row is made; one after, added to it.
func TestRunIndexAlertsCountedOnce(t *testing.T) {
	ctx := context.Background()
	hot, err := Open(filepath.Join(t.TempDir(), "hot.db"), Options{})
	require.NoError(t, err)
	defer hot.Close()
	alerts := func(seed string) int {
		var n int
		require.NoError(t, hot.db.QueryRow(`SELECT alerts FROM runs WHERE trace_id = ?`, storetest.TraceID(seed).String()).Scan(&n))
		return n
	}
	early := storetest.Run{Seed: "al-early", Service: "svc", Model: "gpt-4.1", Start: indexT0, LLMCalls: 1}
	require.NoError(t, hot.WriteLogs(ctx, storetest.Alert(early, "loop")))
	require.NoError(t, hot.WriteLogs(ctx, storetest.Alert(early, "loop")), "the same record retried")
	_, err = hot.WriteTraces(ctx, storetest.Traces(early))
	require.NoError(t, err)
	assert.Equal(t, 1, alerts("al-early"), "counted when the run's row was made, once")

	late := storetest.Run{Seed: "al-late", Service: "svc", Model: "gpt-4.1", Start: indexT0 + 1, LLMCalls: 1}
	_, err = hot.WriteTraces(ctx, storetest.Traces(late))
	require.NoError(t, err)
	require.NoError(t, hot.WriteLogs(ctx, storetest.Alert(late, "loop")))
	require.NoError(t, hot.WriteLogs(ctx, storetest.Alert(late, "loop")))
	require.NoError(t, hot.WriteLogs(ctx, storetest.Alert(late, "cost spike")))
	assert.Equal(t, 2, alerts("al-late"), "two distinct records, the first one retried")
	var records int
	require.NoError(t, hot.db.QueryRow(`SELECT COUNT(*) FROM logs`).Scan(&records))
	assert.Equal(t, 3, records)
}

// TestRunIndexRanksAndFilters: the hot and the warm file's ranked listing (RankedRuns) and their
// cost and error filters give, for every order, direction, filter and limit, exactly the rows of
// the aggregation over span rows filtered by RunFilter.Keep, sorted by store.RunOrder.Less and
// cut at the limit (the sessions page's result before the index ranked them); and a ranked
// listing of a time range walks only that range of the start index.
func TestRunIndexRanksAndFilters(t *testing.T) {
	ctx := context.Background()
	_, hot, warm := openHotWarm(t)
	var err error
	runs := indexRuns()
	td := storetest.Traces(runs...)
	_, err = hot.WriteTraces(ctx, td)
	require.NoError(t, err)
	require.NoError(t, warm.WriteTraces(ctx, td))

	all, err := listRuns(ctx, hot.db, store.RunFilter{}, "spans", "SUM(cost_usd), SUM(unpriced)", "hot")
	require.NoError(t, err)
	var costs []float64
	errs := 0
	for _, r := range all {
		costs = append(costs, r.CostUSD)
		if r.Errors > 0 {
			errs++
		}
	}
	require.Greater(t, errs, 0)
	require.Less(t, errs, len(all))
	mid := costs[len(costs)/2]
	require.Greater(t, mid, 0.0, "fixture runs are priced")

	assert.True(t, hot.FiltersRunIndex())
	assert.True(t, warm.FiltersRunIndex())
	base := filters(runs)
	var fs []store.RunFilter
	for _, f := range base {
		fs = append(fs, f)
		c := f
		c.MinCostUSD = mid
		e := f
		e.ErrorsOnly = true
		ce := c
		ce.ErrorsOnly = true
		fs = append(fs, c, e, ce)
	}
	orders := []store.RunOrder{{}}
	for _, k := range store.RunOrders {
		orders = append(orders, store.RunOrder{Key: k}, store.RunOrder{Key: k, Asc: true})
	}
	require.True(t, hot.ranks, "a new hot file has the rank indexes")
	require.True(t, warm.ranks, "a new warm file has the rank indexes")
	saved := rangeSortMax
	t.Cleanup(func() { rangeSortMax = saved })
	// Each listing as SQLite plans it without the rank indexes (a read-only file of an older
	// build), through runs_start and the key's index for small ranges (the default), and
	// through the key's index for every range (rangeSortMax 0).
	type tierLister struct {
		name string
		list store.RankedRunLister
		runs func(store.RunFilter) ([]store.RunSummary, error)
	}
	var tiers []tierLister
	for _, ranks := range []bool{false, true} {
		for _, max := range []int{saved, 0} {
			if !ranks && max == 0 {
				continue
			}
			set := func(r bool, m int) { hot.ranks, warm.ranks, rangeSortMax = r, r, m }
			name := fmt.Sprintf(" (rank indexes %v, range sort below %d)", ranks, max)
			tiers = append(tiers,
				tierLister{"hot" + name, rankedFunc(func(f store.RunFilter, o store.RunOrder) ([]store.RunSummary, error) {
					set(ranks, max)
					return hot.RankedRuns(ctx, f, o)
				}), func(f store.RunFilter) ([]store.RunSummary, error) { set(ranks, max); return hot.Runs(ctx, f) }},
				tierLister{"warm" + name, rankedFunc(func(f store.RunFilter, o store.RunOrder) ([]store.RunSummary, error) {
					set(ranks, max)
					return warm.RankedRuns(ctx, f, o)
				}), func(f store.RunFilter) ([]store.RunSummary, error) { set(ranks, max); return warm.Runs(ctx, f) }})
		}
	}
	for _, tier := range tiers {
		tierName := strings.Fields(tier.name)[0]
		for _, f := range fs {
			for _, o := range orders {
				for _, limit := range []int{f.Limit, 1, 3} {
					ff := f
					ff.Limit = limit
					var want []store.RunSummary
					for _, r := range all {
						if ff.Keep(r) {
							r.Tier = tierName
							want = append(want, r)
						}
					}
					o.Sort(want)
					if limit > 0 && len(want) > limit {
						want = want[:limit]
					}
					got, err := tier.list.RankedRuns(ctx, ff, o)
					require.NoError(t, err)
					assert.Equal(t, want, got, "%s tier, filter %+v, order %+v", tier.name, ff, o)
					if o == (store.RunOrder{}) {
						plain, err := tier.runs(ff)
						require.NoError(t, err)
						assert.Equal(t, want, plain, "%s tier Runs, filter %+v", tier.name, ff)
					}
				}
			}
		}
	}
	hot.ranks, warm.ranks, rangeSortMax = true, true, saved
	_, err = hot.RankedRuns(ctx, store.RunFilter{Limit: 1}, store.RunOrder{Key: "name"})
	assert.ErrorIs(t, err, errors.ErrUnsupported)

	// A ranked listing of a small time range walks that range on the start index (not the whole
	// table) and sorts what passes the filters.
	q, args := rankedRunsQuery(store.RunFilter{Limit: 20, Since: time.Unix(0, runs[3].Start), MinCostUSD: mid}, store.RunOrder{Key: store.OrderCost}, "runs_start")
	plan := queryPlan(t, hot.db, q, args...)
	assert.Contains(t, plan, "USING INDEX runs_start", "the time range is walked on the start index")
	assert.Contains(t, plan, "TEMP B-TREE FOR ORDER BY", "ordered by cost after the walk")

	// In start order, a cost filter that keeps few runs reads them on runs_cost (then sorts
	// them), one that keeps many walks runs_start; the error filter walks the failing runs in
	// start order on runs_failed, however many there are, and sorts nothing.
	for _, c := range []struct {
		f         store.RunFilter
		few, many string
	}{{store.RunFilter{Limit: 20, MinCostUSD: 1e-12}, "runs_cost", "runs_start"}, {store.RunFilter{Limit: 20, ErrorsOnly: true}, "runs_failed", "runs_failed"},
		{store.RunFilter{Limit: 20, ErrorsOnly: true, MinCostUSD: 1e-12}, "runs_cost", "runs_failed"}} {
		via, err := pickIndex(ctx, hot.db, c.f, store.RunOrder{}, true)
		require.NoError(t, err)
		assert.Equal(t, c.few, via, "%+v", c.f)
		rangeSortMax = 1
		via, err = pickIndex(ctx, hot.db, c.f, store.RunOrder{}, true)
		require.NoError(t, err)
		assert.Equal(t, c.many, via, "%+v with more than rangeSortMax matches", c.f)
		rangeSortMax = saved
	}
	for _, f := range []store.RunFilter{{Limit: 20, ErrorsOnly: true}, {Limit: 20, ErrorsOnly: true, Since: time.Unix(0, runs[3].Start)}} {
		q, args := rankedRunsQuery(f, store.RunOrder{}, "runs_failed")
		plan := queryPlan(t, hot.db, q, args...)
		assert.Contains(t, plan, "USING INDEX runs_failed", "%+v", f)
		assert.NotContains(t, plan, "TEMP B-TREE", "%+v: in the index's order", f)
	}

	// Through a key's index, the descending listing reads the index in order (no sort), the
	// ascending one sorts only runs of equal key.
	for _, k := range store.RunOrders {
		if rankIndex[k] == "" {
			continue
		}
		for _, f := range []store.RunFilter{{Limit: 20}, {Limit: 20, Since: time.Unix(0, runs[3].Start), ErrorsOnly: true, MinCostUSD: mid}} {
			var terms []string
			if k == store.OrderErrors {
				terms = []string{"errors > 0"} // a partial index (byErrors)
			}
			q, args := rankedRunsQuery(f, store.RunOrder{Key: k}, rankIndex[k], terms...)
			plan := queryPlan(t, hot.db, q, args...)
			assert.Contains(t, plan, "USING INDEX "+rankIndex[k], "sort by %s", k)
			assert.NotContains(t, plan, "TEMP B-TREE", "sort by %s, descending", k)
			q, args = rankedRunsQuery(f, store.RunOrder{Key: k, Asc: true}, rankIndex[k], terms...)
			plan = queryPlan(t, hot.db, q, args...)
			assert.Contains(t, plan, "USING INDEX "+rankIndex[k], "sort by %s", k)
			assert.Contains(t, plan, "TEMP B-TREE FOR LAST 2 TERMS OF ORDER BY", "sort by %s, ascending: ties of the key only", k)
		}
	}
}

// rankedFunc is a store.RankedRunLister of a function.
type rankedFunc func(store.RunFilter, store.RunOrder) ([]store.RunSummary, error)

func (f rankedFunc) RankedRuns(_ context.Context, rf store.RunFilter, o store.RunOrder) ([]store.RunSummary, error) {
	return f(rf, o)
}

// openHotWarm opens a new hot and a new warm file in a test directory, closed when the test
// ends, and returns the directory too.
func openHotWarm(t *testing.T) (dir string, hot *DB, warm *WarmDB) {
	t.Helper()
	dir = t.TempDir()
	hot, err := Open(filepath.Join(dir, "hot.db"), Options{})
	require.NoError(t, err)
	t.Cleanup(func() { hot.Close() })
	warm, err = OpenWarm(filepath.Join(dir, "warm.db"), Options{})
	require.NoError(t, err)
	t.Cleanup(func() { warm.Close() })
	return dir, hot, warm
}

// TestRankIndexesAddedOnOpen: a file without the rank indexes (written by an earlier build) is
// ranked by sorting when opened read-only, and gains them when opened for writing.
func TestRankIndexesAddedOnOpen(t *testing.T) {
	ctx := context.Background()
	dir, hot, _ := openHotWarm(t)
	_, err := hot.WriteTraces(ctx, storetest.Traces(indexRuns()...))
	require.NoError(t, err)
	want, err := hot.RankedRuns(ctx, store.RunFilter{Limit: 3}, store.RunOrder{Key: store.OrderCost})
	require.NoError(t, err)
	require.Len(t, want, 3)
	_, err = hot.db.ExecContext(ctx, `DROP INDEX runs_cost; DROP INDEX runs_tokens`)
	require.NoError(t, err)
	require.NoError(t, hot.Close())

	ro, err := Open(filepath.Join(dir, "hot.db"), Options{ReadOnly: true})
	require.NoError(t, err)
	assert.False(t, ro.ranks)
	got, err := ro.RankedRuns(ctx, store.RunFilter{Limit: 3}, store.RunOrder{Key: store.OrderCost})
	require.NoError(t, err)
	assert.Equal(t, want, got)
	require.NoError(t, ro.Close())

	rw, err := Open(filepath.Join(dir, "hot.db"), Options{})
	require.NoError(t, err)
	defer rw.Close()
	assert.True(t, rw.ranks, "opened for writing, the file gains the indexes")
	got, err = rw.RankedRuns(ctx, store.RunFilter{Limit: 3}, store.RunOrder{Key: store.OrderCost})
	require.NoError(t, err)
	assert.Equal(t, want, got)
}
