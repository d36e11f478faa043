//go:build chdb

package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/runagain/runagain/exporter/tieredexporter"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
	"github.com/runagain/runagain/internal/testutil/chdbtest"
)

// TestShowAndSessionsOnChDB: the CLI's reader (--clickhouse) over tiers written by the tiered
// exporter into ClickHouse (chDB): sessions lists the runs, show prints one from the hot tier.
func TestShowAndSessionsOnChDB(t *testing.T) {
	ctx := context.Background()
	srv := chdbtest.Start(t)
	f := tieredexporter.NewFactory()
	cfg := f.CreateDefaultConfig()
	off := map[string]any{"enabled": false}
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"hot":  map[string]any{"clickhouse": map[string]any{"endpoint": srv.Endpoint, "database": "otel", "compress": "none", "sending_queue": off}},
		"warm": map[string]any{"clickhouse": map[string]any{"endpoint": srv.Endpoint, "database": "runagain"}, "sending_queue": off},
		"cold": map[string]any{"clickhouse": map[string]any{"endpoint": srv.Endpoint, "database": "runagain"}, "sending_queue": off},
	}).Unmarshal(cfg))
	set := exportertest.NewNopSettings(component.MustNewType("tiered"))
	te, err := f.CreateTraces(ctx, set, cfg)
	require.NoError(t, err)
	require.NoError(t, te.Start(ctx, componenttest.NewNopHost()))
	run := storetest.Run{Seed: "cli-ch", Session: "conv-ch", Service: "svc", Agent: "weather", Model: "gpt-4.1",
		Start: time.Now().Add(-time.Minute).UnixNano(), LLMCalls: 1, ToolFail: true}
	require.NoError(t, te.ConsumeTraces(ctx, storetest.Traces(run)))
	require.NoError(t, te.Shutdown(ctx))

	r, err := openTiers(ctx, t.TempDir(), srv.Endpoint, "runagain", "otel", "")
	require.NoError(t, err)
	defer r.Close()
	rows, err := r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, "conv-ch", rows[0].SessionID)
	assert.Equal(t, "hot", rows[0].Tier)
	got, err := r.Run(ctx, storetest.TraceID("cli-ch").String())
	require.NoError(t, err)
	v, err := buildShow(got)
	require.NoError(t, err)
	var b bytes.Buffer
	printShow(&b, v)
	assert.Contains(t, b.String(), "tier hot")
	assert.Contains(t, b.String(), "execute_tool get_weather")
	assert.Contains(t, b.String(), storetest.Payload)
}
