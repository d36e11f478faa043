package tieredexporter // import "github.com/runagain/runagain/exporter/tieredexporter"

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/clickhouseexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/internal/pricing"
)

// Config is the tiered exporter's configuration.
//
// The backends (where each tier lives, its retention, the session keys and the prices) belong to
// the runagain_storage extension, found through the host: Storage names it, or the only one is
// used. Here each tier has only its delivery settings (timeout, retry, sending queue); a tier is
// written when the extension configures it.
//
// Older configurations set the backends inline (hot::sqlite, warm::clickhouse, cold::parquet,
// session_keys, janitor_interval...): they keep working, the exporter then runs a private
// storage of its own with those settings (and no extension is needed).
type Config struct {
	// Storage is the id of the runagain_storage extension (e.g. runagain_storage or
	// runagain_storage/gateway); empty: the only one the collector has.
	Storage component.ID `mapstructure:"storage"`

	// Hot keeps full spans and log records (DESIGN.md: default retention 7 days).
	Hot configoptional.Optional[HotConfig] `mapstructure:"hot"`
	// Warm keeps span summaries and key events, no payloads (default retention 90 days).
	Warm configoptional.Optional[WarmConfig] `mapstructure:"warm"`
	// Cold keeps one partial session record per session per batch (default retention: forever).
	Cold configoptional.Optional[ColdConfig] `mapstructure:"cold"`

	// SessionKeys (inline backends only) are the attributes that name a session, first present
	// wins (DESIGN.md "Run and session"). Default: gen_ai.conversation.id, session.id.
	SessionKeys []string `mapstructure:"session_keys"`

	// JanitorInterval (inline backends only) is how often the retention janitor deletes expired
	// rows and objects from the SQLite and blob backends (ClickHouse uses TTL). Default 1h.
	JanitorInterval time.Duration `mapstructure:"janitor_interval"`

	// Pricing (inline backends only) changes the embedded price table for the summaries' cost.
	Pricing pricing.Config `mapstructure:"pricing"`

	_ struct{}
}

// inline reports whether the configuration sets backends itself (the older form).
func (c *Config) inline() bool {
	if c.Hot.HasValue() && (c.Hot.Get().SQLite.HasValue() || c.Hot.Get().ClickHouse.HasValue()) {
		return true
	}
	if c.Warm.HasValue() && (c.Warm.Get().SQLite.HasValue() || c.Warm.Get().ClickHouse.HasValue()) {
		return true
	}
	return c.Cold.HasValue() && (c.Cold.Get().Parquet.HasValue() || c.Cold.Get().ClickHouse.HasValue())
}

// storageConfig is the runagain_storage configuration equivalent to inline backends. The hot
// tier on ClickHouse is left out: the exporter creates the contrib exporter from its nested
// configuration itself.
func (c *Config) storageConfig() *runagainstorageextension.Config {
	s := runagainstorageextension.NewDefaultConfig()
	if len(c.SessionKeys) > 0 {
		s.SessionKeys = c.SessionKeys
	}
	if c.JanitorInterval > 0 {
		s.JanitorInterval = c.JanitorInterval
	}
	s.Pricing = c.Pricing
	if c.Hot.HasValue() && c.Hot.Get().SQLite.HasValue() {
		h := c.Hot.Get()
		s.Hot = configoptional.Some(runagainstorageextension.HotConfig{Retention: h.Retention,
			SQLite: configoptional.Some(*h.SQLite.Get())})
	}
	if c.Warm.HasValue() && (c.Warm.Get().SQLite.HasValue() || c.Warm.Get().ClickHouse.HasValue()) {
		w := c.Warm.Get()
		s.Warm = configoptional.Some(runagainstorageextension.WarmConfig{Retention: w.Retention, SQLite: w.SQLite, ClickHouse: w.ClickHouse})
	}
	if c.Cold.HasValue() && (c.Cold.Get().Parquet.HasValue() || c.Cold.Get().ClickHouse.HasValue()) {
		k := c.Cold.Get()
		s.Cold = configoptional.Some(runagainstorageextension.ColdConfig{Retention: k.Retention, Parquet: k.Parquet, ClickHouse: k.ClickHouse})
	}
	return s
}

