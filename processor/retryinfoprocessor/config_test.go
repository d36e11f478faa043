// SPDX-License-Identifier: Apache-2.0

package retryinfoprocessor

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/runagain/runagain/processor/retryinfoprocessor/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	for _, tc := range []struct {
		id      component.ID
		want    *Config
		wantErr string
	}{
		{id: component.NewID(metadata.Type), want: &Config{OverloadDelay: time.Second, UnavailableDelay: 5 * time.Second}},
		{id: component.NewIDWithName(metadata.Type, "custom"), want: &Config{OverloadDelay: 2 * time.Second, UnavailableDelay: 10 * time.Second}},
		{id: component.NewIDWithName(metadata.Type, "too_short"), wantErr: "overload_delay: must be between 1s and 1h0m0s (Retry-After is whole seconds), got 500ms"},
	} {
		t.Run(tc.id.String(), func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(tc.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, cfg)
		})
	}
	long := &Config{OverloadDelay: time.Second, UnavailableDelay: 2 * time.Hour}
	assert.ErrorContains(t, long.Validate(), "unavailable_delay: must be between")
	fraction := &Config{OverloadDelay: 1500 * time.Millisecond, UnavailableDelay: 5 * time.Second}
	assert.ErrorContains(t, fraction.Validate(), "overload_delay: must be whole seconds")
}
