// SPDX-License-Identifier: Apache-2.0

package tieredexporter

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/runagain/runagain/exporter/tieredexporter/internal/metadata"
	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/extension/runagainstorageextension/storagetest"
	"github.com/runagain/runagain/internal/pins"
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

// storageOn is a runagain_storage configuration with the three embedded tiers under dir and a
// price override for gpt-4.1 (the model storetest's runs use).
func storageOn(dir string) *runagainstorageextension.Config {
	cfg := runagainstorageextension.NewDefaultConfig()
	cfg.Hot = configoptional.Some(runagainstorageextension.HotConfig{Retention: runagainstorageextension.DefaultHotRetention,
		SQLite: configoptional.Some(runagainstorageextension.SQLiteConfig{Path: filepath.Join(dir, "hot.db")})})
	cfg.Warm = configoptional.Some(runagainstorageextension.WarmConfig{Retention: runagainstorageextension.DefaultWarmRetention,
		SQLite: configoptional.Some(runagainstorageextension.SQLiteConfig{Path: filepath.Join(dir, "warm.db")})})
	cfg.Cold = configoptional.Some(runagainstorageextension.ColdConfig{
		Parquet: configoptional.Some(runagainstorageextension.ParquetConfig{URL: filepath.Join(dir, "cold")})})
	cfg.JanitorInterval = 24 * time.Hour
	cfg.Pricing.Models = []pricing.Override{{Model: "gpt-4.1", InputMTok: 100, OutputMTok: 1000}}
	return cfg
}

// lifecycleHost is the generated lifecycle tests' host (metadata.yaml tests::host): a
// runagain_storage extension with the embedded layout under a temporary directory.
func lifecycleHost(t *testing.T) component.Host {
	host, _ := storagetest.Start(t, storageOn(t.TempDir()))
	return host
}

// startWithHost starts a traces and a logs tiered exporter on raw against host.
func startWithHost(t *testing.T, host component.Host, raw map[string]any) pair {
	t.Helper()
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(raw).Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	ctx := context.Background()
	set := exportertest.NewNopSettings(metadata.Type)
	te, err := f.CreateTraces(ctx, set, cfg)
	require.NoError(t, err)
	le, err := f.CreateLogs(ctx, set, cfg)
	require.NoError(t, err)
	require.NoError(t, te.Start(ctx, host))
	require.NoError(t, le.Start(ctx, host))
	return pair{te, le}
}

// TestTiersFromStorageExtension: with the backends in the runagain_storage extension, a tiered
// exporter with only delivery settings writes every tier the extension configures, and every
// tier's cost is priced with the extension's override (not the embedded table).
func TestTiersFromStorageExtension(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	scfg := storageOn(dir)
	host, st := storagetest.Start(t, scfg)
	off := map[string]any{"enabled": false}
	p := startWithHost(t, host, map[string]any{
		"hot": map[string]any{"sending_queue": off}, "warm": map[string]any{"sending_queue": off}, "cold": map[string]any{"sending_queue": off}})
	defer p.stop(t)
	run := storetest.Run{Seed: "x", Session: "s-1", Service: "svc", Agent: "a", Model: "gpt-4.1", Start: time.Now().UnixNano(), LLMCalls: 2}
	td := storetest.Traces(run)
	require.NoError(t, p.traces.ConsumeTraces(ctx, td))

	var want, table float64
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		spans := rss.At(i).ScopeSpans().At(0).Spans()
		for k := 0; k < spans.Len(); k++ {
			s := spans.At(k)
			want += st.Prices().SpanCost(s.Attributes(), s.StartTimestamp()).USD
			table += pricing.DefaultPrices().SpanCost(s.Attributes(), s.StartTimestamp()).USD
		}
	}
	require.Positive(t, want)
	require.NotEqual(t, table, want, "the override must change the cost for this test to mean anything")

	r, err := scfg.OpenReader(ctx)
	require.NoError(t, err)
	defer r.Close()
	tiers, ok := r.(*store.Tiered)
	require.True(t, ok)
	require.Len(t, tiers.Readers, 3, "hot, warm and cold were all written")
	for _, tr := range tiers.Readers {
		rows, err := tr.Runs(ctx, store.RunFilter{})
		require.NoError(t, err)
		require.Len(t, rows, 1)
		assert.InDelta(t, want, rows[0].CostUSD, 1e-12, "%s tier cost", rows[0].Tier)
	}
}

// TestJanitorKeepsPinnedRuns: past the hot retention the janitor deletes the runs that no
// dataset pins and keeps the pinned one; when the pins cannot be read it deletes nothing.
func TestJanitorKeepsPinnedRuns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c := &clock{now: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	st, err := runagainstorageextension.New(storageOn(dir), componenttest.NewNopTelemetrySettings(), c.Now)
	require.NoError(t, err)
	host := storagetest.Host{component.MustNewID("runagain_storage"): st}
	require.NoError(t, st.Start(ctx, host))
	defer func() { require.NoError(t, st.Shutdown(ctx)) }()
	off := map[string]any{"enabled": false}
	p := startWithHost(t, host, map[string]any{"hot": map[string]any{"sending_queue": off}})
	defer p.stop(t)
	runA := storetest.Run{Seed: "pinned", Service: "svc", Model: "gpt-4.1", Start: c.Now().UnixNano(), LLMCalls: 1}
	runB := storetest.Run{Seed: "free", Service: "svc", Model: "gpt-4.1", Start: c.Now().UnixNano(), LLMCalls: 1}
	require.NoError(t, p.traces.ConsumeTraces(ctx, storetest.Traces(runA, runB)))

	c.Add(runagainstorageextension.DefaultHotRetention + time.Hour)
	st.SetPins(pins.Func(func(context.Context) (map[string]bool, error) { return nil, assert.AnError }))
	n, err := st.RunJanitors(ctx)
	require.Error(t, err, "unknown pins: the pass fails")
	assert.Zero(t, n, "and deletes nothing")

	st.SetPins(pins.Func(func(context.Context) (map[string]bool, error) {
		return map[string]bool{storetest.TraceID("pinned").String(): true}, nil
	}))
	_, err = st.RunJanitors(ctx)
	require.NoError(t, err)
	r, err := storageOn(dir).OpenReader(ctx)
	require.NoError(t, err)
	defer r.Close()
	rows, err := r.(*store.Tiered).Readers[0].Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, rows, 1, "only the pinned run is left in the hot tier")
	assert.Equal(t, storetest.TraceID("pinned").String(), rows[0].TraceID)
	assert.Equal(t, "hot", rows[0].Tier)
}
