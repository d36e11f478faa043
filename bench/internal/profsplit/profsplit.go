// SPDX-License-Identifier: Apache-2.0

// Package profsplit splits the samples of a pprof profile (CPU or heap) of otelcol-runagain, or
// of a peer collector, into named parts by the functions on each sample's stack. It is the one
// splitter behind bench's BENCHMARKS.md component table (Components) and bench/cmd/profareas'
// per-owner table (Areas).
//
// Each sample is charged to the part of the first frame, walking from the leaf to the root,
// whose function name contains one of the part's patterns (parts tried in table order on each
// frame), so a library call is charged to the most specific part that made it: a regexp inside
// internal/redact to redaction, SQLite under the hot write to the hot write. Inlined functions
// count as frames of their own (innermost first), as `go tool pprof -traces` prints them.
package profsplit

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// Part is one named part of a table and the substrings of function names that belong to it.
type Part struct {
	Name     string
	Patterns []string
}

// Move recharges a sample charged to From to To when any frame of its stack contains one of
// Patterns (generic code whose owner is known only from its callers).
type Move struct {
	From, To string
	Patterns []string
}

// Table is an ordered list of parts; samples of no part go to Other.
type Table struct {
	Parts []Part
	Moves []Move
	Other string
}

// Kind is a kind of leaf work (system call, lock, allocation), reported within each part: a
// sample is of the kind when its leaf frame (LeafOnly) or any frame contains one of Patterns.
type Kind struct {
	Name     string
	Patterns []string
	LeafOnly bool
}

// Row is one part's share of a profile: Value in the unit of the split (seconds of CPU, MB) and,
// per kind name, how much of that Value is of that kind.
type Row struct {
	Name  string
	Value float64
	Kinds map[string]float64
}

// Split is a profile split by a table: rows by Value, largest first, and their Total.
type Split struct {
	Rows  []Row
	Total float64
	Unit  string // "s" for CPU time, "MB" for bytes, else the profile's unit
}

// Share returns row r's percentage of the total (0 for an empty profile).
func (s Split) Share(r Row) float64 {
	if s.Total <= 0 {
		return 0
	}
	return 100 * r.Value / s.Total
}

// Read parses the profile file at path (gzipped or not, as pprof writes it).
func Read(path string) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Value picks the sample value to split: sampleType names one of p's sample types (a heap
// profile's alloc_space or inuse_space, a CPU profile's cpu), "" the last one (a CPU profile's
// nanoseconds). It returns its index, the divisor that turns it into unit (1e9 for nanoseconds
// to s, 1<<20 for bytes to MB) and unit; an error names the sample types p has.
func Value(p *profile.Profile, sampleType string) (index int, scale float64, unit string, err error) {
	index = len(p.SampleType) - 1
	if sampleType != "" {
		index = -1
		var have []string
		for i, st := range p.SampleType {
			have = append(have, st.Type)
			if st.Type == sampleType {
				index = i
			}
		}
		if index < 0 {
			return 0, 0, "", fmt.Errorf("no sample type %q in the profile (it has %s)", sampleType, strings.Join(have, ", "))
		}
	}
	if index < 0 {
		return 0, 0, "", fmt.Errorf("the profile has no sample types")
	}
	switch p.SampleType[index].Unit {
	case "nanoseconds":
		return index, 1e9, "s", nil
	case "bytes":
		return index, 1 << 20, "MB", nil
	default:
		return index, 1, p.SampleType[index].Unit, nil
	}
}

// Split charges every sample of p (its value at index, divided by scale) to a part of t, and
// within it to each of kinds it is of.
func (t Table) Split(p *profile.Profile, index int, scale float64, unit string, kinds []Kind) Split {
	rows := map[string]*Row{}
	var total float64
	var frames []string
	for _, s := range p.Sample {
		v := float64(s.Value[index]) / scale
		total += v
		frames = frames[:0]
		for _, loc := range s.Location {
			for _, ln := range loc.Line { // innermost (inlined) first, its caller last
				if ln.Function != nil {
					frames = append(frames, ln.Function.Name)
				}
			}
		}
		name := t.charge(frames)
		r := rows[name]
		if r == nil {
			r = &Row{Name: name, Kinds: map[string]float64{}}
			rows[name] = r
		}
		r.Value += v
		for _, k := range kinds {
			if k.of(frames) {
				r.Kinds[k.Name] += v
			}
		}
	}
	out := Split{Total: total, Unit: unit}
	for _, r := range rows {
		out.Rows = append(out.Rows, *r)
	}
	sort.Slice(out.Rows, func(i, j int) bool {
		if out.Rows[i].Value != out.Rows[j].Value {
			return out.Rows[i].Value > out.Rows[j].Value
		}
		return out.Rows[i].Name < out.Rows[j].Name
	})
	return out
}

// charge returns the part of a stack (frames leaf first).
func (t Table) charge(frames []string) string {
	for _, fr := range frames {
		for _, part := range t.Parts {
			if containsAny(fr, part.Patterns) {
				for _, m := range t.Moves {
					if m.From == part.Name && anyFrame(frames, m.Patterns) {
						return m.To
					}
				}
				return part.Name
			}
		}
	}
	return t.Other
}

func (k Kind) of(frames []string) bool {
	if k.LeafOnly {
		return len(frames) > 0 && containsAny(frames[0], k.Patterns)
	}
	return anyFrame(frames, k.Patterns)
}

func anyFrame(frames, patterns []string) bool {
	for _, fr := range frames {
		if containsAny(fr, patterns) {
			return true
		}
	}
	return false
}

func containsAny(s string, patterns []string) bool {
	for _, p := range patterns {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// Markdown renders s as a Markdown table: each row's value and share, with cpuPer1k > 0 (the
// run's CPU seconds per 1,000 spans) its CPU microseconds per span (share × the run's CPU per
// span: the profile covers only part of the run), then its value of each of kinds, and a last
// row "all".
func (s Split) Markdown(kinds []Kind, cpuPer1k float64) string {
	var sb strings.Builder
	sb.WriteString("| area | " + s.Unit + " | share |")
	sep := "|---|---:|---:|"
	if cpuPer1k > 0 {
		sb.WriteString(" µs/span |")
		sep += "---:|"
	}
	for _, k := range kinds {
		sb.WriteString(" " + k.Name + " " + s.Unit + " |")
		sep += "---:|"
	}
	sb.WriteString("\n" + sep + "\n")
	sums := map[string]float64{}
	for _, r := range s.Rows {
		fmt.Fprintf(&sb, "| %s | %.2f | %.1f%% |", r.Name, r.Value, s.Share(r))
		if cpuPer1k > 0 {
			fmt.Fprintf(&sb, " %.0f |", s.Share(r)/100*cpuPer1k*1000)
		}
		for _, k := range kinds {
			fmt.Fprintf(&sb, " %.2f |", r.Kinds[k.Name])
			sums[k.Name] += r.Kinds[k.Name]
		}
		sb.WriteString("\n")
	}
	fmt.Fprintf(&sb, "| all | %.2f | 100%% |", s.Total)
	if cpuPer1k > 0 {
		fmt.Fprintf(&sb, " %.0f |", cpuPer1k*1000)
	}
	for _, k := range kinds {
		fmt.Fprintf(&sb, " %.2f |", sums[k.Name])
	}
	sb.WriteString("\n")
	return sb.String()
}
