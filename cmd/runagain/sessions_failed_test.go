// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/store/storetest"
)

// TestSessionsFailedFromRunIndex: `sessions --failed` over a real hot file, where clean runs are
// skipped from the run index (no error span, no alert) and the diverged-runs list, lists each
// failing run with its reason: an error span, an alert (of an older agent_guard build, its kind
// under runagain.alert.kind), a divergence record alone; --limit N prints the N newest failing runs.
func TestSessionsFailedFromRunIndex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	hot, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{})
	require.NoError(t, err)
	mk := func(seed string, i int, fail bool) storetest.Run {
		r := storetest.Run{Seed: seed, Service: "svc", Agent: "a", Model: "gpt-4.1", LLMCalls: 1, ToolFail: fail, Start: int64(i+1) * 60e9}
		_, err := hot.WriteTraces(ctx, storetest.Traces(r))
		require.NoError(t, err)
		return r
	}
	for i := 0; i < 20; i++ {
		mk("clean"+string(rune('a'+i)), i, false)
	}
	mk("failing", 30, true)
	alerted := mk("alerted", 31, false)
	require.NoError(t, hot.WriteLogs(ctx, storetest.Alert(alerted, "loop"))) // the older key, runagain.alert.kind
	diverged := mk("diverged", 32, false)
	ld := storetest.Alert(diverged, "replay diverged")
	ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).SetEventName(runagainattr.EventDivergence)
	require.NoError(t, hot.WriteLogs(ctx, ld))
	for i := 0; i < 5; i++ { // clean runs newer than every failing one
		mk("later"+string(rune('a'+i)), 40+i, false)
	}
	require.NoError(t, hot.Close())

	out, errOut, err := runCLI(t, "--data-dir", dir, "sessions", "--failed", "--json")
	require.NoError(t, err, errOut)
	var rows []struct {
		TraceID string `json:"trace_id"`
		Reason  string `json:"reason"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rows), out)
	got := map[string]string{}
	for _, r := range rows {
		got[r.TraceID] = r.Reason
	}
	assert.Equal(t, map[string]string{
		storetest.TraceID("failing").String():  "1 error span",
		storetest.TraceID("alerted").String():  "alert loop x1",
		storetest.TraceID("diverged").String(): "replay divergence",
	}, got)

	// --limit counts the failing runs printed, newest first, not the runs read before the filter
	// (the 5 newest runs are clean).
	out, errOut, err = runCLI(t, "--data-dir", dir, "sessions", "--failed", "--json", "--limit", "2")
	require.NoError(t, err, errOut)
	rows = nil
	require.NoError(t, json.Unmarshal([]byte(out), &rows), out)
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.TraceID)
	}
	assert.Equal(t, []string{storetest.TraceID("diverged").String(), storetest.TraceID("alerted").String()}, ids)
}
