// SPDX-License-Identifier: Apache-2.0

package tieredexporter // import "github.com/runagain/runagain/exporter/tieredexporter"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"

	"github.com/runagain/runagain/exporter/tieredexporter/internal/metadata"
)

// NewFactory returns the factory for the tiered exporter. The ingestion clock is the
// runagain_storage extension's.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithTraces(func(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Traces, error) {
			return newExporter(ctx, set, cfg.(*Config), signalTraces), nil
		}, metadata.TracesStability),
		exporter.WithLogs(func(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
			return newExporter(ctx, set, cfg.(*Config), signalLogs), nil
		}, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{
		Hot:  configoptional.Default(defaultSending()),
		Warm: configoptional.Default(defaultSending()),
		Cold: configoptional.Default(defaultSending()),
	}
}
