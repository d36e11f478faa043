package tieredexporter // import "github.com/runagain/runagain/exporter/tieredexporter"

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

// Config is the tiered exporter's configuration. Each tier is optional; at least one must be set.
type Config struct {
	// Hot keeps full spans and log records (DESIGN.md: default retention 7 days).
	Hot configoptional.Optional[HotConfig] `mapstructure:"hot"`

	// SessionKeys are the attributes that name a session, first present wins
	// (DESIGN.md "Run and session"). Default: gen_ai.conversation.id, session.id.
	SessionKeys []string `mapstructure:"session_keys"`

	_ struct{}
}

// TierSending is the delivery configuration every tier carries: its own timeout, retry and
// sending queue (exporterhelper), so one tier's outage never blocks another.
type TierSending struct {
	TimeoutConfig exporterhelper.TimeoutConfig                             `mapstructure:",squash"`
	BackOff       configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`
	Queue         configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
}

// HotConfig configures the hot tier.
type HotConfig struct {
	// Retention is how long rows are kept, measured from ingestion. 0 keeps them forever.
	Retention time.Duration `mapstructure:"retention"`
	// SQLite is the embedded backend: one SQLite file.
	SQLite configoptional.Optional[SQLiteConfig] `mapstructure:"sqlite"`

	TierSending `mapstructure:",squash"`
}

// SQLiteConfig configures a SQLite backend.
type SQLiteConfig struct {
	// Path of the SQLite file; its directory is created if missing.
	Path string `mapstructure:"path"`
}

// Validate checks the configuration; errors name the field.
func (c *Config) Validate() error {
	if !c.Hot.HasValue() {
		return errors.New("no tier configured: set `hot`")
	}
	hot := c.Hot.Get()
	if hot.Retention < 0 {
		return fmt.Errorf("hot::retention must not be negative, got %s", hot.Retention)
	}
	if !hot.SQLite.HasValue() {
		return errors.New("hot: no backend configured: set `hot::sqlite`")
	}
	if hot.SQLite.Get().Path == "" {
		return errors.New("hot::sqlite::path must be set")
	}
	for i, k := range c.SessionKeys {
		if k == "" {
			return fmt.Errorf("session_keys[%d] must not be empty", i)
		}
	}
	return nil
}

func defaultSending() TierSending {
	return TierSending{
		TimeoutConfig: exporterhelper.NewDefaultTimeoutConfig(),
		BackOff:       configretry.NewDefaultBackOffConfig(),
		Queue:         configoptional.Some(exporterhelper.NewDefaultQueueConfig()),
	}
}
