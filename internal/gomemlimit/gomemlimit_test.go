// SPDX-License-Identifier: Apache-2.0

package gomemlimit

import (
	"context"
	"errors"
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

// clean restores the test process's soft memory limit after the test and unsets GOMEMLIMIT and
// AUTOMEMLIMIT for it (t.Setenv restores them).
func clean(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	for _, k := range []string{"GOMEMLIMIT", "AUTOMEMLIMIT"} {
		t.Setenv(k, "")
		require.NoError(t, os.Unsetenv(k))
	}
	debug.SetMemoryLimit(math.MaxInt64) // the Go default: no limit
}

func TestApplyTakesTheRatioOfTheCgroupLimit(t *testing.T) {
	clean(t)
	var cgroup uint64 = 4 << 30
	want := int64(float64(cgroup) * Ratio) // 3.2 GiB
	got, err := Apply(memlimit.Limit(cgroup))
	require.NoError(t, err)
	assert.Equal(t, "cgroup", got.Source)
	assert.Equal(t, want, got.Limit)
	assert.Equal(t, want, debug.SetMemoryLimit(-1), "the runtime's limit")
}

func TestApplySetsNoLimitWithoutACgroupLimit(t *testing.T) {
	for name, provider := range map[string]memlimit.Provider{
		"no limit":   func() (uint64, error) { return 0, memlimit.ErrNoLimit },
		"no cgroups": func() (uint64, error) { return 0, errors.New("cgroup mountpoint does not exist") },
	} {
		t.Run(name, func(t *testing.T) {
			clean(t)
			debug.SetMemoryLimit(240 << 20) // a stale limit is replaced by none
			got, err := Apply(provider)
			require.NoError(t, err)
			assert.Contains(t, got.Source, "none")
			assert.EqualValues(t, int64(math.MaxInt64), got.Limit)
			assert.EqualValues(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))
		})
	}
}

func TestApplyKeepsGOMEMLIMIT(t *testing.T) {
	clean(t)
	const fromEnv = 1 << 30 // as if the runtime had read GOMEMLIMIT=1GiB at start
	debug.SetMemoryLimit(fromEnv)
	for _, v := range []string{"1GiB", "off"} {
		t.Setenv("GOMEMLIMIT", v)
		got, err := Apply(memlimit.Limit(8 << 30))
		require.NoError(t, err)
		assert.Equal(t, Result{Limit: fromEnv, Source: "GOMEMLIMIT"}, got, v)
		assert.EqualValues(t, fromEnv, debug.SetMemoryLimit(-1), "GOMEMLIMIT=%s wins", v)
	}
}

func TestAUTOMEMLIMITOverridesTheRatio(t *testing.T) {
	clean(t)
	t.Setenv("AUTOMEMLIMIT", "0.5")
	got, err := Apply(memlimit.Limit(2 << 30))
	require.NoError(t, err)
	assert.EqualValues(t, 1<<30, got.Limit)

	t.Setenv("AUTOMEMLIMIT", "off")
	debug.SetMemoryLimit(math.MaxInt64)
	got, err = Apply(memlimit.Limit(2 << 30))
	require.NoError(t, err)
	assert.Equal(t, Result{Limit: math.MaxInt64, Source: "AUTOMEMLIMIT=off"}, got)

	for _, bad := range []string{"80%", "1.5", "0"} {
		t.Setenv("AUTOMEMLIMIT", bad)
		_, err = Apply(memlimit.Limit(2 << 30))
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "AUTOMEMLIMIT", "the error names the variable")
	}
}

// The converter, as the distribution's main runs it, applies the limit and changes nothing in
// the configuration; a malformed AUTOMEMLIMIT stops the start.
func TestConverterLeavesConfigUnchanged(t *testing.T) {
	clean(t)
	in := map[string]any{"processors": map[string]any{"memory_limiter": map[string]any{"check_interval": "1s"}}}
	conf := confmap.NewFromStringMap(in)
	c := NewFactory().Create(confmap.ConverterSettings{})
	require.NoError(t, c.Convert(context.Background(), conf))
	assert.Equal(t, in, conf.ToStringMap())

	t.Setenv("AUTOMEMLIMIT", "lots")
	require.ErrorContains(t, c.Convert(context.Background(), conf), "AUTOMEMLIMIT")
}
