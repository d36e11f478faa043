// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/extension/runagainstorageextension/storagetest"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/store/coldstore"
	"github.com/runagain/runagain/internal/store/sqlitestore"
)

// TestAlertStoredOnceAfterRestart: the runaway session fed to one agent_guard, then to a fresh one
// (a collector restart: the guard's state is in memory) raises the same loop alert with the same
// record id (rule, run, spans), and the hot, warm and cold tiers each store it once.
func TestAlertStoredOnceAfterRestart(t *testing.T) {
	raw, err := os.ReadFile("testdata/runaway_session.json")
	require.NoError(t, err)
	var alerts []plog.Logs
	ids := map[string]int{}
	for restart := range 2 {
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(raw)
		require.NoError(t, err)
		h := newHarness(t, createDefaultConfig())
		h.clock.Advance(time.Duration(restart) * time.Hour) // re-imported an hour later
		_, ld := h.feed(td)
		require.Positive(t, ld.LogRecordCount(), "the runaway session raises an alert")
		alerts = append(alerts, ld)
		rls := ld.ResourceLogs()
		for i := 0; i < rls.Len(); i++ {
			for j := 0; j < rls.At(i).ScopeLogs().Len(); j++ {
				lrs := rls.At(i).ScopeLogs().At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					id, ok := lrs.At(k).Attributes().Get(runagainattr.RecordID)
					require.True(t, ok, "every alert has a record id")
					ids[id.Str()]++
				}
			}
		}
	}
	for id, n := range ids {
		assert.Equal(t, 2, n, "record id %s: the same alert from both guards", id)
	}
	db, err := sqlitestore.Open(filepath.Join(t.TempDir(), "hot.db"), sqlitestore.Options{})
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	for _, ld := range alerts {
		require.NoError(t, db.WriteLogs(context.Background(), ld))
	}
	var stored int
	require.NoError(t, db.SQL().QueryRow(`SELECT count(*) FROM logs WHERE event_name = ?`, AlertEventName).Scan(&stored))
	assert.Equal(t, len(ids), stored, "each alert stored once")

	// Emitted again, an alert may differ in what is not its identity (its observed time, its
	// message with the counts so far): the second copies do.
	resent := plog.NewLogs()
	alerts[1].CopyTo(resent)
	rls := resent.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		for j := 0; j < rls.At(i).ScopeLogs().Len(); j++ {
			lrs := rls.At(i).ScopeLogs().At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lrs.At(k).SetObservedTimestamp(lrs.At(k).ObservedTimestamp() + pcommon.Timestamp(time.Hour))
				lrs.At(k).Body().SetStr(lrs.At(k).Body().Str() + " (so far: more)")
			}
		}
	}
	alerts = append(alerts, resent)
	require.NoError(t, db.WriteLogs(context.Background(), resent))
	require.NoError(t, db.SQL().QueryRow(`SELECT count(*) FROM logs WHERE event_name = ?`, AlertEventName).Scan(&stored))
	assert.Equal(t, len(ids), stored, "hot: each alert stored once, also when it differs elsewhere")

	// The warm and cold tiers, written as the tiered exporter does (records built before the
	// tier's queue, then written): each alert once too.
	dir := t.TempDir()
	sc := runagainstorageextension.NewDefaultConfig()
	sc.Hot = configoptional.None[runagainstorageextension.HotConfig]()
	sc.Warm = configoptional.Some(runagainstorageextension.WarmConfig{
		SQLite: configoptional.Some(runagainstorageextension.SQLiteConfig{Path: filepath.Join(dir, "warm.db")})})
	sc.Cold = configoptional.Some(runagainstorageextension.ColdConfig{
		Parquet: configoptional.Some(runagainstorageextension.ParquetConfig{URL: filepath.Join(dir, "cold")})})
	_, ext := storagetest.Start(t, sc)
	for _, tier := range []string{"warm", "cold"} {
		b, err := ext.Backend(tier)
		require.NoError(t, err)
		rb := b.(runagainstorageextension.RecordBackend)
		for _, ld := range alerts {
			require.NoError(t, rb.WriteRecords(context.Background(), rb.LogRecords(ld)), tier)
		}
	}
	warm, err := sqlitestore.OpenWarm(filepath.Join(dir, "warm.db"), sqlitestore.Options{ReadOnly: true})
	require.NoError(t, err)
	defer func() { _ = warm.Close() }()
	require.NoError(t, warm.SQL().QueryRow(`SELECT count(*) FROM key_events WHERE kind = 'alert'`).Scan(&stored))
	assert.Equal(t, len(ids), stored, "warm: each alert one key event")
	cold, err := coldstore.Open(context.Background(), filepath.Join(dir, "cold"), coldstore.Options{ReadOnly: true})
	require.NoError(t, err)
	defer func() { _ = cold.Close() }()
	sessions, err := cold.Sessions(context.Background())
	require.NoError(t, err)
	var coldAlerts int64
	for _, s := range sessions {
		coldAlerts += s.Alerts
	}
	assert.Equal(t, int64(len(ids)), coldAlerts, "cold: each alert counted once in its session")
}
