//go:build chdb

// SPDX-License-Identifier: Apache-2.0

package tieredexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/runagain/runagain/extension/runagainstorageextension/storagetest"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/clickhousestore"
	"github.com/runagain/runagain/internal/store/storetest"
	"github.com/runagain/runagain/internal/testutil/chdbtest"
)

// TestRecordStoredOnceOnChDB: an alert with a runagain.record.id written to every ClickHouse
// tier, then sent again (a retry after a lost acknowledgement, a re-import after a restart) with
// a later observed time and a longer message, is one record in each tier as the readers read
// them: hot (the contrib otel_logs, collapsed by the id), warm (key events keyed by the id) and
// cold (the record's own partial, its insert dropped by its token).
func TestRecordStoredOnceOnChDB(t *testing.T) {
	ctx := context.Background()
	srv := chdbtest.Start(t)
	host, _ := storagetest.Start(t, storagetest.ClickHouseTiers(srv.Endpoint))
	off := map[string]any{"enabled": false}
	p := startWithHost(t, host, map[string]any{"hot": map[string]any{"sending_queue": off},
		"warm": map[string]any{"sending_queue": off}, "cold": map[string]any{"sending_queue": off}})
	now := time.Now().Truncate(time.Second).UnixNano()
	run := storetest.Run{Seed: "rid", Session: "conv-rid", Service: "svc", Model: "gpt-4.1", Start: now - int64(time.Minute), LLMCalls: 1}
	require.NoError(t, p.traces.ConsumeTraces(ctx, storetest.Traces(run)))
	alert := storetest.Alert(run, "loop detected: 3 calls")
	lr := alert.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	lr.Attributes().PutStr(runagainattr.RecordID, runagainattr.RecordIDOf("runagain.alert", "loop", storetest.TraceID("rid").String()))
	lr.SetObservedTimestamp(pcommon.Timestamp(now))
	again := plog.NewLogs()
	alert.CopyTo(again)
	alr := again.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	alr.SetObservedTimestamp(pcommon.Timestamp(now + int64(time.Hour)))
	alr.Body().SetStr("loop detected: 4 calls")
	require.NoError(t, p.logs.ConsumeLogs(ctx, alert))
	require.NoError(t, p.logs.ConsumeLogs(ctx, again))
	require.NoError(t, p.traces.Shutdown(ctx))
	require.NoError(t, p.logs.Shutdown(ctx))

	out, err := srv.Query("SELECT count() FROM otel.otel_logs", "TSV")
	require.NoError(t, err)
	t.Logf("otel_logs rows as written: %s", out)

	db, err := clickhousestore.OpenDB(srv.Endpoint, "", "", nil)
	require.NoError(t, err)
	r := clickhousestore.Open(db, clickhousestore.HotTables{Database: "otel"}, clickhousestore.Schema{Database: "runagain"}, nil)
	defer r.Close()
	tid := storetest.TraceID("rid").String()
	got, err := r.Run(ctx, tid)
	require.NoError(t, err)
	require.Equal(t, store.TierHot, got.Tier)
	assert.Equal(t, 1, got.Logs.LogRecordCount(), "hot: the alert once")

	_, err = srv.Query("TRUNCATE TABLE otel.otel_traces", "TSV")
	require.NoError(t, err)
	got, err = r.Run(ctx, tid)
	require.NoError(t, err)
	require.Equal(t, store.TierWarm, got.Tier)
	assert.Equal(t, 1, got.Logs.LogRecordCount(), "warm: the alert one key event")

	_, err = srv.Query("TRUNCATE TABLE runagain.runagain_span_summaries", "TSV")
	require.NoError(t, err)
	_, err = srv.Query("TRUNCATE TABLE runagain.runagain_key_events", "TSV")
	require.NoError(t, err)
	got, err = r.Run(ctx, tid)
	require.NoError(t, err)
	require.Equal(t, store.TierCold, got.Tier)
	require.NotNil(t, got.Session)
	assert.EqualValues(t, 1, got.Session.Alerts, "cold: the alert counted once")
	assert.EqualValues(t, run.Spans(), got.Session.Spans)
}