// TierSending is the delivery configuration every tier carries: its own timeout, retry and
// sending queue (exporterhelper), so one tier's outage never blocks another.
type TierSending struct {
	TimeoutConfig exporterhelper.TimeoutConfig                             `mapstructure:",squash"`
	BackOff       configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`
	Queue         configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
}

// HotConfig configures the hot tier's delivery (and, in the older inline form, its backend:
// exactly one of sqlite, clickhouse).
type HotConfig struct {
	// Retention (inline only) is how long rows are kept, measured from ingestion (SQLite). 0
	// keeps them forever. With ClickHouse it becomes the contrib exporter's `ttl`.
	Retention time.Duration `mapstructure:"retention"`
	// SQLite (inline only) is the embedded backend: one SQLite file.
	SQLite configoptional.Optional[SQLiteConfig] `mapstructure:"sqlite"`
	// ClickHouse (inline only) is the contrib clickhouseexporter's own configuration, nested
	// unchanged. Its own timeout, retry_on_failure and sending_queue apply (not the tier-level
	// ones), and its ttl is replaced by the tier's retention.
	ClickHouse configoptional.Optional[clickhouseexporter.Config] `mapstructure:"clickhouse"`

	TierSending `mapstructure:",squash"`
}

// WarmConfig configures the warm tier's delivery (inline form: and its backend).
type WarmConfig struct {
	Retention  time.Duration                             `mapstructure:"retention"`
	SQLite     configoptional.Optional[SQLiteConfig]     `mapstructure:"sqlite"`
	ClickHouse configoptional.Optional[ClickHouseConfig] `mapstructure:"clickhouse"`

	TierSending `mapstructure:",squash"`
}

// ColdConfig configures the cold tier's delivery (inline form: and its backend).
type ColdConfig struct {
	Retention  time.Duration                             `mapstructure:"retention"`
	Parquet    configoptional.Optional[ParquetConfig]    `mapstructure:"parquet"`
	ClickHouse configoptional.Optional[ClickHouseConfig] `mapstructure:"clickhouse"`

	TierSending `mapstructure:",squash"`
}

// The backend settings are the runagain_storage extension's.
type (
	SQLiteConfig     = runagainstorageextension.SQLiteConfig
	ParquetConfig    = runagainstorageextension.ParquetConfig
	ClickHouseConfig = runagainstorageextension.ClickHouseConfig
)

// Validate checks the configuration; errors name the field.
func (c *Config) Validate() error {
	if !c.inline() {
		// The backends are the runagain_storage extension's (it checks them). Settings that only
		// mean something next to an inline backend are refused rather than silently ignored.
		var errs []error
		moved := func(field string) {
			errs = append(errs, fmt.Errorf("%s: set it in the runagain_storage extension (or configure this tier's backend inline)", field))
		}
		if c.Hot.HasValue() && c.Hot.Get().Retention != DefaultHotRetention {
			moved("hot::retention")
		}
		if c.Warm.HasValue() && c.Warm.Get().Retention != DefaultWarmRetention {
			moved("warm::retention")
		}
		if c.Cold.HasValue() && c.Cold.Get().Retention != DefaultColdRetention {
			moved("cold::retention")
		}
		if len(c.SessionKeys) > 0 {
			moved("session_keys")
		}
		if !c.Pricing.IsZero() {
			moved("pricing")
		}
		if c.JanitorInterval != DefaultJanitorInterval {
			moved("janitor_interval")
		}
		return errors.Join(errs...)
	}
	var errs []error
	if c.Hot.HasValue() {
		h := c.Hot.Get()
		errs = append(errs, retention("hot", h.Retention))
		switch {
		case h.SQLite.HasValue() && h.ClickHouse.HasValue():
			errs = append(errs, errors.New("hot: set one backend, `hot::sqlite` or `hot::clickhouse`, not both"))
		case h.SQLite.HasValue():
			errs = append(errs, sqlitePath("hot", h.SQLite.Get()))
		case !h.ClickHouse.HasValue():
			errs = append(errs, errors.New("hot: no backend configured: set `hot::sqlite` or `hot::clickhouse` (or move the backends to the runagain_storage extension)"))
		}
	}
	if c.Warm.HasValue() {
		w := c.Warm.Get()
		errs = append(errs, retention("warm", w.Retention))
		switch {
		case w.SQLite.HasValue() && w.ClickHouse.HasValue():
			errs = append(errs, errors.New("warm: set one backend, `warm::sqlite` or `warm::clickhouse`, not both"))
		case w.SQLite.HasValue():
			errs = append(errs, sqlitePath("warm", w.SQLite.Get()))
		case w.ClickHouse.HasValue():
			errs = append(errs, validateClickHouse(w.ClickHouse.Get(), "warm::clickhouse"))
		default:
			errs = append(errs, errors.New("warm: no backend configured: set `warm::sqlite` or `warm::clickhouse`"))
		}
	}
	if c.Cold.HasValue() {
		k := c.Cold.Get()
		errs = append(errs, retention("cold", k.Retention))
		switch {
		case k.Parquet.HasValue() && k.ClickHouse.HasValue():
			errs = append(errs, errors.New("cold: set one backend, `cold::parquet` or `cold::clickhouse`, not both"))
		case k.Parquet.HasValue():
			if k.Parquet.Get().URL == "" {
				errs = append(errs, errors.New("cold::parquet::url must be set (a gocloud.dev/blob URL or a directory)"))
			}
		case k.ClickHouse.HasValue():
			errs = append(errs, validateClickHouse(k.ClickHouse.Get(), "cold::clickhouse"))
		default:
			errs = append(errs, errors.New("cold: no backend configured: set `cold::parquet` or `cold::clickhouse`"))
		}
	}
	if c.Hot.HasValue() && c.Warm.HasValue() && c.Hot.Get().SQLite.HasValue() && c.Warm.Get().SQLite.HasValue() &&
		c.Hot.Get().SQLite.Get().Path == c.Warm.Get().SQLite.Get().Path {
		errs = append(errs, fmt.Errorf("warm::sqlite::path %q is the hot tier's file: give each tier its own file", c.Warm.Get().SQLite.Get().Path))
	}
	for i, k := range c.SessionKeys {
		if k == "" {
			errs = append(errs, fmt.Errorf("session_keys[%d] must not be empty", i))
		}
	}
	if c.JanitorInterval < 0 {
		errs = append(errs, fmt.Errorf("janitor_interval must not be negative, got %s", c.JanitorInterval))
	}
	if err := c.Pricing.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("pricing::%w", err))
	}
	return errors.Join(errs...)
}

func retention(tier string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%s::retention must not be negative, got %s", tier, d)
	}
	return nil
}

func sqlitePath(tier string, s *SQLiteConfig) error {
	if s.Path == "" {
		return fmt.Errorf("%s::sqlite::path must be set", tier)
	}
	return nil
}

func validateClickHouse(c *ClickHouseConfig, field string) error {
	if c.Endpoint == "" {
		return fmt.Errorf("%s::endpoint must be set", field)
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("%s::endpoint %q: want a URL such as tcp://127.0.0.1:9000 or http://127.0.0.1:8123", field, c.Endpoint)
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

func defaultClickHouse() ClickHouseConfig {
	return ClickHouseConfig{Database: "default", CreateSchema: true, ConnectionParams: map[string]string{}}
}

func (c *Config) hotSending() TierSending {
	if c.Hot.HasValue() {
		return c.Hot.Get().TierSending
	}
	return defaultSending()
}

func (c *Config) warmSending() TierSending {
	if c.Warm.HasValue() {
		return c.Warm.Get().TierSending
	}
	return defaultSending()
}

func (c *Config) coldSending() TierSending {
	if c.Cold.HasValue() {
		return c.Cold.Get().TierSending
	}
	return defaultSending()
}
