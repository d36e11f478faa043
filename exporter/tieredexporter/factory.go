package tieredexporter // import "github.com/runagain/runagain/exporter/tieredexporter"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"

	"github.com/runagain/runagain/exporter/tieredexporter/internal/metadata"
)

// DefaultHotRetention is the hot tier's default retention (DESIGN.md "Storage tiers": 7 days).
const DefaultHotRetention = 7 * 24 * time.Hour

// NewFactory returns the factory for the tiered exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithTraces(createTraces, metadata.TracesStability),
		exporter.WithLogs(createLogs, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{
		Hot: configoptional.Default(HotConfig{
			Retention:   DefaultHotRetention,
			SQLite:      configoptional.Default(SQLiteConfig{Path: "./data/hot.db"}),
			TierSending: defaultSending(),
		}),
	}
}

func createTraces(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Traces, error) {
	return newExporter(ctx, set, cfg.(*Config), signalTraces)
}

func createLogs(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
	return newExporter(ctx, set, cfg.(*Config), signalLogs)
}
