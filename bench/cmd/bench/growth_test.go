// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
)

// A row of three runs holds the median of each number with min and max, keeps every run, and
// says data loss when one run lost data.
func TestMedianRow(t *testing.T) {
	yes, no := true, false
	runs := []*Result{
		{Pipeline: "runagain", SpansPerSec: 100, CPUPer1k: 0.3, PeakRSSMB: 300, ZeroLoss: &yes, Load: "1", IdleReached: true},
		{Pipeline: "runagain", SpansPerSec: 300, CPUPer1k: 0.1, PeakRSSMB: 100, ZeroLoss: &no, Load: "2", IdleReached: true, Error: "lost"},
		{Pipeline: "runagain", SpansPerSec: 200, CPUPer1k: 0.2, PeakRSSMB: 200, ZeroLoss: &yes, Load: "3", IdleReached: true},
	}
	row := medianRow(runs)
	if row.SpansPerSec != 200 || row.CPUPer1k != 0.2 || row.PeakRSSMB != 200 {
		t.Errorf("medians: %v spans/s, %v CPU, %v RSS", row.SpansPerSec, row.CPUPer1k, row.PeakRSSMB)
	}
	if got := row.Spread["spans_per_s"]; got != [3]float64{100, 200, 300} {
		t.Errorf("spread %v", got)
	}
	if row.ZeroLoss == nil || *row.ZeroLoss {
		t.Error("a run with data loss must make the row's zero loss false")
	}
	if len(row.Runs) != 3 || row.Load != "1; 2; 3" || !strings.Contains(row.Error, "run 2: lost") {
		t.Errorf("runs %d, load %q, error %q", len(row.Runs), row.Load, row.Error)
	}
	if got := withSpread(row, "spans_per_s", "%.0f", row.SpansPerSec); got != "200 (100–300)" {
		t.Errorf("cell %q", got)
	}
	if runs[0].ZeroLoss != &yes || !*runs[0].ZeroLoss {
		t.Error("the single runs were changed")
	}
}

// The growth table's ratio row is last/first, and the verdicts name what moved by more than 10%.
func TestGrowthRatiosAndTable(t *testing.T) {
	g := &Growth{Rounds: []*Round{
		{Round: 1, CPUPer1k: 0.2, SpansPerSec: 1000, LiveHeapMB: 100, DiskPerSes: 5000, RSSMB: 300, P99ms: 100, IdleReached: true,
			Reads: []Read{{Name: "runagain sessions --limit 20", MedianMS: 50}}},
		{Round: 2, CPUPer1k: 0.21, SpansPerSec: 990, LiveHeapMB: 105, DiskPerSes: 5000, AddedPerSes: 4000, RSSMB: 310, P99ms: 100, IdleReached: true},
		{Round: 3, CPUPer1k: 0.3, SpansPerSec: 950, LiveHeapMB: 104, DiskPerSes: 5100, AddedPerSes: 4200, RSSMB: 320, P99ms: 110, IdleReached: true,
			Reads: []Read{{Name: "runagain sessions --limit 20", MedianMS: 60}}},
	}}
	g.Ratios = growthRatios(g.Rounds)
	for k, want := range map[string]float64{"cpu_per_span": 1.5, "spans_per_s": 0.95, "read runagain sessions --limit 20": 1.2, "added_per_session": 1.05} {
		if got := g.Ratios[k]; got < want-1e-9 || got > want+1e-9 {
			t.Errorf("%s: %v, want %v", k, got, want)
		}
	}
	md := growthTable(g)
	for _, want := range []string{"| last / first | | 0.95 | 1.50 |", "CPU per span within 10% from round 1 to round 3: 1.50, MISSED",
		"spans/s within 10% from round 1 to round 3: 0.95, met",
		"bytes added per session (mean of round 3 against round 2; round 1 also creates the WALs and fixed files) at most 10% above: 1.05, met", "| `runagain sessions --limit 20` | 50 (0–0) | 60 (0–0) | 1.20 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("growth table lacks %q:\n%s", want, md)
		}
	}
}

// Over ten rounds the bytes added per session compare the means of rounds 8-10 and 2-4, so that
// one round's swing (files and packs grow in steps) decides nothing.
func TestGrowthAddedPerSessionMeans(t *testing.T) {
	added := []float64{0, 90, 50, 70, 99, 53, 80, 60, 95, 55} // rounds 1-10: 2-4 mean 70, 8-10 mean 70
	var rs []*Round
	for i, a := range added {
		rs = append(rs, &Round{Round: i + 1, CPUPer1k: 0.2, SpansPerSec: 1000, AddedPerSes: a})
	}
	if got := growthRatios(rs)["added_per_session"]; got < 1-1e-9 || got > 1+1e-9 {
		t.Errorf("added_per_session %v, want 1 (equal means; round 10 / round 2 alone would be %.2f)", got, 55.0/90)
	}
	if md := growthTable(&Growth{Rounds: rs, Ratios: growthRatios(rs)}); !strings.Contains(md, "mean of rounds 8-10 against rounds 2-4") {
		t.Errorf("verdict does not name the rounds:\n%s", md)
	}
	// bytes per session that fall are flat enough; that grow 20 % are not
	rs[7].AddedPerSes, rs[8].AddedPerSes, rs[9].AddedPerSes = 40, 40, 40
	if md := growthTable(&Growth{Rounds: rs, Ratios: growthRatios(rs)}); !strings.Contains(md, "at most 10% above: 0.57, met") {
		t.Errorf("falling bytes per session missed:\n%s", md)
	}
	rs[7].AddedPerSes, rs[8].AddedPerSes, rs[9].AddedPerSes = 84, 84, 84
	if md := growthTable(&Growth{Rounds: rs, Ratios: growthRatios(rs)}); !strings.Contains(md, "at most 10% above: 1.20, MISSED") {
		t.Errorf("growing bytes per session met:\n%s", md)
	}
}

// inuseMB reads a real heap profile of this process: at least what it holds live.
func TestInuseMB(t *testing.T) {
	keep := make([]byte, 8<<20)
	for i := range keep {
		keep[i] = byte(i)
	}
	runtime.GC()
	old := runtime.MemProfileRate
	defer func() { runtime.MemProfileRate = old }()
	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	mb, err := inuseMB(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if mb < 4 { // sampled: the 8 MB buffer is seen, if not to the byte
		t.Errorf("live heap %.1f MB with an 8 MB buffer held", mb)
	}
	runtime.KeepAlive(keep)
}

// The run BENCHMARKS.md replaces goes to the end of the history as one section, headings one
// level down, the file's title dropped.
func TestAppendHistory(t *testing.T) {
	path := t.TempDir() + "/history.md"
	if err := os.WriteFile(path, []byte("# Benchmark history\n\nolder\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	top := "# Benchmarks\n\n- Date: 2026-12-01 12:20 UTC (the whole run took 191 s)\n\n| a | b |\n\n## Where the time goes\n\ntext\n"
	if err := appendHistory(path, top); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{"# Benchmark history\n\nolder\n", "\n## make bench of 2026-12-01 12:20 UTC (the whole run took 191 s)\n", "\n### Where the time goes\n", "| a | b |"} {
		if !strings.Contains(got, want) {
			t.Errorf("history lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "# Benchmarks\n") {
		t.Errorf("the replaced file's title was kept:\n%s", got)
	}
}
