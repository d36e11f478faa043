// SPDX-License-Identifier: Apache-2.0

package runagainstorageextension

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/runagain/runagain/extension/runagainstorageextension/internal/metadata"
)

func load(t *testing.T, name string) (*Config, error) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	require.NoError(t, err)
	if err := sub.Unmarshal(cfg); err != nil {
		return nil, err
	}
	return cfg, confmap.Validate(cfg)
}

func TestLoadConfig(t *testing.T) {
	t.Run("minimal", func(t *testing.T) {
		cfg, err := load(t, "")
		require.NoError(t, err)
		require.True(t, cfg.Hot.HasValue())
		assert.Equal(t, "/tmp/runagain/hot.db", cfg.Hot.Get().SQLite.Get().Path)
		assert.Equal(t, DefaultHotRetention, cfg.Hot.Get().Retention)
		assert.False(t, cfg.Warm.HasValue(), "a tier left out is not written")
		assert.False(t, cfg.Cold.HasValue())
		assert.False(t, cfg.Payloads.HasValue())
		assert.Equal(t, []string{"gen_ai.conversation.id", "session.id"}, cfg.SessionKeys)
		assert.Equal(t, DefaultJanitorInterval, cfg.JanitorInterval)
	})
	t.Run("full", func(t *testing.T) {
		cfg, err := load(t, "full")
		require.NoError(t, err)
		assert.Equal(t, []string{"gen_ai.conversation.id", "session.id", "langfuse.session.id"}, cfg.SessionKeys)
		assert.Equal(t, 30*time.Minute, cfg.JanitorInterval)
		hot := cfg.Hot.Get()
		assert.Equal(t, 24*time.Hour, hot.Retention)
		assert.False(t, hot.SQLite.HasValue())
		assert.Equal(t, "otel", hot.ClickHouse.Get().Database)
		assert.True(t, hot.ClickHouse.Get().CreateSchema, "default create_schema")
		warm := cfg.Warm.Get()
		assert.Equal(t, 720*time.Hour, warm.Retention)
		assert.Equal(t, "secret", string(warm.ClickHouse.Get().Password))
		assert.Equal(t, "5s", warm.ClickHouse.Get().ConnectionParams["dial_timeout"])
		assert.Equal(t, DefaultColdRetention, cfg.Cold.Get().Retention)
		assert.Equal(t, "s3://runagain-cold?region=eu-west-1&prefix=sessions/", cfg.Cold.Get().Parquet.Get().URL)
		assert.Equal(t, "s3://runagain-payloads?region=eu-west-1", cfg.Payloads.Get().URL)
		assert.True(t, cfg.Pricing.AddReasoningTokens)
		require.Len(t, cfg.Pricing.Models, 1)
		assert.Equal(t, "my-fine-tune", cfg.Pricing.Models[0].Model)
		assert.InDelta(t, 12.0, cfg.Pricing.Models[0].OutputMTok, 0)
	})
	for name, want := range map[string]string{
		"twobackends": "hot: set one backend",
		"samefile":    `warm::sqlite::path "/tmp/x.db" is the hot tier's file`,
		"nobackend":   "warm: no backend configured",
		"badendpoint": "cold::clickhouse::endpoint",
		"badpayloads": `payloads::url: scheme "ftp" not supported`,
		"badcold":     `cold::parquet::url: scheme "s4" not supported`,
		"badprice":    "pricing::models[0].model",
		"negative":    "hot::retention must not be negative",
		"nokeys":      "session_keys: must name at least one attribute",
		"unknown":     "jounral",
		"typo":        "hot::retentoin: no such setting (did you mean retention?)",
		"days":        `hot::retention: "7d" is not a duration (Go durations: 300ms, 90s, 30m, 168h; days are hours: 7d is 168h)`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := load(t, name)
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}

// TestFailureSignaturesValidated: failure_signatures is ingest (the default) or read; anything
// else fails with the field named.
func TestFailureSignaturesValidated(t *testing.T) {
	cfg := NewDefaultConfig()
	assert.Equal(t, FailureSignaturesIngest, cfg.FailureSignatures)
	require.NoError(t, cfg.ValidateForReading())
	cfg.FailureSignatures = FailureSignaturesRead
	require.NoError(t, cfg.ValidateForReading())
	cfg.FailureSignatures = "later"
	assert.ErrorContains(t, cfg.ValidateForReading(), `failure_signatures: want "ingest" or "read", got "later"`)
}
