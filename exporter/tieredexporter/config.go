// SPDX-License-Identifier: Apache-2.0

package tieredexporter // import "github.com/runagain/runagain/exporter/tieredexporter"

import (
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

// Config is the tiered exporter's configuration.
//
// The backends (where each tier lives, its retention, the session keys and the prices) belong to
// the runagain_storage extension, found through the host: Storage names it, or the only one is
// used. Here each tier has only its delivery settings (timeout, retry, sending queue); a tier is
// written when the extension configures it. The older inline backends (hot::sqlite,
// warm::clickhouse, cold::parquet, session_keys, janitor_interval, pricing...) are refused at
// start by the distribution's configuration check (internal/configcheck), naming the field and
// its place in the extension (README "Upgrade notes").
type Config struct {
	// Storage is the id of the runagain_storage extension (e.g. runagain_storage or
	// runagain_storage/gateway); empty: the only one the collector has.
	Storage component.ID `mapstructure:"storage"`

	// Hot, Warm and Cold are each tier's delivery: timeout, retry, sending queue. For a hot
	// tier on ClickHouse they configure the contrib clickhouseexporter the exporter creates.
	Hot  configoptional.Optional[TierSending] `mapstructure:"hot"`
	Warm configoptional.Optional[TierSending] `mapstructure:"warm"`
	Cold configoptional.Optional[TierSending] `mapstructure:"cold"`

	_ struct{}
}

// TierSending is the delivery configuration every tier carries: its own timeout, retry and
// sending queue (exporterhelper), so one tier's outage never blocks another.
type TierSending struct {
	TimeoutConfig exporterhelper.TimeoutConfig                             `mapstructure:",squash"`
	BackOff       configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`
	Queue         configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
}

// Validate checks the configuration; errors name the field. The backends are the
// runagain_storage extension's (it checks them).
func (c *Config) Validate() error { return nil }

func defaultSending() TierSending {
	return TierSending{
		TimeoutConfig: exporterhelper.NewDefaultTimeoutConfig(),
		BackOff:       configretry.NewDefaultBackOffConfig(),
		Queue:         configoptional.Some(exporterhelper.NewDefaultQueueConfig()),
	}
}

func (c *Config) hotSending() TierSending {
	if c.Hot.HasValue() {
		return *c.Hot.Get()
	}
	return defaultSending()
}

func (c *Config) warmSending() TierSending {
	if c.Warm.HasValue() {
		return *c.Warm.Get()
	}
	return defaultSending()
}

func (c *Config) coldSending() TierSending {
	if c.Cold.HasValue() {
		return *c.Cold.Get()
	}
	return defaultSending()
}
