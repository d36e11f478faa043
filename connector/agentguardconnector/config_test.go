// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/runagain/runagain/connector/agentguardconnector/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	custom := createDefaultConfig()
	custom.MaxSessions = 1000
	custom.MaxSessionsMiB = 16
	custom.SessionIdleTimeout = 10 * time.Minute
	custom.ExpiryInterval = 30 * time.Second
	custom.MetricsFlushInterval = 10 * time.Second
	custom.MaxSeries = 100
	custom.Exemplars.MaxPerDataPoint = 2
	custom.MetricConventions.AlsoEmitPrevious = true
	custom.Loop.Repeats = 3
	custom.Loop.Window = 5 * time.Minute
	custom.Loop.ConsecutiveTool = 0
	custom.CostSpike.Factor = 3
	custom.CostSpike.MinSessions = 5
	custom.CostSpike.MinCost = 0.01
	custom.ToolErrors.Enabled = false
	custom.ContextPressure.Threshold = 0.5
	custom.ContextPressure.FinishReasons = []string{"length"}
	custom.Patterns.Interval = 10 * time.Second
	custom.Patterns.MaxSeries = 50
	custom.Patterns.RateJump.Window = 30 * time.Minute
	custom.Patterns.RateJump.Factor = 4

	tests := []struct {
		id      component.ID
		want    *Config
		wantErr string
	}{
		{id: component.NewID(metadata.Type), want: createDefaultConfig()},
		{id: component.NewIDWithName(metadata.Type, "custom"), want: custom},
		{id: component.NewIDWithName(metadata.Type, "bad_repeats"), wantErr: "loop.repeats: must be at least 2, got 1"},
		{id: component.NewIDWithName(metadata.Type, "bad_threshold"), wantErr: "tool_errors.threshold: must be in (0, 1], got 1.5"},
		{id: component.NewIDWithName(metadata.Type, "inline_pricing"), wantErr: "pricing"},
		{id: component.NewIDWithName(metadata.Type, "inline_session_keys"), wantErr: "session_keys"},
		{id: component.NewIDWithName(metadata.Type, "no_sessions"), wantErr: "max_sessions: must be positive, got 0"},
		{id: component.NewIDWithName(metadata.Type, "no_sessions_memory"), wantErr: "max_sessions_mib: must be positive, got -1"},
		{id: component.NewIDWithName(metadata.Type, "no_flush"), wantErr: "metrics_flush_interval: must be a positive duration, got 0s"},
		{id: component.NewIDWithName(metadata.Type, "bad_pattern_series"), wantErr: "patterns.max_series: must be positive, got 0"},
		{id: component.NewIDWithName(metadata.Type, "bad_pattern_factor"), wantErr: "patterns.rate_jump.factor: must be greater than 1, got 1"},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			err = sub.Unmarshal(cfg)
			if err == nil {
				err = confmap.Validate(cfg)
			}
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			got := cfg.(*Config)
			// Compiled regexes are internal state; compare the configured values.
			assert.Equal(t, tt.want, got)
		})
	}
}
