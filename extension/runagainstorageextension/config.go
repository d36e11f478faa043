// SPDX-License-Identifier: Apache-2.0

package runagainstorageextension // import "github.com/runagain/runagain/extension/runagainstorageextension"

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"
	"gocloud.dev/blob"

	"github.com/runagain/runagain/internal/confdur"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/pricing"
)

// Default retentions (docs/architecture.md "Storage tiers"); the cold tier keeps records forever (0).
const (
	DefaultHotRetention    = 7 * 24 * time.Hour
	DefaultWarmRetention   = 90 * 24 * time.Hour
	DefaultColdRetention   = time.Duration(0)
	DefaultJanitorInterval = time.Hour
)

// Config is the runagain_storage extension's configuration: where each tier lives and for how
// long, where offloaded payloads go, which attributes name a session and how calls are priced.
// The collector's components and the runagain CLI (`--config`) read this one section, so they
// cannot disagree. Each tier is optional; the tiered exporter writes the tiers set here.
type Config struct {
	// Hot keeps full spans and log records (default retention 7 days).
	Hot configoptional.Optional[HotConfig] `mapstructure:"hot"`
	// Warm keeps span summaries and key events, no payloads (default retention 90 days).
	Warm configoptional.Optional[WarmConfig] `mapstructure:"warm"`
	// Cold keeps one partial session record per session per batch (default: forever).
	Cold configoptional.Optional[ColdConfig] `mapstructure:"cold"`
	// Payloads is the blob bucket payload_offload writes to and the CLI reads from.
	Payloads configoptional.Optional[PayloadsConfig] `mapstructure:"payloads"`
	// Datasets is the dataset store (internal/dataset) whose runs are pinned: the janitors never
	// delete them. The CLI's dataset commands use it too.
	Datasets configoptional.Optional[DatasetsConfig] `mapstructure:"datasets"`

	// SessionKeys are the attributes that name a session, first present wins
	// (docs/architecture.md "Run and session"). Default: gen_ai.conversation.id, session.id.
	SessionKeys []string `mapstructure:"session_keys"`

	// JanitorInterval is how often the retention janitors delete expired rows and objects from
	// the SQLite and Parquet backends (ClickHouse uses TTL). They also run once at start.
	JanitorInterval time.Duration `mapstructure:"janitor_interval"`

	// Pricing changes the embedded genai-prices table: one table with these overrides prices
	// every LLM call (agent_guard's runagain.cost, the tiers' summaries, the CLI's views).
	Pricing pricing.Config `mapstructure:"pricing"`

	// FailureSignatures says when the run index computes each failing run's failure signature
	// (internal/patterns): FailureSignaturesIngest (default) when the hot and warm writers index
	// the run, FailureSignaturesRead when a reader lists patterns (runagain patterns, the UI,
	// agent_guard's watcher): no cost on the write path, each listing signs every failing run
	// of its range again.
	FailureSignatures string `mapstructure:"failure_signatures"`

	_ struct{}
}

// Values of Config.FailureSignatures.
const (
	FailureSignaturesIngest = "ingest"
	FailureSignaturesRead   = "read"
)

// HotConfig configures the hot tier: exactly one of sqlite, clickhouse.
type HotConfig struct {
	// Retention is how long rows are kept, measured from ingestion (SQLite). 0 keeps them
	// forever. With ClickHouse it becomes the tables' TTL (measured from span/record time).
	Retention time.Duration `mapstructure:"retention"`
	// SQLite is the embedded backend: one SQLite file.
	SQLite configoptional.Optional[SQLiteConfig] `mapstructure:"sqlite"`
	// ClickHouse writes the contrib clickhouseexporter's otel_traces and otel_logs tables (the
	// tiered exporter creates that exporter from these settings and its own hot sending queue).
	ClickHouse configoptional.Optional[ClickHouseConfig] `mapstructure:"clickhouse"`
}

// WarmConfig configures the warm tier: exactly one of sqlite, clickhouse.
type WarmConfig struct {
	// Retention is how long summaries are kept, measured from ingestion. 0 keeps them forever.
	Retention  time.Duration                             `mapstructure:"retention"`
	SQLite     configoptional.Optional[SQLiteConfig]     `mapstructure:"sqlite"`
	ClickHouse configoptional.Optional[ClickHouseConfig] `mapstructure:"clickhouse"`
}

