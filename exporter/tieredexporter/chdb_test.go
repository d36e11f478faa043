//go:build chdb

// SPDX-License-Identifier: Apache-2.0

package tieredexporter

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/extension/runagainstorageextension/storagetest"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/clickhousestore"
	"github.com/runagain/runagain/internal/store/storetest"
	"github.com/runagain/runagain/internal/testutil/chdbtest"
)

// TestClickHouseTiersOnChDB runs the whole exporter with every tier on ClickHouse against chDB:
// the contrib clickhouseexporter (created from its factory with the extension's connection, TTL
// from the hot retention) creates its schema and inserts over HTTP; our warm and cold tables are
// created and written; then the CLI's ClickHouse reader reads all three tiers back.
func TestClickHouseTiersOnChDB(t *testing.T) {
	ctx := context.Background()
	srv := chdbtest.Start(t)
	host, _ := storagetest.Start(t, storagetest.ClickHouseTiers(srv.Endpoint))
	off := map[string]any{"enabled": false}
	p := startWithHost(t, host, map[string]any{"hot": map[string]any{"sending_queue": off},
		"warm": map[string]any{"sending_queue": off}, "cold": map[string]any{"sending_queue": off}})
	te, le := p.traces, p.logs

	// The contrib table's TTL counts from the span's own timestamp, so the runs are recent.
	now := time.Now().Truncate(time.Second).UnixNano()
	runA := storetest.Run{Seed: "a", Session: "conv-1", Service: "svc", Agent: "weather", Model: "gpt-4.1", Start: now - int64(time.Minute), LLMCalls: 2, ToolFail: true}
	runB := storetest.Run{Seed: "b", Session: "conv-1", Service: "svc", Agent: "weather", Model: "claude-sonnet-4", Start: now, LLMCalls: 1}
	require.NoError(t, te.ConsumeTraces(ctx, storetest.Traces(runA, runB)))
	require.NoError(t, le.ConsumeLogs(ctx, storetest.Alert(runA, "loop detected")))
	require.NoError(t, te.Shutdown(ctx))
	require.NoError(t, le.Shutdown(ctx))

	ddl, err := srv.Query("SHOW CREATE TABLE otel.otel_traces", "TSVRaw")
	require.NoError(t, err)
	assert.Contains(t, ddl, "TTL toDateTime(Timestamp) + toIntervalDay(3)", "the hot retention became the contrib ttl")
	ddl, err = srv.Query("SHOW CREATE TABLE otel.otel_logs", "TSVRaw")
	require.NoError(t, err)
	assert.Contains(t, ddl, "toIntervalDay(3)")
	ddl, err = srv.Query("SHOW CREATE TABLE runagain.runagain_span_summaries", "TSVRaw")
	require.NoError(t, err)
	assert.Contains(t, ddl, "toIntervalSecond(7776000)", "90 days")
	var ddls []string
	for _, s := range srv.Statements() {
		if strings.HasPrefix(strings.TrimSpace(s), "CREATE") {
			ddls = append(ddls, s)
		}
	}
	t.Logf("DDL issued: %d statements", len(ddls))
	assert.GreaterOrEqual(t, len(ddls), 6, "contrib traces, lookup table, view, logs; our warm and cold")

	db, err := clickhousestore.OpenDB(srv.Endpoint, "", "", nil)
	require.NoError(t, err)
	r := clickhousestore.Open(db, clickhousestore.HotTables{Database: "otel"}, clickhousestore.Schema{Database: "runagain"}, nil)
	defer r.Close()
	runs, err := r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 2, "each run once, from the hot tier")
	for _, row := range runs {
		assert.Equal(t, "hot", row.Tier)
		assert.Equal(t, "conv-1", row.SessionID)
	}
	assert.Equal(t, storetest.TraceID("b").String(), runs[0].TraceID)
	assert.EqualValues(t, runA.Spans(), runs[1].Spans)
	assert.EqualValues(t, 200, runs[1].InputTokens)
	assert.EqualValues(t, 1, runs[1].Errors)

	hotOnly := &clickhousestore.HotReader{DB: db, Tables: clickhousestore.HotTables{Database: "otel"}}
	recent, err := hotOnly.Runs(ctx, store.RunFilter{Since: time.Unix(0, now-int64(time.Second)), Limit: 5})
	require.NoError(t, err)
	require.Len(t, recent, 1)
	assert.Equal(t, storetest.TraceID("b").String(), recent[0].TraceID)
	newest, err := hotOnly.Runs(ctx, store.RunFilter{Limit: 1})
	require.NoError(t, err)
	require.Len(t, newest, 1)
	assert.Equal(t, storetest.TraceID("b").String(), newest[0].TraceID)

	run, err := r.Run(ctx, storetest.TraceID("a").String())
	require.NoError(t, err)
	assert.Equal(t, "hot", run.Tier)
	require.Equal(t, runA.Spans(), run.Traces.SpanCount())
	_, flat := store.Order(run.Traces, nil)
	var sawPayload, sawException bool
	var tokens int64
	for _, n := range flat {
		if v, ok := n.Span.Attributes().Get(genai.AttrInputMessages); ok {
			sawPayload = v.Str() == storetest.Payload
		}
		tokens += genai.TokenUsage(n.Span.Attributes()).Input
		if n.Span.Events().Len() == 1 && n.Span.Events().At(0).Name() == "exception" {
			sawException = true
		}
	}
	assert.True(t, sawPayload, "the hot tier keeps the payload")
	assert.True(t, sawException)
	assert.EqualValues(t, 200, tokens, "usage comes back as integers")
	require.Equal(t, 1, run.Logs.LogRecordCount())
	assert.Equal(t, "runagain.alert", run.Logs.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).EventName())

	// Past the hot tier (rows gone), the same reader falls back to warm, then cold.
	_, err = srv.Query("TRUNCATE TABLE otel.otel_traces", "TSV")
	require.NoError(t, err)
	run, err = r.Run(ctx, storetest.TraceID("a").String())
	require.NoError(t, err)
	assert.Equal(t, "warm", run.Tier)
	assert.Equal(t, runA.Spans(), run.Traces.SpanCount())
	_, err = srv.Query("TRUNCATE TABLE runagain.runagain_span_summaries", "TSV")
	require.NoError(t, err)
	_, err = srv.Query("TRUNCATE TABLE runagain.runagain_key_events", "TSV")
	require.NoError(t, err)
	run, err = r.Run(ctx, storetest.TraceID("a").String())
	require.NoError(t, err)
	assert.Equal(t, "cold", run.Tier)
	require.NotNil(t, run.Session)
	assert.EqualValues(t, runA.Spans()+runB.Spans(), run.Session.Spans)
	assert.EqualValues(t, 1, run.Session.Alerts)
	runs, err = r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, "cold", runs[0].Tier)
}
