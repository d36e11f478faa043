package tieredexporter

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/runagain/runagain/exporter/tieredexporter/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	load := func(t *testing.T, name string) (*Config, error) {
		cfg := NewFactory().CreateDefaultConfig().(*Config)
		sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
		require.NoError(t, err)
		if err := sub.Unmarshal(cfg); err != nil {
			return nil, err
		}
		return cfg, confmap.Validate(cfg)
	}

	t.Run("minimal", func(t *testing.T) {
		cfg, err := load(t, "")
		require.NoError(t, err)
		hot := cfg.Hot.Get()
		assert.Equal(t, "/tmp/runagain/hot.db", hot.SQLite.Get().Path)
		assert.Equal(t, DefaultHotRetention, hot.Retention)
		assert.True(t, hot.Queue.HasValue())
	})
	t.Run("custom", func(t *testing.T) {
		cfg, err := load(t, "custom")
		require.NoError(t, err)
		hot := cfg.Hot.Get()
		assert.Equal(t, 24*time.Hour, hot.Retention)
		assert.Equal(t, 10*time.Second, hot.TimeoutConfig.Timeout)
		assert.Equal(t, 10*time.Minute, hot.BackOff.MaxElapsedTime)
		assert.EqualValues(t, 5000, hot.Queue.Get().QueueSize)
		assert.Equal(t, []string{"gen_ai.conversation.id", "session.id", "langfuse.session.id"}, cfg.SessionKeys)
	})
	t.Run("all", func(t *testing.T) {
		cfg, err := load(t, "all")
		require.NoError(t, err)
		hot := cfg.Hot.Get()
		assert.False(t, hot.SQLite.HasValue())
		ch := hot.ClickHouse.Get()
		assert.Equal(t, "tcp://127.0.0.1:9000", ch.Endpoint)
		assert.Equal(t, "otel", ch.Database)
		assert.Equal(t, "otel_traces", ch.TracesTableName, "contrib defaults fill the nested block")
		assert.EqualValues(t, 500, ch.QueueSettings.Get().QueueSize)
		warm := cfg.Warm.Get()
		assert.Equal(t, 720*time.Hour, warm.Retention)
		assert.Equal(t, "runagain", warm.ClickHouse.Get().Username)
		assert.Equal(t, "5s", warm.ClickHouse.Get().ConnectionParams["dial_timeout"])
		assert.True(t, warm.ClickHouse.Get().CreateSchema)
		cold := cfg.Cold.Get()
		assert.Equal(t, DefaultColdRetention, cold.Retention)
		assert.Equal(t, "s3://runagain-cold?region=eu-west-1&prefix=sessions/", cold.Parquet.Get().URL)
		assert.Equal(t, 30*time.Minute, cfg.JanitorInterval)
	})
	t.Run("embedded", func(t *testing.T) {
		cfg, err := load(t, "embedded")
		require.NoError(t, err)
		assert.Equal(t, DefaultWarmRetention, cfg.Warm.Get().Retention)
		assert.Equal(t, "/data/warm.db", cfg.Warm.Get().SQLite.Get().Path)
		assert.Equal(t, "default", cfg.Cold.Get().ClickHouse.Get().Database)
		assert.Equal(t, DefaultJanitorInterval, cfg.JanitorInterval)
	})
	t.Run("delivery", func(t *testing.T) {
		cfg, err := load(t, "delivery")
		require.NoError(t, err)
		assert.False(t, cfg.inline())
		assert.Equal(t, "runagain_storage/gateway", cfg.Storage.String())
		hot := cfg.hotSending()
		assert.Equal(t, 7*time.Second, hot.TimeoutConfig.Timeout)
		assert.EqualValues(t, 1234, hot.Queue.Get().QueueSize)
		assert.Equal(t, defaultSending(), cfg.warmSending(), "a tier left out gets the default delivery")
	})
	t.Run("nohot", func(t *testing.T) {
		cfg, err := load(t, "nohot")
		require.NoError(t, err, "an empty tiered writes the tiers of the runagain_storage extension")
		assert.False(t, cfg.inline())
	})
	for name, want := range map[string]string{
		"sessionkeysmoved": "session_keys: set it in the runagain_storage extension",
		"nobackend":        "hot::retention: set it in the runagain_storage extension",
		"negative":         "hot::retention",
		"unknown":          "jounral",
		"twobackends":      "warm: set one backend",
		"warmnobackend":    "warm::retention: set it in the runagain_storage extension",
		"coldnourl":        "cold::parquet::url",
		"badendpoint":      "cold::clickhouse::endpoint",
		"contribinvalid":   "endpoint must be specified",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := load(t, name)
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}
