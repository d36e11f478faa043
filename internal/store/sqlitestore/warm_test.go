package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
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

	attrs := storedAttrs(t, w.SQL())
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
func storedAttrs(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT attributes FROM span_summaries`)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var b []byte
		require.NoError(t, rows.Scan(&b))
		js, err := decodeAttrs(b)
		require.NoError(t, err)
		out = append(out, js)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestWarmAttributesStoredCompressed: the attributes of version 3 rows are a zstd frame (short
// objects stay text), smaller than their JSON, and a run read back carries exactly the
// attributes the summaries had.
func TestWarmAttributesStoredCompressed(t *testing.T) {
	ctx := context.Background()
	w, err := OpenWarm(filepath.Join(t.TempDir(), "warm.db"), Options{})
	require.NoError(t, err)
	defer w.Close()
	run := storetest.Run{Seed: "z", Session: "conv-z", Service: "svc", Agent: "a", Model: "gpt-4.1", Start: 1e18, LLMCalls: 3, ToolFail: true}
	td := storetest.Traces(run)
	require.NoError(t, w.WriteTraces(ctx, td))
	want, _ := store.Summarize(td, nil, nil)

	var blobs, texts, stored, plain int
	rows, err := w.SQL().Query(`SELECT typeof(attributes), length(attributes), attributes FROM span_summaries`)
	require.NoError(t, err)
	for rows.Next() {
		var typ string
		var n int
		var b []byte
		require.NoError(t, rows.Scan(&typ, &n, &b))
		js, err := decodeAttrs(b)
		require.NoError(t, err)
		stored += n
		plain += len(js)
		switch typ {
		case "blob":
			blobs++
			assert.True(t, bytes.HasPrefix(b, zstdMagic))
		case "text":
			texts++
			assert.Less(t, len(js), attrsMinCompress)
		}
	}
	require.NoError(t, rows.Err())
	rows.Close()
	assert.Positive(t, blobs)
	assert.Equal(t, len(want), blobs+texts)
	assert.Less(t, stored, plain, "compressed in total")

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
	_, err = decodeAttrs(append(append([]byte{}, zstdMagic...), 1, 2, 3))
	assert.Error(t, err, "a damaged frame is an error")
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
