// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

func TestWarmWriteReadExpire(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	path := filepath.Join(t.TempDir(), "warm.db")
	w, err := OpenWarm(path, Options{Now: clock})
	require.NoError(t, err)
	defer w.Close()
	run := storetest.Run{Seed: "w", Session: "conv-9", Service: "svc", Agent: "a", Model: "gpt-4.1",
		Start: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(), LLMCalls: 2, ToolFail: true}
	td := storetest.Traces(run)
	require.NoError(t, w.WriteTraces(ctx, td))
	require.NoError(t, w.WriteTraces(ctx, td), "a retried batch replaces its rows")
	require.NoError(t, w.WriteLogs(ctx, storetest.Alert(run, "loop detected")))

	attrs := storedAttrs(t, w)
	require.Len(t, attrs, run.Spans())
	for _, a := range attrs {
		assert.NotContains(t, a, "PAYLOAD-SECRET")
		assert.NotContains(t, a, "_ref")
	}

	r, err := OpenWarm(path, Options{ReadOnly: true})
	require.NoError(t, err)
	defer r.Close()
	runs, err := r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, "conv-9", runs[0].SessionID)
	assert.EqualValues(t, run.Spans(), runs[0].Spans)
	assert.EqualValues(t, 200, runs[0].InputTokens)
	assert.EqualValues(t, 1, runs[0].Errors)
	assert.Equal(t, "warm", runs[0].Tier)

	got, err := r.Run(ctx, storetest.TraceID("w").String())
	require.NoError(t, err)
	assert.Equal(t, "warm", got.Tier)
	assert.Equal(t, run.Spans(), got.Traces.SpanCount())
	assert.Equal(t, 1, got.Logs.LogRecordCount(), "the alert comes back as a log record")

	// Retention counts from ingestion (2026), not from the run's own time (2020).
	n, err := w.Expire(ctx, now.Add(-time.Hour))
	require.NoError(t, err)
	assert.Zero(t, n)
	n, err = w.Expire(ctx, now.Add(time.Second))
	require.NoError(t, err)
	assert.EqualValues(t, run.Spans()+2, n, "spans, the exception and the alert")
	_, err = r.Run(ctx, storetest.TraceID("w").String())
	assert.ErrorIs(t, err, store.ErrNotFound)
}

func TestHotExpireByIngestion(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	db, err := Open(filepath.Join(t.TempDir(), "hot.db"), Options{Now: func() time.Time { return now }})
	require.NoError(t, err)
	defer db.Close()
	run := storetest.Run{Seed: "h", Service: "svc", Agent: "a", Model: "m", Start: 1, LLMCalls: 3}
	_, err = db.WriteTraces(ctx, storetest.Traces(run))
	require.NoError(t, err)
	require.NoError(t, db.WriteLogs(ctx, storetest.Alert(run, "x")))
	now = now.Add(time.Hour)
	_, err = db.WriteTraces(ctx, storetest.Traces(storetest.Run{Seed: "later", Service: "svc", Start: 1}))
	require.NoError(t, err)
	n, err := db.Expire(ctx, now.Add(-time.Minute))
	require.NoError(t, err)
	assert.EqualValues(t, run.Spans()+1, n)
	runs, err := db.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, storetest.TraceID("later").String(), runs[0].TraceID)
}

// storedAttrs returns every span summary's attributes column decoded.
func storedAttrs(t *testing.T, w *WarmDB) []string {
	t.Helper()
	rows, err := w.SQL().Query(`SELECT trace_id, span_id, parent_span_id, session_id, name, kind, start_time_unix_nano,
	  end_time_unix_nano, status_code, status_message, service_name, genai_kind, model, input_tokens, output_tokens,
	  cost_usd, unpriced, tool_name, agent_name, error_type, attributes FROM span_summaries`)
	require.NoError(t, err)
	sums, err := store.ScanSpanSummaries(rows, decodeAttrs)
	require.NoError(t, err)
	var out []string
	for _, s := range sums {
		out = append(out, s.Attributes)
	}
	return out
}

