//go:build chdb

// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/runagain/runagain/exporter/tieredexporter"
	"github.com/runagain/runagain/extension/runagainstorageextension/storagetest"
	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
	"github.com/runagain/runagain/internal/testutil/chdbtest"
)

// TestShowAndSessionsOnChDB: the CLI's reader (--clickhouse) over tiers written by the tiered
// exporter into ClickHouse (chDB): sessions lists the runs, show prints one from the hot tier.
func TestShowAndSessionsOnChDB(t *testing.T) {
	ctx := context.Background()
	srv := chdbtest.Start(t)
	run := storetest.Run{Seed: "cli-ch", Session: "conv-ch", Service: "svc", Agent: "weather", Model: "gpt-4.1",
		Start: time.Now().Add(-time.Minute).UnixNano(), LLMCalls: 1, ToolFail: true}
	writeTieredChDB(ctx, t, srv.Endpoint, storetest.Traces(run))

	flags := [3]string{clickhouseFlag, clickhouseDBFlag, clickhouseHotDBFlag}
	t.Cleanup(func() { clickhouseFlag, clickhouseDBFlag, clickhouseHotDBFlag = flags[0], flags[1], flags[2] })
	clickhouseFlag, clickhouseDBFlag, clickhouseHotDBFlag = srv.Endpoint, "runagain", "otel"
	r, err := openTiers(ctx, t.TempDir())
	require.NoError(t, err)
	defer r.Close()
	rows, err := r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, "conv-ch", rows[0].SessionID)
	assert.Equal(t, "hot", rows[0].Tier)
	got, err := r.Run(ctx, storetest.TraceID("cli-ch").String())
	require.NoError(t, err)
	v, err := showOf(got)
	require.NoError(t, err)
	var b bytes.Buffer
	printShow(&b, v)
	assert.Contains(t, b.String(), "tier hot")
	assert.Contains(t, b.String(), "execute_tool get_weather")
	assert.Contains(t, b.String(), storetest.Payload)
}

// TestConfigReadsClickHouseWithCost: the gateway's shape (every tier on ClickHouse, in the
// runagain_storage extension) read through --config: the hot row comes from the contrib tables,
// which hold no cost, and carries the cost the warm tier priced with the configured override.
func TestConfigReadsClickHouseWithCost(t *testing.T) {
	ctx := context.Background()
	srv := chdbtest.Start(t)
	yaml := `extensions:
  runagain_storage:
    pricing:
      models:
        - {model: gpt-4.1, input_mtok: 1000, output_mtok: 1000}
    hot:  {clickhouse: {endpoint: "` + srv.Endpoint + `", database: otel, connection_params: {compress: none}}}
    warm: {clickhouse: {endpoint: "` + srv.Endpoint + `", database: runagain}}
    cold: {clickhouse: {endpoint: "` + srv.Endpoint + `", database: runagain}}
`
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	scfg, err := loadStorageConfig(ctx, path, testFlags(t))
	require.NoError(t, err)

	host, st := storagetest.Start(t, scfg)
	f := tieredexporter.NewFactory()
	cfg := f.CreateDefaultConfig()
	off := map[string]any{"enabled": false}
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"hot": map[string]any{"sending_queue": off}, "warm": map[string]any{"sending_queue": off}, "cold": map[string]any{"sending_queue": off},
	}).Unmarshal(cfg))
	te, err := f.CreateTraces(ctx, exportertest.NewNopSettings(component.MustNewType("tiered")), cfg)
	require.NoError(t, err)
	require.NoError(t, te.Start(ctx, host))
	run := storetest.Run{Seed: "cfg-ch", Session: "conv-cfg", Service: "svc", Model: "gpt-4.1",
		Start: time.Now().Add(-time.Minute).UnixNano(), LLMCalls: 1}
	td := storetest.Traces(run)
	var want float64
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		spans := td.ResourceSpans().At(i).ScopeSpans().At(0).Spans()
		for k := 0; k < spans.Len(); k++ {
			want += st.Prices().SpanCost(spans.At(k).Attributes(), spans.At(k).StartTimestamp()).USD
		}
	}
	require.Positive(t, want)
	require.NoError(t, te.ConsumeTraces(ctx, td))
	require.NoError(t, te.Shutdown(ctx))

	r, err := scfg.OpenReader(ctx)
	require.NoError(t, err)
	defer r.Close()
	rows, err := r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, "hot", rows[0].Tier)
	assert.InDelta(t, want, rows[0].CostUSD, 1e-12, "the hot row carries the warm tier's cost")
}

// TestPatternsOnChDB: `runagain patterns` over tiers written by the tiered exporter into
// ClickHouse (--clickhouse): the warm tier's run index holds the failing run's signature, read
// through the tiers' reader (before, the ClickHouse tiers had none and the listing was empty).
func TestPatternsOnChDB(t *testing.T) {
	ctx := context.Background()
	srv := chdbtest.Start(t)
	run := storetest.Run{Seed: "cli-pat", Session: "conv-pat", Service: "svc", Agent: "weather", Model: "gpt-4.1",
		Start: time.Now().Add(-time.Minute).UnixNano(), LLMCalls: 1, ToolFail: true}
	writeTieredChDB(ctx, t, srv.Endpoint, storetest.Traces(run))

	flags := [3]string{clickhouseFlag, clickhouseDBFlag, clickhouseHotDBFlag}
	t.Cleanup(func() { clickhouseFlag, clickhouseDBFlag, clickhouseHotDBFlag = flags[0], flags[1], flags[2] })
	clickhouseFlag, clickhouseDBFlag, clickhouseHotDBFlag = srv.Endpoint, "runagain", "otel"
	dir := dataDirFlag
	t.Cleanup(func() { dataDirFlag = dir })
	dataDirFlag = t.TempDir()
	pr, closeFn, err := openPatternReader()
	require.NoError(t, err)
	defer closeFn()
	rep, err := patterns.List(ctx, pr, store.PatternFilter{})
	require.NoError(t, err)
	require.Len(t, rep.Patterns, 1)
	assert.Equal(t, `tool get_weather: TimeoutError "timeout"`, rep.Patterns[0].Title)
	assert.Equal(t, []string{storetest.TraceID("cli-pat").String()}, rep.Patterns[0].Examples)
}
