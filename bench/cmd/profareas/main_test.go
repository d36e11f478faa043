package main

import (
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
)

// sample is one CPU sample of ns nanoseconds on the stack frames (leaf first).
func sample(ns int64, frames ...string) *profile.Sample {
	s := &profile.Sample{Value: []int64{1, ns}}
	for _, f := range frames {
		s.Location = append(s.Location, &profile.Location{Line: []profile.Line{{Function: &profile.Function{Name: f}}}})
	}
	return s
}

// TestSplitChargesTheMostSpecificArea: a sample goes to the area of its first frame from the
// leaf; SQLite under the warm writer is warm, under the hot writer hot; a system call leaf is
// counted as the syscall part of its area; samples of no area are "other".
func TestSplitChargesTheMostSpecificArea(t *testing.T) {
	p := &profile.Profile{Sample: []*profile.Sample{
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
	rows, total := split(p, 1, 1e9)
	assert.InDelta(t, 7.0, total, 1e-9)
	got := map[string]float64{}
	for n, r := range rows {
		got[n] = r.total
	}
	assert.Equal(t, map[string]float64{"hot": 3, "warm": 2, "redact": 1, "GC": 0.5, "other": 0.5}, got)
	assert.InDelta(t, 3.0, rows["hot"].kind["syscall"], 1e-9)
	assert.InDelta(t, 1.0, rows["redact"].kind["malloc"], 1e-9)
	assert.InDelta(t, 0.5, rows["other"].kind["lock/sched"], 1e-9)
	assert.Zero(t, rows["warm"].kind["syscall"])
}
