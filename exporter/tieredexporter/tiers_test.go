// SPDX-License-Identifier: Apache-2.0

package tieredexporter

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/extension/runagainstorageextension/storagetest"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/coldstore"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/store/storetest"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type pair struct {
	traces exporter.Traces
	logs   exporter.Logs
}

// startTiered starts a runagain_storage extension with the embedded layout under dir (cold on
// the cold URL; now its clock, nil: time.Now) and a traces and a logs tiered exporter on the
// delivery settings raw.
func startTiered(t *testing.T, now func() time.Time, dir, cold string, raw map[string]any) (pair, *runagainstorageextension.Extension) {
	t.Helper()
	scfg := storageOn(dir)
	scfg.Cold = configoptional.Some(runagainstorageextension.ColdConfig{
		Parquet: configoptional.Some(runagainstorageextension.ParquetConfig{URL: cold})})
	host, st := storagetest.StartAt(t, scfg, now)
	return startWithHost(t, host, raw), st
}

func (p pair) stop(t *testing.T) {
	require.NoError(t, p.traces.Shutdown(context.Background()))
	require.NoError(t, p.logs.Shutdown(context.Background()))
}

// embedded is the delivery of config/default.yaml's tiers without queues: each write is done
// when ConsumeTraces returns.
func embedded() map[string]any {
	off := map[string]any{"enabled": false}
	return map[string]any{
		"hot":  map[string]any{"sending_queue": off},
		"warm": map[string]any{"sending_queue": off},
		"cold": map[string]any{"sending_queue": off,
			"retry_on_failure": map[string]any{"initial_interval": "100ms", "max_interval": "500ms", "max_elapsed_time": "2m"}},
	}
}

func openAll(t *testing.T, dir, cold string) store.Reader {
	t.Helper()
	var rs []store.Reader
	hot, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{ReadOnly: true})
	require.NoError(t, err)
	warm, err := sqlitestore.OpenWarm(filepath.Join(dir, "warm.db"), sqlitestore.Options{ReadOnly: true})
	require.NoError(t, err)
	cst, err := coldstore.Open(context.Background(), cold, coldstore.Options{ReadOnly: true})
	require.NoError(t, err)
	rs = append(rs, hot, warm, cst)
	r := store.NewTiered(rs...)
	t.Cleanup(func() { r.Close() })
	return r
}

// TestRetentionWithInjectedClock writes runs through the exporter (hot and warm on SQLite, cold
// Parquet) at day 0, then moves the clock: past 7 days the hot rows are gone and the warm
// summaries and cold session remain; past 90 days only the cold session remains. Retention
// counts from ingestion: the runs themselves happened years earlier.
func TestRetentionWithInjectedClock(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cold := filepath.Join(dir, "cold")
	c := &clock{now: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	p, st := startTiered(t, c.Now, dir, cold, embedded())
	defer p.stop(t)
	old := time.Date(2023, 5, 1, 0, 0, 0, 0, time.UTC).UnixNano() // an imported run from years ago
	runA := storetest.Run{Seed: "a", Session: "conv-1", Service: "svc", Agent: "weather", Model: "gpt-4.1", Start: old, LLMCalls: 2, ToolFail: true}
	runB := storetest.Run{Seed: "b", Service: "svc", Agent: "weather", Model: "gpt-4.1", Start: old + int64(time.Hour), LLMCalls: 1}
	require.NoError(t, p.traces.ConsumeTraces(ctx, storetest.Traces(runA, runB)))
	require.NoError(t, p.logs.ConsumeLogs(ctx, storetest.Alert(runA, "loop detected")))

	r := openAll(t, dir, cold)
	tierOf := func(seed string) string {
		run, err := r.Run(ctx, storetest.TraceID(seed).String())
		require.NoError(t, err)
		return run.Tier
	}
	n, err := st.RunJanitors(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "nothing is past retention at ingestion, however old the runs")
	assert.Equal(t, "hot", tierOf("a"))

	c.Add(7*24*time.Hour + time.Minute)
	n, err = st.RunJanitors(ctx)
	require.NoError(t, err)
	assert.EqualValues(t, runA.Spans()+runB.Spans()+1, n, "hot spans and the alert record")
	var hotRows int
	hot, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{ReadOnly: true})
	require.NoError(t, err)
	defer hot.Close()
	require.NoError(t, hot.SQL().QueryRow(`SELECT (SELECT COUNT(*) FROM spans) + (SELECT COUNT(*) FROM logs)`).Scan(&hotRows))
	assert.Zero(t, hotRows)
	assert.Equal(t, "warm", tierOf("a"))
	run, err := r.Run(ctx, storetest.TraceID("a").String())
	require.NoError(t, err)
	assert.Equal(t, runA.Spans(), run.Traces.SpanCount(), "every span's summary")
	assert.Equal(t, 1, run.Logs.LogRecordCount(), "the alert")
	rows, err := r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, rows, 2)
	for _, row := range rows {
		assert.Equal(t, "warm", row.Tier)
	}

	c.Add(83 * 24 * time.Hour)
	_, err = st.RunJanitors(ctx)
	require.NoError(t, err)
	assert.Equal(t, "cold", tierOf("a"))
	run, err = r.Run(ctx, storetest.TraceID("a").String())
	require.NoError(t, err)
	require.NotNil(t, run.Session)
	assert.Equal(t, "conv-1", run.Session.SessionID)
	assert.EqualValues(t, runA.Spans(), run.Session.Spans)
	assert.EqualValues(t, 1, run.Session.Alerts)
	assert.Equal(t, "cold", tierOf("b"), "a run without a session is its own cold session")

	c.Add(100 * 365 * 24 * time.Hour)
	_, err = st.RunJanitors(ctx)
	require.NoError(t, err)
	assert.Equal(t, "cold", tierOf("a"), "cold keeps sessions forever by default")
}