// TestWarmAttributesStoredCompact: version 4 rows hold the compact form of their attributes,
// smaller than the JSON, using the row's columns for the values they repeat, and a run read back
// carries exactly the attributes the summaries had.
func TestWarmAttributesStoredCompact(t *testing.T) {
	ctx := context.Background()
	w, err := OpenWarm(filepath.Join(t.TempDir(), "warm.db"), Options{})
	require.NoError(t, err)
	defer w.Close()
	run := storetest.Run{Seed: "z", Session: "conv-z", Service: "svc", Agent: "a", Model: "gpt-4.1", Start: 1e18, LLMCalls: 3, ToolFail: true}
	td := storetest.Traces(run)
	require.NoError(t, w.WriteTraces(ctx, td))
	want, _ := store.Summarize(td, nil, nil)

	var stored, plain, compact int
	rows, err := w.SQL().Query(`SELECT typeof(attributes), length(attributes), attributes FROM span_summaries`)
	require.NoError(t, err)
	for rows.Next() {
		var typ string
		var n int
		var b []byte
		require.NoError(t, rows.Scan(&typ, &n, &b))
		stored += n
		if typ == "blob" && b[0] == attrsCompact {
			compact++
		}
	}
	require.NoError(t, rows.Err())
	rows.Close()
	for _, s := range want {
		plain += len(s.Attributes)
	}
	assert.Equal(t, len(want), compact, "every row in the compact form")
	assert.Less(t, stored, plain/2, "less than half the JSON's bytes")
	t.Logf("attributes: %d bytes stored for %d bytes of JSON", stored, plain)

	got, err := w.Run(ctx, storetest.TraceID("z").String())
	require.NoError(t, err)
	back, _ := store.Summarize(got.Traces, nil, nil)
	byID := map[string]string{}
	for _, s := range back {
		byID[s.SpanID] = s.Attributes
	}
	for _, s := range want {
		assert.JSONEq(t, s.Attributes, byID[s.SpanID], s.Name)
	}
	assert.ElementsMatch(t, func() []string {
		var out []string
		for _, s := range want {
			out = append(out, s.Attributes)
		}
		return out
	}(), storedAttrs(t, w), "byte for byte")
}

