// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configoptional"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/coldstore"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/store/storetest"
)

// TestShowFallsBackAsDataAges writes one run to the three embedded tiers of a data directory at
// day 0 (ingestion clock injected), expires the hot tier as its janitor would after 7 days and
// the warm tier after 90, and checks what `runagain sessions` and `runagain show` tell each time.
func TestShowFallsBackAsDataAges(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	day0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return day0 }
	run := storetest.Run{Seed: "cli", Session: "conv-7", Service: "svc", Agent: "weather", Model: "gpt-4.1",
		Start: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano(), LLMCalls: 2, ToolFail: true}
	td, alert := storetest.Traces(run), storetest.Alert(run, "loop detected")
	hot, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{Now: now})
	require.NoError(t, err)
	defer hot.Close()
	_, err = hot.WriteTraces(ctx, td)
	require.NoError(t, err)
	require.NoError(t, hot.WriteLogs(ctx, alert))
	warm, err := sqlitestore.OpenWarm(filepath.Join(dir, "warm.db"), sqlitestore.Options{Now: now})
	require.NoError(t, err)
	defer warm.Close()
	require.NoError(t, warm.WriteTraces(ctx, td))
	require.NoError(t, warm.WriteLogs(ctx, alert))
	cold, err := coldstore.Open(ctx, filepath.Join(dir, "cold"), coldstore.Options{Now: now})
	require.NoError(t, err)
	defer cold.Close()
	_, err = cold.Write(ctx, store.Partials(td, alert, nil, 0, nil))
	require.NoError(t, err)

	id := storetest.TraceID("cli").String()
	show := func() (string, *ShowRun) {
		r, err := openTiers(ctx, dir)
		require.NoError(t, err)
		defer r.Close()
		got, err := r.Run(ctx, id)
		require.NoError(t, err)
		v, err := showOf(got)
		require.NoError(t, err)
		var b bytes.Buffer
		printShow(&b, v)
		rows, err := r.Runs(ctx, store.RunFilter{})
		require.NoError(t, err)
		require.Len(t, rows, 1)
		assert.Equal(t, got.Tier, rows[0].Tier)
		assert.Equal(t, "conv-7", rows[0].SessionID)
		assert.EqualValues(t, run.Spans(), rows[0].Spans)
		return b.String(), v
	}

	out, v := show()
	assert.Equal(t, "hot", v.Tier)
	assert.Contains(t, out, storetest.Payload, "the hot tier shows the payloads")

	_, err = hot.Expire(ctx, day0.Add(7*24*time.Hour))
	require.NoError(t, err)
	out, v = show()
	assert.Equal(t, "warm", v.Tier)
	assert.Len(t, v.Spans, run.Spans())
	assert.Contains(t, out, "tier warm")
	assert.Contains(t, out, "execute_tool get_weather")
	assert.Contains(t, out, "model gpt-4.1  tokens in 100 out 20")
	assert.Contains(t, out, "loop detected", "the alert is a key event")
	assert.NotContains(t, out, "PAYLOAD-SECRET", "no payloads in the warm tier")
	t.Logf("warm:\n%s", out)

	_, err = warm.Expire(ctx, day0.Add(90*24*time.Hour))
	require.NoError(t, err)
	out, v = show()
	assert.Equal(t, "cold", v.Tier)
	assert.Empty(t, v.Spans)
	require.Len(t, v.Logs, 1)
	assert.Equal(t, store.SessionSummaryEventName, v.Logs[0].EventName)
	assert.Contains(t, out, "Session conv-7: 1 runs, 4 spans, 1 errors, 1 alerts, tokens in 200 out 40")
	t.Logf("cold:\n%s", out)
}

