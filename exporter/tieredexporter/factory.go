package tieredexporter // import "github.com/runagain/runagain/exporter/tieredexporter"

import (
	"context"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/clickhouseexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"

	"github.com/runagain/runagain/exporter/tieredexporter/internal/metadata"
)

// Default retentions (DESIGN.md "Storage tiers"); the cold tier keeps records forever (0).
const (
	DefaultHotRetention    = 7 * 24 * time.Hour
	DefaultWarmRetention   = 90 * 24 * time.Hour
	DefaultColdRetention   = time.Duration(0)
	DefaultJanitorInterval = time.Hour
)

// NewFactory returns the factory for the tiered exporter.
func NewFactory() exporter.Factory {
	return newFactory(time.Now)
}

// newFactory lets tests inject the clock used for ingestion stamps and retention.
func newFactory(now func() time.Time) exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithTraces(func(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Traces, error) {
			return newExporter(ctx, set, cfg.(*Config), signalTraces, now)
		}, metadata.TracesStability),
		exporter.WithLogs(func(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
			return newExporter(ctx, set, cfg.(*Config), signalLogs, now)
		}, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	ch := *clickhouseexporter.NewFactory().CreateDefaultConfig().(*clickhouseexporter.Config)
	return &Config{
		Hot: configoptional.Default(HotConfig{
			Retention:   DefaultHotRetention,
			SQLite:      configoptional.Default(SQLiteConfig{Path: "./data/hot.db"}),
			ClickHouse:  configoptional.Default(ch),
			TierSending: defaultSending(),
		}),
		Warm: configoptional.Default(WarmConfig{
			Retention:   DefaultWarmRetention,
			SQLite:      configoptional.Default(SQLiteConfig{Path: "./data/warm.db"}),
			ClickHouse:  configoptional.Default(defaultClickHouse()),
			TierSending: defaultSending(),
		}),
		Cold: configoptional.Default(ColdConfig{
			Retention:   DefaultColdRetention,
			Parquet:     configoptional.Default(ParquetConfig{URL: "./data/cold"}),
			ClickHouse:  configoptional.Default(defaultClickHouse()),
			TierSending: defaultSending(),
		}),
		JanitorInterval: DefaultJanitorInterval,
	}
}