// TestCompactAttrsRoundTrip: the compact form rebuilds json.Marshal's text byte for byte, keys
// outside the table and values with escapes included, replaces values equal to the row's columns
// by a tag, keeps a text it would not rebuild as it is, and refuses damaged input.
func TestCompactAttrsRoundTrip(t *testing.T) {
	row := store.SpanSummary{SessionID: "conv-<1>", Model: "gpt-4.1", ToolName: "get_weather", AgentName: "a",
		ErrorType: "Timeout", InputTokens: 120, OutputTokens: 0}
	for _, attrs := range []map[string]any{
		{},
		{"gen_ai.conversation.id": "conv-<1>", "gen_ai.request.model": "gpt-4.1", "gen_ai.usage.input_tokens": 120,
			"gen_ai.usage.output_tokens": 0, "gen_ai.tool.name": "get_weather", "error.type": "Timeout", "gen_ai.agent.name": "a"},
		{"x.custom": "é \"quoted\" & <b>", "gen_ai.response.finish_reasons": []any{"stop", "length"}, "n": 1.5,
			"flag": true, "nested": map[string]any{"k": "v"}, "": "empty key", "session.id": "conv-<1>"},
		{"gen_ai.usage.input_tokens": 121, "gen_ai.request.model": "gpt-4o"},
	} {
		js, err := json.Marshal(attrs)
		require.NoError(t, err)
		s := row
		s.Attributes = string(js)
		stored, _ := encodeAttrs(nil, &s)
		if len(attrs) == 0 {
			assert.Equal(t, "{}", stored, "an empty object stays text")
			continue
		}
		b, ok := stored.([]byte)
		require.True(t, ok, "compact for %s", js)
		assert.Less(t, len(b), len(js), "%s", js)
		got, err := decodeAttrs(&s, b)
		require.NoError(t, err)
		assert.Equal(t, string(js), got)
	}
	s := row
	s.SessionID = "conv-1"
	s.Attributes = `{"gen_ai.conversation.id":"conv-1","gen_ai.usage.input_tokens":120}`
	stored, _ := encodeAttrs(nil, &s)
	b := stored.([]byte)
	assert.Equal(t, []byte{attrsCompact, attrKeyIndex[`"gen_ai.conversation.id"`], attrSameSession,
		attrKeyIndex[`"gen_ai.usage.input_tokens"`], attrSameInput}, b, "values equal to the row's columns are tags")

	for _, text := range []string{`{"b":1, "a":2}`, `{ "a":2}`, `{"a":[1, 2]}`, `not json`, `[1,2]`, `{"a":1}}`, `{"a":"x"`} {
		s.Attributes = text
		stored, _ := encodeAttrs(nil, &s)
		assert.Equal(t, text, stored, "kept as it is: %s", text)
	}
	s.Attributes = `{"b":1,"a":{"c":[true,null,"]"]},"d":-1.5e3}` // members as written, any order
	stored, _ = encodeAttrs(nil, &s)
	back, err := decodeAttrs(&s, stored.([]byte))
	require.NoError(t, err)
	assert.Equal(t, s.Attributes, back)
	for _, bad := range [][]byte{{attrsCompact, 200, 0}, {attrsCompact, 1}, {attrsCompact, 1, 0, 9}, {attrsCompact, 1, 99}, {0x7f}} {
		_, err := decodeAttrs(&s, bad)
		assert.Error(t, err, "%v", bad)
	}
}

// warmV2DDL is the warm schema of version 2: attributes as TEXT, indexes on start time and
// session id.
const warmV2DDL = `
CREATE TABLE span_summaries (
  trace_id TEXT NOT NULL, span_id TEXT NOT NULL, parent_span_id TEXT NOT NULL, session_id TEXT NOT NULL,
  name TEXT NOT NULL, kind INTEGER NOT NULL, start_time_unix_nano INTEGER NOT NULL, end_time_unix_nano INTEGER NOT NULL,
  status_code INTEGER NOT NULL, status_message TEXT NOT NULL, service_name TEXT NOT NULL, genai_kind TEXT NOT NULL,
  model TEXT NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL,
  unpriced INTEGER NOT NULL, tool_name TEXT NOT NULL, agent_name TEXT NOT NULL, error_type TEXT NOT NULL,
  attributes TEXT NOT NULL, ingested_unix_nano INTEGER NOT NULL, UNIQUE (trace_id, span_id)
);
CREATE INDEX span_summaries_start ON span_summaries (start_time_unix_nano);
CREATE INDEX span_summaries_ingested ON span_summaries (ingested_unix_nano);
CREATE INDEX span_summaries_session ON span_summaries (session_id);
CREATE TABLE key_events (
  event_id TEXT NOT NULL PRIMARY KEY, trace_id TEXT NOT NULL, span_id TEXT NOT NULL, session_id TEXT NOT NULL,
  time_unix_nano INTEGER NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, severity_number INTEGER NOT NULL,
  service_name TEXT NOT NULL, message TEXT NOT NULL, attributes TEXT NOT NULL, ingested_unix_nano INTEGER NOT NULL
);
CREATE INDEX key_events_trace ON key_events (trace_id);
CREATE INDEX key_events_ingested ON key_events (ingested_unix_nano);
`

