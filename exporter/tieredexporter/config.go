package tieredexporter // import "github.com/runagain/runagain/exporter/tieredexporter"

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/clickhouseexporter"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

// Config is the tiered exporter's configuration. Each tier is optional; at least one must be set.
type Config struct {
	// Hot keeps full spans and log records (DESIGN.md: default retention 7 days).
	Hot configoptional.Optional[HotConfig] `mapstructure:"hot"`
	// Warm keeps span summaries and key events, no payloads (default retention 90 days).
	Warm configoptional.Optional[WarmConfig] `mapstructure:"warm"`
	// Cold keeps one partial session record per session per batch (default retention: forever).
	Cold configoptional.Optional[ColdConfig] `mapstructure:"cold"`

	// SessionKeys are the attributes that name a session, first present wins
	// (DESIGN.md "Run and session"). Default: gen_ai.conversation.id, session.id.
	SessionKeys []string `mapstructure:"session_keys"`

	// JanitorInterval is how often the retention janitor deletes expired rows and objects from
	// the SQLite and blob backends (ClickHouse uses TTL). It also runs once at start. Default 1h.
	JanitorInterval time.Duration `mapstructure:"janitor_interval"`

	_ struct{}
}

// TierSending is the delivery configuration every tier carries: its own timeout, retry and
// sending queue (exporterhelper), so one tier's outage never blocks another.
type TierSending struct {
	TimeoutConfig exporterhelper.TimeoutConfig                             `mapstructure:",squash"`
	BackOff       configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`
	Queue         configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
}

// HotConfig configures the hot tier: exactly one of sqlite, clickhouse.
type HotConfig struct {
	// Retention is how long rows are kept, measured from ingestion (SQLite). 0 keeps them forever.
	// With ClickHouse it becomes the contrib exporter's `ttl` (measured from span/record time).
	Retention time.Duration `mapstructure:"retention"`
	// SQLite is the embedded backend: one SQLite file.
	SQLite configoptional.Optional[SQLiteConfig] `mapstructure:"sqlite"`
	// ClickHouse is the contrib clickhouseexporter's own configuration, nested unchanged. Its
	// own timeout, retry_on_failure and sending_queue apply (not the tier-level ones), and its
	// ttl is replaced by the tier's retention.
	ClickHouse configoptional.Optional[clickhouseexporter.Config] `mapstructure:"clickhouse"`

	TierSending `mapstructure:",squash"`
}

// WarmConfig configures the warm tier: exactly one of sqlite, clickhouse.
type WarmConfig struct {
	// Retention is how long summaries are kept, measured from ingestion. 0 keeps them forever.
	Retention  time.Duration                             `mapstructure:"retention"`
	SQLite     configoptional.Optional[SQLiteConfig]     `mapstructure:"sqlite"`
	ClickHouse configoptional.Optional[ClickHouseConfig] `mapstructure:"clickhouse"`

	TierSending `mapstructure:",squash"`
}

// ColdConfig configures the cold tier: exactly one of parquet, clickhouse.
type ColdConfig struct {
	// Retention is how long session records are kept, measured from ingestion. 0 (the
	// default) keeps them forever.
	Retention  time.Duration                             `mapstructure:"retention"`
	Parquet    configoptional.Optional[ParquetConfig]    `mapstructure:"parquet"`
	ClickHouse configoptional.Optional[ClickHouseConfig] `mapstructure:"clickhouse"`

	TierSending `mapstructure:",squash"`
}

// SQLiteConfig configures a SQLite backend.
type SQLiteConfig struct {
	// Path of the SQLite file; its directory is created if missing.
	Path string `mapstructure:"path"`
}

// ParquetConfig configures the cold tier's Parquet files on blob storage.
type ParquetConfig struct {
	// URL is a gocloud.dev/blob bucket URL (s3://bucket?region=..&prefix=cold/, gs://, azblob://,
	// file:///abs/dir, mem://), or a plain local directory path (created if missing).
	URL string `mapstructure:"url"`
}

// ClickHouseConfig configures runagain's own ClickHouse tables (warm and cold tiers).
type ClickHouseConfig struct {
	// Endpoint is a clickhouse-go DSN: tcp://host:9000 (native protocol) or http(s)://host:8123.
	Endpoint string              `mapstructure:"endpoint"`
	Username string              `mapstructure:"username"`
	Password configopaque.String `mapstructure:"password"`
	// Database holding the tables; default "default".
	Database string `mapstructure:"database"`
	// ConnectionParams are extra DSN parameters (dial_timeout, compress, secure...).
	ConnectionParams map[string]string `mapstructure:"connection_params"`
	// CreateSchema runs the DDL (CREATE DATABASE/TABLE IF NOT EXISTS) at start. Default true.
	CreateSchema bool `mapstructure:"create_schema"`
	// ClusterName adds ON CLUSTER to the DDL.
	ClusterName string `mapstructure:"cluster_name"`
}

// Validate checks the configuration; errors name the field.
func (c *Config) Validate() error {
	if !c.Hot.HasValue() && !c.Warm.HasValue() && !c.Cold.HasValue() {
		return errors.New("no tier configured: set at least one of `hot`, `warm`, `cold`")
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
			errs = append(errs, errors.New("hot: no backend configured: set `hot::sqlite` or `hot::clickhouse`"))
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
			errs = append(errs, w.ClickHouse.Get().validate("warm::clickhouse"))
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
			errs = append(errs, k.ClickHouse.Get().validate("cold::clickhouse"))
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

func (c *ClickHouseConfig) validate(field string) error {
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
