package gomemlimit

import (
	"context"
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

// keepLimit restores the test process's soft memory limit after the test.
func keepLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
}

func TestApplySetsTheDefaultWithoutGOMEMLIMIT(t *testing.T) {
	keepLimit(t)
	debug.SetMemoryLimit(math.MaxInt64) // the Go default: no limit
	got := Apply(func(string) (string, bool) { return "", false })
	assert.Equal(t, DefaultLimit, got)
	assert.Equal(t, DefaultLimit, debug.SetMemoryLimit(-1), "the runtime's limit is the default")
}

func TestApplyKeepsGOMEMLIMIT(t *testing.T) {
	keepLimit(t)
	const fromEnv = 1 << 30 // as if the runtime had read GOMEMLIMIT=1GiB at start
	debug.SetMemoryLimit(fromEnv)
	for _, v := range []string{"1GiB", "off"} {
		got := Apply(func(k string) (string, bool) { return v, k == "GOMEMLIMIT" })
		assert.EqualValues(t, fromEnv, got, v)
		assert.EqualValues(t, fromEnv, debug.SetMemoryLimit(-1), "GOMEMLIMIT=%s wins", v)
	}
}

// The converter, as the distribution's main runs it, applies the limit and changes nothing in
// the configuration.
func TestConverterLeavesConfigUnchanged(t *testing.T) {
	keepLimit(t)
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		t.Setenv("GOMEMLIMIT", v) // restored after the test
		require.NoError(t, os.Unsetenv("GOMEMLIMIT"))
	}
	debug.SetMemoryLimit(math.MaxInt64)
	in := map[string]any{"processors": map[string]any{"memory_limiter": map[string]any{"check_interval": "1s"}}}
	conf := confmap.NewFromStringMap(in)
	c := NewFactory().Create(confmap.ConverterSettings{})
	require.NoError(t, c.Convert(context.Background(), conf))
	assert.Equal(t, in, conf.ToStringMap())
	assert.Equal(t, DefaultLimit, debug.SetMemoryLimit(-1))
}