// TestWarmVersion2FileReadAndMigrated: a warm file written by a version 2 build (JSON text
// attributes, the start and session indexes) is read as it is by a reader, and opened for
// writing it loses the two indexes, keeps its rows readable and stores new rows compressed.
func TestWarmVersion2FileReadAndMigrated(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warm.db")
	old := storetest.Run{Seed: "v2", Session: "conv-old", Service: "svc", Agent: "a", Model: "gpt-4.1", Start: 1e18, LLMCalls: 2, ToolFail: true}
	spans, events := store.Summarize(storetest.Traces(old), nil, nil)
	raw, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = raw.Exec(warmV2DDL + warmIndex.ddl() + "PRAGMA user_version = 2;")
	require.NoError(t, err)
	for _, s := range spans {
		_, err = raw.Exec(`INSERT INTO span_summaries VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,1)`, s.TraceID, s.SpanID,
			s.ParentSpanID, s.SessionID, s.Name, s.Kind, s.Start, s.End, s.StatusCode, s.StatusMessage, s.Service, s.GenAIKind,
			s.Model, s.InputTokens, s.OutputTokens, s.CostUSD, s.Unpriced, s.ToolName, s.AgentName, s.ErrorType, s.Attributes)
		require.NoError(t, err)
	}
	for _, e := range events {
		_, err = raw.Exec(`INSERT INTO key_events VALUES (?,?,?,?,?,?,?,?,?,?,?,1)`, e.EventID, e.TraceID, e.SpanID, e.SessionID,
			e.Time, e.Kind, e.Name, e.Severity, e.Service, e.Message, e.Attributes)
		require.NoError(t, err)
	}
	_, err = raw.Exec(warmIndex.fill("1"))
	require.NoError(t, err)
	require.NoError(t, raw.Close())
	oldID := storetest.TraceID("v2").String()
	readRun := func(w *WarmDB, id string) []store.SpanSummary {
		t.Helper()
		run, err := w.Run(ctx, id)
		require.NoError(t, err)
		got, _ := store.Summarize(run.Traces, nil, nil)
		return got
	}
	attrsOf := func(ss []store.SpanSummary) map[string]string {
		m := map[string]string{}
		for _, s := range ss {
			m[s.SpanID] = s.Attributes
		}
		return m
	}
	want := attrsOf(spans)

	r, err := OpenWarm(path, Options{ReadOnly: true})
	require.NoError(t, err)
	assert.Equal(t, 2, r.version)
	assert.Equal(t, want, attrsOf(readRun(r, oldID)), "read-only: version 2 rows read as they are")
	require.NoError(t, r.Close())

	w, err := OpenWarm(path, Options{})
	require.NoError(t, err)
	defer w.Close()
	var v int
	require.NoError(t, w.SQL().QueryRow("PRAGMA user_version").Scan(&v))
	assert.Equal(t, WarmSchemaVersion, v)
	var idx []string
	irows, err := w.SQL().Query(`SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'span_summaries' AND sql IS NOT NULL ORDER BY name`)
	require.NoError(t, err)
	for irows.Next() {
		var n string
		require.NoError(t, irows.Scan(&n))
		idx = append(idx, n)
	}
	irows.Close()
	assert.Equal(t, []string{"span_summaries_ingested"}, idx, "the start and session indexes are dropped")
	assert.Equal(t, want, attrsOf(readRun(w, oldID)), "migrated: old rows unchanged and readable")

	fresh := storetest.Run{Seed: "v3", Session: "conv-new", Service: "svc", Agent: "a", Model: "gpt-4.1", Start: 2e18, LLMCalls: 2}
	require.NoError(t, w.WriteTraces(ctx, storetest.Traces(fresh)))
	var blobs int
	require.NoError(t, w.SQL().QueryRow(`SELECT COUNT(*) FROM span_summaries WHERE typeof(attributes) = 'blob' AND trace_id = ?`,
		storetest.TraceID("v3").String()).Scan(&blobs))
	assert.Positive(t, blobs, "new rows are compressed")
	runs, err := w.Runs(ctx, store.RunFilter{SessionID: "conv-old"})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.EqualValues(t, old.Spans(), runs[0].Spans)
	removed, err := w.Erase(ctx, store.Erasure{Session: "conv-old", TraceIDs: []string{oldID}})
	require.NoError(t, err)
	assert.EqualValues(t, old.Spans(), removed.Counts["span_summaries"], "an erasure by session works without the session index")
}