// ColdConfig configures the cold tier: exactly one of parquet, clickhouse.
type ColdConfig struct {
	// Retention is how long session records are kept, measured from ingestion. 0 (the
	// default) keeps them forever.
	Retention  time.Duration                             `mapstructure:"retention"`
	Parquet    configoptional.Optional[ParquetConfig]    `mapstructure:"parquet"`
	ClickHouse configoptional.Optional[ClickHouseConfig] `mapstructure:"clickhouse"`
	// JoinWindow bounds what is remembered of recent traces so the halves of a joined run
	// (the agent's LLM spans and the proxy's exchanges of the same calls), arriving in separate
	// batches, add their tokens and cost to the session record once (rule.Window).
	JoinWindow JoinWindowConfig `mapstructure:"join_window"`
}

// JoinWindowConfig configures the counting rule across batches (internal/runview/rule.Window).
type JoinWindowConfig struct {
	// MaxSpans bounds the spans remembered, in all traces (about 230 bytes each of Go heap,
	// measured at the bound; the least recently seen trace is forgotten first). 0 applies the
	// rule within each batch only.
	MaxSpans int `mapstructure:"max_spans"`
	// IdleTimeout forgets a trace with no span for this long.
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`
}

// Default join window of the cold tier.
const (
	DefaultJoinWindowSpans = 100000
	DefaultJoinWindowIdle  = 5 * time.Minute
)

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

// PayloadsConfig configures the payload bucket and its pack files (internal/payloadref).
type PayloadsConfig struct {
	// URL is a gocloud.dev/blob bucket URL: file:///dir?create_dir=true, s3://bucket, gs://,
	// azblob://, mem:// (tests); query parameters are the driver's plus prefix=some/folder/.
	// The extension opens it once at start: payload_offload writes through it, the retention
	// janitor collects it, the CLI reads from it.
	URL string `mapstructure:"url"`
	// Dir is the local data directory of the pack layout: Dir/staging holds the open segment and
	// sealed packs not yet uploaded (fsynced before a batch is acknowledged), Dir/payload-index.db
	// the SQLite digest index. Default ./data/payloads. Empty: one object per digest (the layout
	// before packs: one PUT per object).
	Dir string `mapstructure:"dir"`
	// Pack sets when the open segment is sealed and uploaded.
	Pack PackConfig `mapstructure:"pack"`
	// DedupCacheSize is how many object locations are cached in memory in front of the digest
	// index (hashicorp/golang-lru, about 270 bytes each of Go heap, measured at the bound); single objects: keys remembered as
	// present. Default (and 0) 100000.
	DedupCacheSize int `mapstructure:"dedup_cache_size"`
	// CompressionLevel is the zstd level: fastest, default, better or best. "default" is zstd's
	// default for single objects and packfile.DefaultLevel (fastest, over 256 KiB blocks)
	// for pack blocks. Empty is "default".
	CompressionLevel string `mapstructure:"compression_level"`
}

// Payload store defaults.
const (
	DefaultDedupCacheSize   = 100000
	DefaultCompressionLevel = "default"
)

// PackConfig sets the size and age limits of a pack. Packs are sealed by size: issue 17's target is
// at most one PUT-class request per 8 MiB of payload bytes on S3; the age limit is for a trickle.
type PackConfig struct {
	// MaxSize in bytes of the pack as uploaded (objects compressed in 256 KiB zstd blocks, plus
	// the trailer): the segment is sealed before it could reach this. Default 16777216 (16 MiB:
	// below the AWS transfer manager's multipart threshold, so one PutObject per pack on S3); at
	// least 65536.
	MaxSize int64 `mapstructure:"max_size"`
	// MaxAge: the segment is sealed this long after its first object, so readers on other
	// machines see objects at most about this late (the CLI on the collector's machine reads
	// staged packs at once). Default 60s.
	MaxAge time.Duration `mapstructure:"max_age"`
}

// DefaultPack are the pack limits by default.
var DefaultPack = PackConfig{MaxSize: 16 << 20, MaxAge: 60 * time.Second}

// Validate checks the pack limits; errors name the field under prefix.
func (p PackConfig) Validate(prefix string) error {
	var errs []error
	if p.MaxSize < 64<<10 || p.MaxSize > 5<<30 {
		errs = append(errs, fmt.Errorf("%smax_size: must be between 65536 and 5368709120 bytes, got %d", prefix, p.MaxSize))
	}
	if p.MaxAge <= 0 {
		errs = append(errs, fmt.Errorf("%smax_age: must be positive, got %s", prefix, p.MaxAge))
	}
	return errors.Join(errs...)
}

// DatasetsConfig configures the dataset store.
type DatasetsConfig struct {
	// URL is a gocloud.dev/blob bucket URL, e.g. file:///var/lib/runagain/datasets?create_dir=true.
	URL string `mapstructure:"url"`
}

// ClickHouseConfig configures a ClickHouse connection and database.
type ClickHouseConfig struct {
	// Endpoint is a clickhouse-go DSN: tcp://host:9000 (native protocol) or http(s)://host:8123.
	Endpoint string              `mapstructure:"endpoint"`
	Username string              `mapstructure:"username"`
	Password configopaque.String `mapstructure:"password"`
	// Database holding the tables; default "default".
	Database string `mapstructure:"database"`
	// ConnectionParams are extra DSN parameters (dial_timeout, compress, secure...).
	ConnectionParams map[string]string `mapstructure:"connection_params"`
	// CreateSchema runs the DDL (CREATE DATABASE/TABLE IF NOT EXISTS) before the first write.
	// Default true.
	CreateSchema bool `mapstructure:"create_schema"`
	// ClusterName adds ON CLUSTER to the DDL.
	ClusterName string `mapstructure:"cluster_name"`
}

var _ component.Config = (*Config)(nil)

func createDefaultConfig() component.Config {
	return &Config{
		Hot: configoptional.Default(HotConfig{
			Retention:  DefaultHotRetention,
			SQLite:     configoptional.Default(SQLiteConfig{Path: "./data/hot.db"}),
			ClickHouse: configoptional.Default(defaultClickHouse()),
		}),
		Warm: configoptional.Default(WarmConfig{
			Retention:  DefaultWarmRetention,
			SQLite:     configoptional.Default(SQLiteConfig{Path: "./data/warm.db"}),
			ClickHouse: configoptional.Default(defaultClickHouse()),
		}),
		Cold: configoptional.Default(ColdConfig{
			Retention:  DefaultColdRetention,
			Parquet:    configoptional.Default(ParquetConfig{URL: "./data/cold"}),
			ClickHouse: configoptional.Default(defaultClickHouse()),
			JoinWindow: JoinWindowConfig{MaxSpans: DefaultJoinWindowSpans, IdleTimeout: DefaultJoinWindowIdle},
		}),
		Payloads: configoptional.Default(PayloadsConfig{URL: "file://./data/blobs?create_dir=true&metadata=skip", Dir: "./data/payloads", Pack: DefaultPack,
			DedupCacheSize: DefaultDedupCacheSize, CompressionLevel: DefaultCompressionLevel}),
		Datasets:          configoptional.Default(DatasetsConfig{URL: "file://./data/datasets?create_dir=true&metadata=skip"}),
		SessionKeys:       append([]string(nil), genai.DefaultSessionKeys...),
		JanitorInterval:   DefaultJanitorInterval,
		FailureSignatures: FailureSignaturesIngest,
	}
}

func defaultClickHouse() ClickHouseConfig {
	return ClickHouseConfig{Database: "default", CreateSchema: true, ConnectionParams: map[string]string{}}
}

// NewDefaultConfig returns the default configuration (every tier unset).
func NewDefaultConfig() *Config { return createDefaultConfig().(*Config) }

// Unmarshal decodes the section; a duration setting whose value is not a duration is an error
// naming its path, the value and what to write, and a key that names no setting is named by its
// path with the nearest setting (internal/confdur: the collector's decoder drops the value from
// its error and names a Go type for an unknown key).
func (c *Config) Unmarshal(conf *confmap.Conf) error { return confdur.Decode(conf, c) }

// Validate checks the configuration; each error names the field. Beyond ValidateForReading, each
// local SQLite file (hot::sqlite::path, warm::sqlite::path) must be one Start can create or
// write (writableSQLite), so that `otelcol-runagain validate` fails as the start would.
func (c *Config) Validate() error {
	return errors.Join(c.ValidateForReading(), c.validateWritable())
}

// ValidateForReading is Validate without the checks that the local files can be written: the
// CLI reads the tiers read-only, also from a data directory it may not write (another user's,
// a read-only mount).
func (c *Config) ValidateForReading() error {
	var errs []error
	switch c.FailureSignatures {
	case "", FailureSignaturesIngest, FailureSignaturesRead:
	default:
		errs = append(errs, fmt.Errorf("failure_signatures: want %q or %q, got %q", FailureSignaturesIngest, FailureSignaturesRead, c.FailureSignatures))
	}
	if c.Hot.HasValue() {
		h := c.Hot.Get()
		errs = append(errs, retention("hot", h.Retention))
		switch {
		case h.SQLite.HasValue() && h.ClickHouse.HasValue():
			errs = append(errs, errors.New("hot: set one backend, `hot::sqlite` or `hot::clickhouse`, not both"))
		case h.SQLite.HasValue():
			errs = append(errs, sqlitePath("hot", h.SQLite.Get()))
		case h.ClickHouse.HasValue():
			errs = append(errs, h.ClickHouse.Get().validate("hot::clickhouse"))
		default:
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
		if k.JoinWindow.MaxSpans < 0 {
			errs = append(errs, fmt.Errorf("cold::join_window::max_spans: must not be negative (0: within each batch only), got %d", k.JoinWindow.MaxSpans))
		}
		if k.JoinWindow.MaxSpans > 0 && k.JoinWindow.IdleTimeout <= 0 {
			errs = append(errs, fmt.Errorf("cold::join_window::idle_timeout: must be a positive duration, got %s", k.JoinWindow.IdleTimeout))
		}
		switch {
		case k.Parquet.HasValue() && k.ClickHouse.HasValue():
			errs = append(errs, errors.New("cold: set one backend, `cold::parquet` or `cold::clickhouse`, not both"))
		case k.Parquet.HasValue():
			switch u := k.Parquet.Get().URL; {
			case u == "":
				errs = append(errs, errors.New("cold::parquet::url must be set (a gocloud.dev/blob URL or a directory)"))
			case strings.Contains(u, "://"):
				// a URL: its scheme must have a gocloud.dev/blob driver linked in (else it fails only at start)
				errs = append(errs, validateBucketURL("cold::parquet::url", u))
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
	if c.Payloads.HasValue() {
		errs = append(errs, validateBucketURL("payloads::url", c.Payloads.Get().URL))
		p := c.Payloads.Get()
		if p.Dir != "" {
			errs = append(errs, p.Pack.Validate("payloads::pack::"))
		}
		if p.DedupCacheSize < 0 {
			errs = append(errs, fmt.Errorf("payloads::dedup_cache_size: must not be negative, got %d", p.DedupCacheSize))
		}
		if ok, _ := zstd.EncoderLevelFromString(p.CompressionLevel); !ok && p.CompressionLevel != "" {
			errs = append(errs, fmt.Errorf("payloads::compression_level: %q is not fastest, default, better or best", p.CompressionLevel))
		}
	}
	if c.Datasets.HasValue() {
		errs = append(errs, validateBucketURL("datasets::url", c.Datasets.Get().URL))
	}
	if len(c.SessionKeys) == 0 {
		errs = append(errs, errors.New("session_keys: must name at least one attribute"))
	}
	for i, k := range c.SessionKeys {
		if k == "" {
			errs = append(errs, fmt.Errorf("session_keys[%d] must not be empty", i))
		}
	}
	if c.JanitorInterval <= 0 {
		errs = append(errs, fmt.Errorf("janitor_interval must be positive, got %s", c.JanitorInterval))
	}
	if err := c.Pricing.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("pricing::%w", err))
	}
	return errors.Join(errs...)
}

func validateBucketURL(field, s string) error {
	if s == "" {
		return fmt.Errorf("%s: required (e.g. file:///var/lib/runagain/blobs?create_dir=true, s3://bucket)", field)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	if !blob.DefaultURLMux().ValidBucketScheme(u.Scheme) {
		return fmt.Errorf("%s: scheme %q not supported (file, s3, gs, azblob, mem)", field, u.Scheme)
	}
	return nil
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

// localDataDirs are the directories of the local SQLite files (hot, warm): the data directories
// Start locks (LockFile), so that a second collector on the same files fails at once.
func (c *Config) localDataDirs() []string {
	var dirs []string
	if c.Hot.HasValue() && c.Hot.Get().SQLite.HasValue() && c.Hot.Get().SQLite.Get().Path != "" {
		dirs = append(dirs, filepath.Dir(c.Hot.Get().SQLite.Get().Path))
	}
	if c.Warm.HasValue() && c.Warm.Get().SQLite.HasValue() && !c.Warm.Get().ClickHouse.HasValue() && c.Warm.Get().SQLite.Get().Path != "" {
		dirs = append(dirs, filepath.Dir(c.Warm.Get().SQLite.Get().Path))
	}
	return dirs
}
