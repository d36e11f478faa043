// SPDX-License-Identifier: Apache-2.0

// Package storagetest starts a runagain_storage extension for component tests and gives a
// component.Host that holds it, as the collector's host does.
package storagetest // import "github.com/runagain/runagain/extension/runagainstorageextension/storagetest"

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"

	"github.com/runagain/runagain/extension/runagainstorageextension"
)

// Host is a component.Host holding extensions.
type Host map[component.ID]component.Component

// GetExtensions implements component.Host.
func (h Host) GetExtensions() map[component.ID]component.Component { return h }

// Start creates and starts a runagain_storage extension on cfg (nil: the default
// configuration) under id runagain_storage, shut down when the test ends, and returns a host
// holding it.
func Start(tb testing.TB, cfg *runagainstorageextension.Config) (Host, *runagainstorageextension.Extension) {
	tb.Helper()
	return StartAt(tb, cfg, nil)
}

// StartAt is Start with now as the extension's ingestion clock (nil: time.Now), for retention tests.
func StartAt(tb testing.TB, cfg *runagainstorageextension.Config, now func() time.Time) (Host, *runagainstorageextension.Extension) {
	tb.Helper()
	if cfg == nil {
		cfg = runagainstorageextension.NewDefaultConfig()
	}
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	st, err := runagainstorageextension.New(cfg, componenttest.NewNopTelemetrySettings(), now)
	if err != nil {
		tb.Fatal(err)
	}
	h := Host{component.MustNewID("runagain_storage"): st}
	if err := st.Start(context.Background(), h); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := st.Shutdown(context.Background()); err != nil {
			tb.Error(err)
		}
	})
	return h, st
}

// ClickHouseTiers is the extension's default configuration with every tier on the ClickHouse
// server at endpoint: hot in database otel (the contrib tables), warm and cold in database
// runagain, schemas created, no compression (chDB tests).
func ClickHouseTiers(endpoint string) *runagainstorageextension.Config {
	ch := func(db string) configoptional.Optional[runagainstorageextension.ClickHouseConfig] {
		return configoptional.Some(runagainstorageextension.ClickHouseConfig{Endpoint: endpoint, Database: db, CreateSchema: true,
			ConnectionParams: map[string]string{"compress": "none"}})
	}
	cfg := runagainstorageextension.NewDefaultConfig()
	cfg.Hot = configoptional.Some(runagainstorageextension.HotConfig{Retention: 72 * time.Hour, ClickHouse: ch("otel")})
	cfg.Warm = configoptional.Some(runagainstorageextension.WarmConfig{Retention: 2160 * time.Hour, ClickHouse: ch("runagain")})
	cfg.Cold = configoptional.Some(runagainstorageextension.ColdConfig{ClickHouse: ch("runagain")})
	return cfg
}
