package agentguardconnector

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/store/sqlitestore"
)

// TestAlertStoredOnceAfterRestart: the runaway session fed to one agent_guard, then to a fresh one
// (a collector restart: the guard's state is in memory) raises the same loop alert with the same
// record id (rule, run, spans), and the hot tier stores it once.
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
}
