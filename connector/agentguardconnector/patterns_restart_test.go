// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/store/storetest"
)

// rateJumpIDs runs one watcher pass on h after d and returns the record ids of the rate-jump
// alerts it raised.
func rateJumpIDs(h *harness, d time.Duration) []string {
	_, ld := h.pass(d)
	var ids []string
	for _, a := range alertsOf(ld) {
		if attrStr(a.Attributes(), AttrAlertKind) == AlertPatternRateJump {
			ids = append(ids, attrStr(a.Attributes(), runagainattr.RecordID))
		}
	}
	return ids
}

// TestPatternRateJumpSurvivesRestart: a real hot SQLite file fed a steady failing pattern for
// six hours (two runs an hour), then a surge of twelve runs in 24 minutes. A watcher that ran
// through raises one rate jump. A watcher started (a collector restart) four runs into the surge
// rebuilds the pattern's windows and baseline from the index's history and raises the same
// alert, with the same record id, at the same run; one started after the jump raises none for
// the window already alerted. Before, both started with empty windows: the first raised nothing
// (its baseline was younger than two windows), so the surge across the restart was missed.
func TestPatternRateJumpSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	db, err := sqlitestore.Open(filepath.Join(t.TempDir(), "hot.db"), sqlitestore.Options{})
	require.NoError(t, err)
	defer db.Close()
	src := readerSource(db)
	cfg := createDefaultConfig()
	step := cfg.Patterns.Interval * 4 // 2 minutes
	through := patternHarnessOn(t, cfg, src, 0)
	start := through.clock.Now()
	n := 0
	write := func() {
		n++
		run := storetest.Run{Seed: fmt.Sprintf("rs-%d", n), Service: "svc", Agent: "support", Model: "gpt-4.1",
			Start: through.clock.Now().Add(-cfg.Patterns.Settle + time.Second).UnixNano(), LLMCalls: 1, ToolFail: true}
		_, err := db.WriteTraces(ctx, storetest.Traces(run))
		require.NoError(t, err)
	}
	var want []string
	for i := range 180 { // six hours
		if i%15 == 0 {
			write()
		}
		want = append(want, rateJumpIDs(through, step)...)
	}
	require.Empty(t, want, "a steady rate is no jump")

	var early, late *harness
	var got, after []string
	for i := range 12 {
		if i == 4 {
			early = patternHarnessOn(t, cfg, src, through.clock.Since(start))
		}
		if i == 11 {
			require.Len(t, want, 1, "the run-through watcher raised its jump before the last run")
			late = patternHarnessOn(t, cfg, src, through.clock.Since(start))
		}
		write()
		w := rateJumpIDs(through, step)
		want = append(want, w...)
		if early != nil {
			g := rateJumpIDs(early, step)
			assert.Equal(t, w, g, "run %d of the surge: the restarted watcher raises what the run-through one raises", i)
			got = append(got, g...)
		}
		if late != nil {
			after = append(after, rateJumpIDs(late, step)...)
		}
	}
	require.Len(t, want, 1, "one rate jump for the surge")
	assert.Equal(t, want, got, "restarted mid-surge: the same alert, the same record id")
	assert.Empty(t, after, "restarted after the jump: no second alert for the window")
}
