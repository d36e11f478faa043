// SPDX-License-Identifier: Apache-2.0

package confdur

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"
)

type inner struct {
	Retention time.Duration `mapstructure:"retention"`
	Name      string        `mapstructure:"name"`
}

type common struct {
	Interval time.Duration `mapstructure:"interval"`
}

type cfg struct {
	common   `mapstructure:",squash"`
	Hot      configoptional.Optional[inner] `mapstructure:"hot"`
	Plain    inner                          `mapstructure:"plain"`
	Rules    []inner                        `mapstructure:"rules"`
	ByName   map[string]inner               `mapstructure:"by_name"`
	Timeout  time.Duration                  `mapstructure:"timeout"`
	Disabled time.Duration                  `mapstructure:"-"`
}

// TestCheck: every refused duration is named by its full path with its value, through optional,
// squashed, nested, slice and map fields; valid values, 0 and other settings pass.
func TestCheck(t *testing.T) {
	conf := confmap.NewFromStringMap(map[string]any{
		"interval": "5 minutes",
		"hot":      map[string]any{"retention": "7d", "name": "10"},
		"plain":    map[string]any{"retention": "90s"},
		"rules":    []any{map[string]any{"retention": "1h"}, map[string]any{"retention": "lots"}},
		"by_name":  map[string]any{"a": map[string]any{"retention": 10}},
		"timeout":  0,
	})
	err := Check(conf, &cfg{})
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	assert.Equal(t, []string{
		`by_name::a::retention: 10 is a number, not a duration: give its unit (10s, 10m, 10h; Go durations, 0 stays 0)`,
		`hot::retention: "7d" is not a duration (Go durations: 300ms, 90s, 30m, 168h; days are hours: 7d is 168h)`,
		`interval: "5 minutes" is not a duration (Go durations: 300ms, 90s, 30m, 168h)`,
		`rules::1::retention: "lots" is not a duration (Go durations: 300ms, 90s, 30m, 168h)`,
	}, lines)

	ok := confmap.NewFromStringMap(map[string]any{"interval": "30s", "hot": map[string]any{"retention": "168h"}, "timeout": "0"})
	assert.NoError(t, Check(ok, &cfg{}))
	assert.NoError(t, Check(nil, &cfg{}))
}

type withRemain struct {
	Known string         `mapstructure:"known"`
	Rest  map[string]any `mapstructure:",remain"`
}

type outer struct {
	Hot    configoptional.Optional[inner] `mapstructure:"hot"`
	Free   withRemain                     `mapstructure:"free"`
	Extra  map[string]string              `mapstructure:"extra"`
	common `mapstructure:",squash"`
}

// TestExplain: on the decoder's "invalid keys" error, each unknown key is named by its path with
// the nearest setting (through optional and squashed fields), a section with a ",remain" field
// and free maps are not judged, and the decoder's own error is kept; another error is returned as
// it is.
func TestExplain(t *testing.T) {
	conf := confmap.NewFromStringMap(map[string]any{
		"hot":      map[string]any{"retentoin": "1h", "name": "x"},
		"free":     map[string]any{"anything": 1},
		"extra":    map[string]any{"k": "v"},
		"intervl":  "1s",
		"zzzzzzzz": 1,
	})
	decodeErr := conf.Unmarshal(&outer{})
	require.Error(t, decodeErr)
	err := Explain(conf, &outer{}, decodeErr)
	lines := strings.Split(err.Error(), "\n")
	assert.Equal(t, []string{
		"hot::retentoin: no such setting (did you mean retention?)",
		"intervl: no such setting (did you mean interval?)",
		"zzzzzzzz: no such setting (the settings here: extra, free, hot, interval)",
	}, lines[:3])
	assert.Contains(t, err.Error(), decodeErr.Error(), "the decoder's error is kept")
	other := errors.New("something else")
	assert.Equal(t, other, Explain(conf, &outer{}, other))
	assert.NoError(t, Explain(conf, &outer{}, nil))
}
