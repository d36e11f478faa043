// SPDX-License-Identifier: Apache-2.0

package profsplit

import (
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sample is one CPU sample of ns nanoseconds on the stack frames (leaf first).
func sample(ns int64, frames ...string) *profile.Sample {
	s := &profile.Sample{Value: []int64{1, ns}}
	for _, f := range frames {
		s.Location = append(s.Location, &profile.Location{Line: []profile.Line{{Function: &profile.Function{Name: f}}}})
	}
	return s
}

func testProfile() *profile.Profile {
	return &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			sample(3e9, "internal/runtime/syscall/linux.Syscall6", "modernc.org/sqlite/lib._sqlite3VdbeExec",
				"github.com/runagain/runagain/internal/store/sqlitestore.(*DB).commitTraces",
				"github.com/runagain/runagain/processor/payloadoffloadprocessor.(*offloader).processTraces"),
			sample(2e9, "modernc.org/sqlite/lib._sqlite3VdbeExec", "github.com/runagain/runagain/internal/store/sqlitestore.runIndex.apply",
				"github.com/runagain/runagain/internal/store/sqlitestore.(*WarmDB).writeTx"),
			sample(1e9, "runtime.mallocgc", "github.com/runagain/runagain/internal/redact.(*Redactor).RedactValue",
				"github.com/runagain/runagain/processor/payloadoffloadprocessor.(*offloader).processTraces"),
			sample(5e8, "runtime.scanObject", "runtime.gcBgMarkWorker"),
			sample(5e8, "runtime.futex", "runtime.findRunnable", "runtime.schedule"),
		}}
}

func values(s Split) map[string]float64 {
	got := map[string]float64{}
	for _, r := range s.Rows {
		got[r.Name] = r.Value
	}
	return got
}

func row(s Split, name string) Row {
	for _, r := range s.Rows {
		if r.Name == name {
			return r
		}
	}
	return Row{Kinds: map[string]float64{}}
}

// TestAreasChargeTheMostSpecificArea: a sample goes to the area of its first frame from the
// leaf; SQLite under the warm writer is warm, under the hot writer hot; a system call leaf is
// counted as the syscall part of its area; samples of no area are "other".
func TestAreasChargeTheMostSpecificArea(t *testing.T) {
	p := testProfile()
	vi, scale, unit, err := Value(p, "")
	require.NoError(t, err)
	assert.Equal(t, 1, vi)
	assert.Equal(t, "s", unit)
	s := Areas.Split(p, vi, scale, unit, LeafKinds)
	assert.InDelta(t, 7.0, s.Total, 1e-9)
	assert.Equal(t, map[string]float64{"hot": 3, "warm": 2, "redact": 1, "GC": 0.5, "other": 0.5}, values(s))
	assert.Equal(t, "hot", s.Rows[0].Name, "largest first")
	assert.InDelta(t, 3.0, row(s, "hot").Kinds["syscall"], 1e-9)
	assert.InDelta(t, 1.0, row(s, "redact").Kinds["malloc"], 1e-9)
	assert.InDelta(t, 0.5, row(s, "other").Kinds["lock/sched"], 1e-9)
	assert.Zero(t, row(s, "warm").Kinds["syscall"])

	md := s.Markdown(LeafKinds, 0.154)
	assert.Contains(t, md, "| hot | 3.00 | 42.9% | 66 | 3.00 |", "µs/span = share × 154 µs")
	assert.Contains(t, md, "| all | 7.00 | 100% | 154 |")
}

// TestComponentsChargeTheSQLiteEngine: BENCHMARKS.md's table charges SQLite to the engine
// whichever tier called it, and the sqlitestore code around it to the tiered exporter.
func TestComponentsChargeTheSQLiteEngine(t *testing.T) {
	s := Components.Split(testProfile(), 1, 1e9, "s", nil)
	assert.Equal(t, map[string]float64{"SQLite engine (modernc.org/sqlite)": 5, "agent_redaction": 1,
		"GC (background)": 0.5, "other (scheduler, syscalls, idle work)": 0.5}, values(s))
}

// TestValueNamesTheSampleTypes: a heap profile's alloc_space is read in MB; a missing type is an
// error naming those the profile has.
func TestValueNamesTheSampleTypes(t *testing.T) {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}}}
	vi, scale, unit, err := Value(p, "alloc_space")
	require.NoError(t, err)
	assert.Equal(t, 1, vi)
	assert.Equal(t, float64(1<<20), scale)
	assert.Equal(t, "MB", unit)
	_, _, _, err = Value(p, "inuse_space")
	require.ErrorContains(t, err, `no sample type "inuse_space" in the profile (it has alloc_objects, alloc_space)`)
}

// TestReadsARealProfile: a CPU profile written by runtime/pprof reads and splits into shares that
// add up to the total.
func TestReadsARealProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, pprof.StartCPUProfile(f))
	x := 0
	for i := 0; i < 50_000_000; i++ {
		x += len(strings.Repeat("a", i%3))
	}
	pprof.StopCPUProfile()
	require.NoError(t, f.Close())
	p, err := Read(path)
	require.NoError(t, err)
	vi, scale, unit, err := Value(p, "")
	require.NoError(t, err)
	s := Components.Split(p, vi, scale, unit, nil)
	var sum float64
	for _, r := range s.Rows {
		sum += r.Value
	}
	assert.InDelta(t, s.Total, sum, 1e-9)
	assert.Positive(t, x)
}