// TestWarmVersion3FileMigrated: a version 3 file (no orphans table) holding a
// run whose children arrived before their root is migrated when opened for writing: its orphans
// table is built from its rows, so the root arriving afterwards completes the run, and the
// index lists what aggregating the rows lists.
func TestWarmVersion3FileMigrated(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warm.db")
	runs := indexRuns()
	children, root := splitChildrenFirst(runs[6])
	w, err := OpenWarm(path, Options{})
	require.NoError(t, err)
	require.NoError(t, w.WriteTraces(ctx, storetest.Traces(runs[:6]...)))
	require.NoError(t, w.WriteTraces(ctx, children))
	require.NoError(t, w.Close())
	raw, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = raw.Exec(`DROP TABLE summary_orphans; PRAGMA user_version = 3;`)
	require.NoError(t, err)
	require.NoError(t, raw.Close())

	r, err := OpenWarm(path, Options{ReadOnly: true})
	require.NoError(t, err)
	rows, err := r.Runs(ctx, store.RunFilter{SessionID: runs[6].Session})
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	assert.True(t, rows[0].Incomplete, "read-only: the version 3 index as it is")
	require.NoError(t, r.Close())

	w, err = OpenWarm(path, Options{})
	require.NoError(t, err)
	defer w.Close()
	var orphans int
	require.NoError(t, w.SQL().QueryRow(`SELECT COALESCE(SUM(spans), 0) FROM summary_orphans`).Scan(&orphans))
	assert.Positive(t, orphans, "the migration built the orphans table from the rows")
	require.NoError(t, w.WriteTraces(ctx, root))
	for _, f := range filters(runs) {
		want, err := listRuns(ctx, w.db, f, "span_summaries", "SUM(cost_usd), SUM(unpriced)", "warm")
		require.NoError(t, err)
		got, err := w.Runs(ctx, f)
		require.NoError(t, err)
		assert.Equal(t, want, got, "filter %+v", f)
	}
	rows, err = w.Runs(ctx, store.RunFilter{Limit: 1, Since: time.Unix(0, runs[6].Start), Until: time.Unix(0, runs[6].Start+1)})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.False(t, rows[0].Incomplete, "the root completed the run")
}