func TestOpenTiersNoStore(t *testing.T) {
	_, err := openTiers(context.Background(), t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no tier found")
}

// TestFlagClickHouseCredentialsFromEnv: without --config, the ClickHouse tiers named by
// --clickhouse are opened with the user and password of RUNAGAIN_CLICKHOUSE_USERNAME and
// RUNAGAIN_CLICKHOUSE_PASSWORD (the readers did so before they shared the tiers' walk with
// runagain delete, which did not), and --cold-url names the cold tier in place of ClickHouse's.
func TestFlagClickHouseCredentialsFromEnv(t *testing.T) {
	old, oldCold := clickhouseFlag, coldURLFlag
	t.Cleanup(func() { clickhouseFlag, coldURLFlag = old, oldCold })
	clickhouseFlag, coldURLFlag = "tcp://127.0.0.1:9000", ""
	t.Setenv("RUNAGAIN_CLICKHOUSE_USERNAME", "reader")
	t.Setenv("RUNAGAIN_CLICKHOUSE_PASSWORD", "s3cret")
	cfg := dirStorageConfig(t.TempDir())
	for tier, ch := range map[string]configoptional.Optional[runagainstorageextension.ClickHouseConfig]{
		"hot": cfg.Hot.Get().ClickHouse, "warm": cfg.Warm.Get().ClickHouse, "cold": cfg.Cold.Get().ClickHouse,
	} {
		require.True(t, ch.HasValue(), tier)
		assert.Equal(t, "tcp://127.0.0.1:9000", ch.Get().Endpoint, tier)
		assert.Equal(t, "reader", ch.Get().Username, tier)
		assert.Equal(t, "s3cret", string(ch.Get().Password), tier)
	}
	assert.False(t, cfg.Hot.Get().SQLite.HasValue())

	coldURLFlag = "s3://bucket/cold"
	cfg = dirStorageConfig(t.TempDir())
	assert.False(t, cfg.Cold.Get().ClickHouse.HasValue())
	assert.Equal(t, "s3://bucket/cold", cfg.Cold.Get().Parquet.Get().URL)
}

// TestColdURLMissingIsAnError: a --cold-url directory that does not exist is an error naming the
// flag, for the readers and for delete (a typo must not read as an empty cold tier), while a
// <data-dir>/cold the collector has not written yet is skipped.
func TestColdURLMissingIsAnError(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	oldDir, oldCold := dataDirFlag, coldURLFlag
	t.Cleanup(func() { dataDirFlag, coldURLFlag = oldDir, oldCold })
	dataDirFlag, coldURLFlag = dir, ""
	r, err := openReader()
	require.NoError(t, err, "no cold/ under the data dir: skipped")
	require.NoError(t, r.Close())

	for _, u := range []string{filepath.Join(dir, "colld"), "file://" + filepath.ToSlash(filepath.Join(dir, "colld"))} {
		coldURLFlag = u
		_, err = openReader()
		require.Error(t, err, u)
		assert.Contains(t, err.Error(), "--cold-url "+u)
		_, _, err = openEraser(ctx)
		require.Error(t, err, u)
		assert.Contains(t, err.Error(), "--cold-url")
	}
}

// TestColdURLFromEnvIgnoredWithConfig: with --config, a RUNAGAIN_COLD_URL from the environment
// (the flag's default, not given) is not applied (loadStorageConfig overrides only flags given
// on the command line), so a missing directory it names is no error either; a --cold-url given
// on the command line still is.
func TestColdURLFromEnvIgnoredWithConfig(t *testing.T) {
	dir := t.TempDir()
	db, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	t.Setenv("RUNAGAIN_DATA_DIR", dir)
	f := rootCmd.PersistentFlags().Lookup("cold-url")
	oldConfig, oldCold, oldChanged := configFlag, coldURLFlag, f.Changed
	reset := func() { storageOnce, storageCfg, storageErr = sync.Once{}, nil, nil }
	t.Cleanup(func() { configFlag, coldURLFlag, f.Changed = oldConfig, oldCold, oldChanged; reset() })
	missing := filepath.Join(dir, "colld")

	reset()
	configFlag, coldURLFlag, f.Changed = shipped("default.yaml"), missing, false
	r, err := openReader()
	require.NoError(t, err, "RUNAGAIN_COLD_URL is not applied with --config")
	require.NoError(t, r.Close())

	reset()
	f.Changed = true
	_, err = openReader()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--cold-url "+missing)
}
