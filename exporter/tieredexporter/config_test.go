// SPDX-License-Identifier: Apache-2.0

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

	t.Run("empty", func(t *testing.T) {
		cfg, err := load(t, "")
		require.NoError(t, err, "an empty tiered writes the tiers of the runagain_storage extension")
		assert.Equal(t, defaultSending(), cfg.hotSending())
		assert.True(t, cfg.hotSending().Queue.HasValue())
	})
	t.Run("delivery", func(t *testing.T) {
		cfg, err := load(t, "delivery")
		require.NoError(t, err)
		assert.Equal(t, "runagain_storage/gateway", cfg.Storage.String())
		hot := cfg.hotSending()
		assert.Equal(t, 7*time.Second, hot.TimeoutConfig.Timeout)
		assert.EqualValues(t, 1234, hot.Queue.Get().QueueSize)
		assert.Equal(t, defaultSending(), cfg.warmSending(), "a tier left out gets the default delivery")
	})
	t.Run("custom", func(t *testing.T) {
		cfg, err := load(t, "custom")
		require.NoError(t, err)
		hot := cfg.hotSending()
		assert.Equal(t, 10*time.Second, hot.TimeoutConfig.Timeout)
		assert.Equal(t, 10*time.Minute, hot.BackOff.MaxElapsedTime)
		assert.EqualValues(t, 5000, hot.Queue.Get().QueueSize)
		assert.False(t, cfg.coldSending().Queue.HasValue())
	})
	for name, want := range map[string]string{
		"inline":      "sqlite",
		"sessionkeys": "session_keys",
		"unknown":     "jounral",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := load(t, name)
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}