// TestWarmMultiRowInsertsMatchRowByRow: the same batches written with the multi-row INSERTs
// (new rows, rows already stored, a span twice in one batch, more rows than one statement takes)
// and row by row leave the same summaries and the same run index; a batch with a stored row takes
// the row-by-row path and replaces it.
func TestWarmMultiRowInsertsMatchRowByRow(t *testing.T) {
	ctx := context.Background()
	now := func() time.Time { return time.Unix(0, indexT0) }
	open := func(rowByRow bool) *WarmDB {
		w, err := OpenWarm(filepath.Join(t.TempDir(), "warm.db"), Options{Now: now})
		require.NoError(t, err)
		t.Cleanup(func() { w.Close() })
		w.rowByRow = rowByRow
		return w
	}
	multi, single := open(false), open(true)
	var runs []storetest.Run
	for i := 0; i < 9; i++ { // 9 runs of 12 LLM calls: more than 64 rows, a remainder of each size
		runs = append(runs, storetest.Run{Seed: fmt.Sprintf("mr-%d", i), Session: "conv-mr", Service: "svc", Agent: "a",
			Model: "gpt-4.1", Start: indexT0 + int64(i), LLMCalls: 12, ToolFail: i%3 == 0})
	}
	all, _ := store.Summarize(storetest.Traces(runs[:8]...), nil, nil)
	var first []store.SpanSummary // without the root of run 0: its children are orphans
	for _, s := range all {
		if s.ParentSpanID != "" || s.TraceID != storetest.TraceID("mr-0").String() {
			first = append(first, s)
		}
	}
	require.Greater(t, len(first), warmInsertRows)
	retry := append([]store.SpanSummary{}, first[3:5]...) // stored rows, one with other content
	retry[0].InputTokens, retry[0].Attributes = 7, `{"gen_ai.usage.input_tokens":7}`
	last, _ := store.Summarize(storetest.Traces(runs[8]), nil, nil)
	twice := append(append([]store.SpanSummary{}, last...), last[1]) // a span twice in one batch
	twice[len(twice)-1].OutputTokens = 99
	for _, w := range []*WarmDB{multi, single} {
		require.NoError(t, w.write(ctx, first, nil))
		require.NoError(t, w.write(ctx, retry, nil))
		require.NoError(t, w.write(ctx, twice, nil))
	}
	assert.Zero(t, multi.rewrites.Load(), "a retried row and a span twice in a batch are settled in the multi-row write, not by writing the batch again")
	dump := func(w *WarmDB, q string) []string {
		rows, err := w.db.QueryContext(ctx, q)
		require.NoError(t, err)
		defer rows.Close()
		cols, err := rows.Columns()
		require.NoError(t, err)
		var out []string
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			out = append(out, fmt.Sprint(vals...))
		}
		require.NoError(t, rows.Err())
		return out
	}
	for _, q := range []string{`SELECT * FROM span_summaries ORDER BY trace_id, span_id`,
		`SELECT * FROM runs ORDER BY trace_id`, `SELECT * FROM summary_orphans ORDER BY trace_id, parent_span_id`} {
		want := dump(single, q)
		require.NotEmpty(t, want, q)
		require.Equal(t, want, dump(multi, q), q)
	}
	var tokens, out int64
	require.NoError(t, multi.db.QueryRow(`SELECT input_tokens FROM span_summaries WHERE span_id = ?`, first[3].SpanID).Scan(&tokens))
	assert.EqualValues(t, 7, tokens, "the retried row with other content replaced the stored one")
	require.NoError(t, multi.db.QueryRow(`SELECT output_tokens FROM span_summaries WHERE span_id = ?`, last[1].SpanID).Scan(&out))
	assert.EqualValues(t, 99, out, "the later copy of a span in one batch wins")
	want, err := listRuns(ctx, multi.db, store.RunFilter{}, "span_summaries", "SUM(cost_usd), SUM(unpriced)", "warm")
	require.NoError(t, err)
	got, err := multi.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// TestWarmPageSize: a new warm file has 16 KiB pages (in WAL mode), and a file of an earlier
// build with SQLite's default 4 KiB pages keeps them: it is written and read as it is.
func TestWarmPageSize(t *testing.T) {
	ctx := context.Background()
	pageSize := func(w *WarmDB) (size int, mode string) {
		require.NoError(t, w.db.QueryRow(`PRAGMA page_size`).Scan(&size))
		require.NoError(t, w.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
		return size, mode
	}
	run := storetest.Run{Seed: "ps", Session: "conv-ps", Service: "svc", Agent: "a", Model: "gpt-4.1", Start: indexT0, LLMCalls: 2}
	for _, c := range []struct {
		name string
		old  bool
		want int
	}{{"new", false, warmPageSize}, {"earlier build", true, 4096}} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "warm.db")
			if c.old { // what an earlier build created: the default page size, schema version 4
				require.NoError(t, createOldWarm(path))
			}
			w, err := OpenWarm(path, Options{})
			require.NoError(t, err)
			size, mode := pageSize(w)
			assert.Equal(t, c.want, size)
			assert.Equal(t, "wal", mode)
			require.NoError(t, w.WriteTraces(ctx, storetest.Traces(run)))
			require.NoError(t, w.Close())
			r, err := OpenWarm(path, Options{ReadOnly: true})
			require.NoError(t, err)
			defer r.Close()
			size, _ = pageSize(r)
			assert.Equal(t, c.want, size)
			got, err := r.Run(ctx, storetest.TraceID("ps").String())
			require.NoError(t, err)
			assert.Equal(t, run.Spans(), got.Traces.SpanCount())
		})
	}
}
