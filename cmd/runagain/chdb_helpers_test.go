//go:build chdb

// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/exporter/tieredexporter"
	"github.com/runagain/runagain/extension/runagainstorageextension/storagetest"
)

// writeTieredChDB writes td with the tiered exporter to every ClickHouse tier at endpoint
// (hot: contrib otel_traces/otel_logs in database otel; warm and cold: database runagain), the
// backends configured on the runagain_storage extension as in a real pipeline, without sending
// queues, and shuts the exporter down (everything written when it returns).
func writeTieredChDB(ctx context.Context, t *testing.T, endpoint string, td ptrace.Traces) {
	t.Helper()
	host, _ := storagetest.Start(t, storagetest.ClickHouseTiers(endpoint))
	f := tieredexporter.NewFactory()
	cfg := f.CreateDefaultConfig()
	off := map[string]any{"enabled": false}
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"hot": map[string]any{"sending_queue": off}, "warm": map[string]any{"sending_queue": off}, "cold": map[string]any{"sending_queue": off},
	}).Unmarshal(cfg))
	te, err := f.CreateTraces(ctx, exportertest.NewNopSettings(component.MustNewType("tiered")), cfg)
	require.NoError(t, err)
	require.NoError(t, te.Start(ctx, host))
	require.NoError(t, te.ConsumeTraces(ctx, td))
	require.NoError(t, te.Shutdown(ctx))
}
