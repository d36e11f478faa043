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
	for name, want := range map[string]string{
		"nohot":     "no tier configured",
		"nobackend": "hot::sqlite",
		"negative":  "hot::retention",
		"unknown":   "jounral",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := load(t, name)
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}
