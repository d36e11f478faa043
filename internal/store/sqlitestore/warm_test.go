package sqlitestore

import (
	"context"
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

	var payloadRows int
	require.NoError(t, w.SQL().QueryRow(`SELECT COUNT(*) FROM span_summaries WHERE attributes LIKE '%PAYLOAD-SECRET%'`).Scan(&payloadRows))
	assert.Zero(t, payloadRows)

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
