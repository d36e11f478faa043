// SPDX-License-Identifier: Apache-2.0

package patterns

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// Run is one run as the run index holds it for patterns: what grouping reads, without
// rebuilding the run.
type Run = store.PatternRun

// Agent is the agent a run belongs to: the first gen_ai.agent.name of its spans in run order
// (span, then resource), else the first service.name; "" when none.
func Agent(v *runview.View) string {
	service := ""
	for _, n := range v.Nodes {
		if a := genai.AgentName(n.Effective.Attributes(), n.Resource.Attributes()); a != "" {
			return a
		}
		if service == "" {
			service = strAttr(n.Resource.Attributes(), genai.AttrServiceName)
		}
	}
	return service
}

// Day is one UTC day of a pattern's trend.
type Day struct {
	Day  string `json:"day"` // YYYY-MM-DD, UTC
	Runs int64  `json:"runs"`
}

// Variant is one signature seen within a pattern.
type Variant struct {
	ID        string    `json:"id"`
	Signature Signature `json:"signature"`
	Runs      int64     `json:"runs"`
	Example   string    `json:"example"` // newest run's trace id
	newest    time.Time
}

// Pattern is the runs of one canonical signature.
type Pattern struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Signature Signature `json:"signature"` // canonical (Signature.Canonical)
	Runs      int64     `json:"runs"`
	// ShareOfRuns and ShareOfFailing are Runs over all runs and over the failing runs of the
	// range (0..1).
	ShareOfRuns    float64   `json:"share_of_runs"`
	ShareOfFailing float64   `json:"share_of_failing"`
	First          time.Time `json:"first_seen"` // earliest run start
	Last           time.Time `json:"last_seen"`  // latest run start
	Trend          []Day     `json:"trend"`      // one entry per UTC day from First to Last (zeros kept)
	Models         []string  `json:"models"`     // sorted
	Agents         []string  `json:"agents"`     // sorted
	CostUSD        float64   `json:"cost_usd"`   // cost of the pattern's runs (the index's run cost)
	Examples       []string  `json:"examples"`   // up to MaxExamples trace ids, one per variant first, newest first
	Variants       []Variant `json:"variants"`   // most runs first
	// MergedBy names the merge rules under which the pattern's variants differ (RuleStepIndex,
	// RuleRepeatCount, RuleStepsBefore), sorted; empty for a pattern of one variant.
	MergedBy []string `json:"merged_by,omitempty"`

	models, agents map[string]bool
	days           map[string]int64
	variants       map[string]*Variant
	recent         []exampleRun // newest first, bounded
}

type exampleRun struct {
	trace, variant string
	start          time.Time
}

// MaxExamples is how many example runs a pattern lists.
const MaxExamples = 3

// keepRecent bounds the recent runs a pattern keeps while grouping (examples are chosen from them
// and from each variant's newest run).
const keepRecent = 16

// Report is the patterns of a range of runs, most runs first.
type Report struct {
	Since    time.Time `json:"since,omitzero"`
	Until    time.Time `json:"until,omitzero"`
	Runs     int64     `json:"runs"`    // every run of the range
	Failing  int64     `json:"failing"` // runs with a pattern
	Patterns []Pattern `json:"patterns"`
}

// Grouper groups runs into patterns as they stream from the index (Add), holding per pattern a
// bounded state (its counts, days, models, agents, variants and a few recent runs), never the
// runs. Signatures come from the index by variant id (Signatures). The zero value is not ready:
// use NewGrouper.
type Grouper struct {
	runs, failing int64
	patterns      map[string]*Pattern
}

// NewGrouper returns an empty Grouper.
func NewGrouper() *Grouper { return &Grouper{patterns: map[string]*Pattern{}} }

// Add counts one run: every run of the range, failing or not (the shares' denominators).
func (g *Grouper) Add(r Run) {
	g.runs++
	if r.PatternID == "" {
		return
	}
	g.failing++
	p := g.patterns[r.PatternID]
	if p == nil {
		p = &Pattern{ID: r.PatternID, models: map[string]bool{}, agents: map[string]bool{}, days: map[string]int64{},
			variants: map[string]*Variant{}}
		g.patterns[r.PatternID] = p
	}
	p.Runs++
	if p.First.IsZero() || r.Start.Before(p.First) {
		p.First = r.Start
	}
	if r.Start.After(p.Last) {
		p.Last = r.Start
	}
	p.days[r.Start.UTC().Format(time.DateOnly)]++
	for _, m := range r.Models {
		if m != "" {
			p.models[m] = true
		}
	}
	if r.Agent != "" {
		p.agents[r.Agent] = true
	}
	p.CostUSD += r.CostUSD
	v := p.variants[r.VariantID]
	if v == nil {
		v = &Variant{ID: r.VariantID}
		p.variants[r.VariantID] = v
	}
	v.Runs++
	if v.Example == "" || r.Start.After(v.newest) || (r.Start.Equal(v.newest) && r.TraceID < v.Example) {
		v.Example, v.newest = r.TraceID, r.Start
	}
	p.recent = append(p.recent, exampleRun{trace: r.TraceID, variant: r.VariantID, start: r.Start})
	if len(p.recent) > 2*keepRecent {
		sortRecent(p.recent)
		p.recent = p.recent[:keepRecent]
	}
}

func sortRecent(rs []exampleRun) {
	sort.Slice(rs, func(i, j int) bool {
		if !rs[i].start.Equal(rs[j].start) {
			return rs[i].start.After(rs[j].start)
		}
		return rs[i].trace < rs[j].trace
	})
}

// VariantIDs returns the variant ids seen so far (for the index's signature lookup).
func (g *Grouper) VariantIDs() []string {
	var out []string
	for _, p := range g.patterns {
		for id := range p.variants {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// Report returns the patterns, most runs first (then latest seen, then ID), with the signatures
// of their variants from sigs (variant id -> signature; a variant missing from it keeps a zero
// signature and the pattern's title says "signature not stored").
func (g *Grouper) Report(sigs map[string]Signature) Report {
	rep := Report{Runs: g.runs, Failing: g.failing, Patterns: make([]Pattern, 0, len(g.patterns))}
	for _, p := range g.patterns {
		rep.Patterns = append(rep.Patterns, g.finish(p, sigs))
	}
	sort.Slice(rep.Patterns, func(i, j int) bool {
		a, b := rep.Patterns[i], rep.Patterns[j]
		if a.Runs != b.Runs {
			return a.Runs > b.Runs
		}
		if !a.Last.Equal(b.Last) {
			return a.Last.After(b.Last)
		}
		return a.ID < b.ID
	})
	return rep
}

func (g *Grouper) finish(p *Pattern, sigs map[string]Signature) Pattern {
	out := *p
	if g.runs > 0 {
		out.ShareOfRuns = float64(p.Runs) / float64(g.runs)
	}
	if g.failing > 0 {
		out.ShareOfFailing = float64(p.Runs) / float64(g.failing)
	}
	out.Models, out.Agents = sortedKeys(p.models), sortedKeys(p.agents)
	if out.Models == nil {
		out.Models = []string{}
	}
	if out.Agents == nil {
		out.Agents = []string{}
	}
	for d := dayOf(p.First); !d.After(dayOf(p.Last)); d = d.AddDate(0, 0, 1) {
		k := d.Format(time.DateOnly)
		out.Trend = append(out.Trend, Day{Day: k, Runs: p.days[k]})
	}
	out.Variants = make([]Variant, 0, len(p.variants))
	for _, v := range p.variants {
		vv := *v
		vv.Signature = sigs[v.ID]
		out.Variants = append(out.Variants, vv)
	}
	sort.Slice(out.Variants, func(i, j int) bool {
		a, b := out.Variants[i], out.Variants[j]
		if a.Runs != b.Runs {
			return a.Runs > b.Runs
		}
		return a.ID < b.ID
	})
	if len(out.Variants) > 0 {
		out.Signature = out.Variants[0].Signature.Canonical()
	}
	out.Title = out.Signature.Title()
	if out.Title == "" {
		out.Title = "signature not stored"
	}
	out.MergedBy = MergedBy(out.Variants)
	out.Examples = examples(out.Variants, p.recent, MaxExamples)
	return out
}

// examples picks up to n trace ids: the newest run of each variant (most runs first), then the
// newest other runs.
func examples(vs []Variant, recent []exampleRun, n int) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, v := range vs {
		if len(out) == n {
			return out
		}
		if v.Example != "" && !seen[v.Example] {
			seen[v.Example] = true
			out = append(out, v.Example)
		}
	}
	rs := append([]exampleRun(nil), recent...)
	sortRecent(rs)
	for _, r := range rs {
		if len(out) == n {
			break
		}
		if !seen[r.trace] {
			seen[r.trace] = true
			out = append(out, r.trace)
		}
	}
	return out
}

// MergedBy names the merge rules under which the variants differ (sorted): step_index when an
// error's step differs, repeat_count when its count differs, steps_before when the shapes differ.
func MergedBy(vs []Variant) []string {
	if len(vs) < 2 {
		return nil
	}
	rules := map[string]bool{}
	first := vs[0].Signature
	for _, v := range vs[1:] {
		s := v.Signature
		if !equalStrings(s.Shape, first.Shape) {
			rules[RuleStepsBefore] = true
		}
		for i := range s.Errors {
			if i >= len(first.Errors) {
				break
			}
			if s.Errors[i].Step != first.Errors[i].Step {
				rules[RuleStepIndex] = true
			}
			if s.Errors[i].Count != first.Errors[i].Count {
				rules[RuleRepeatCount] = true
			}
		}
	}
	return sortedKeys(rules)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func dayOf(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// Examples chooses up to n runs of one pattern to cover its variants (what `dataset add
// --pattern` freezes): the newest run of each variant, most frequent variant first, then the
// newest runs not chosen. runs are the pattern's runs in any order.
func Examples(runs []Run, n int) []Run {
	if n <= 0 {
		return nil
	}
	rs := append([]Run(nil), runs...)
	sort.Slice(rs, func(i, j int) bool {
		if !rs[i].Start.Equal(rs[j].Start) {
			return rs[i].Start.After(rs[j].Start)
		}
		return rs[i].TraceID < rs[j].TraceID
	})
	count := map[string]int{}
	for _, r := range rs {
		count[r.VariantID]++
	}
	var order []string
	for id := range count {
		order = append(order, id)
	}
	sort.Slice(order, func(i, j int) bool {
		if count[order[i]] != count[order[j]] {
			return count[order[i]] > count[order[j]]
		}
		return order[i] < order[j]
	})
	chosen := map[string]bool{}
	var out []Run
	for _, id := range order {
		for _, r := range rs {
			if r.VariantID == id {
				if len(out) < n {
					out = append(out, r)
					chosen[r.TraceID] = true
				}
				break
			}
		}
	}
	for _, r := range rs {
		if len(out) >= n {
			break
		}
		if !chosen[r.TraceID] {
			chosen[r.TraceID] = true
			out = append(out, r)
		}
	}
	return out
}

// List groups the runs of f (f.PatternID ” : every run) that r streams into patterns: the
// listing of `runagain patterns` and of the UI's Patterns page. It reads the run index only:
// no run is rebuilt.
func List(ctx context.Context, r store.PatternReader, f store.PatternFilter) (Report, error) {
	g := NewGrouper()
	computed := map[string]Signature{}
	err := r.PatternRuns(ctx, f, func(run store.PatternRun) error {
		if run.Signature != nil && run.VariantID != "" {
			if _, ok := computed[run.VariantID]; !ok {
				if s, err := Parse(run.Signature); err == nil {
					computed[run.VariantID] = s
				}
			}
		}
		g.Add(run)
		return nil
	})
	if err != nil {
		return Report{}, err
	}
	sigs, err := signatures(ctx, r, g.VariantIDs(), computed)
	if err != nil {
		return Report{}, err
	}
	rep := g.Report(sigs)
	rep.Since, rep.Until = f.Since, f.Until
	return rep, nil
}

// Show returns pattern id over the runs of f (its shares against every run of f's range) and
// its runs, newest first. It reads the index twice: the listing, then the pattern's runs.
func Show(ctx context.Context, r store.PatternReader, id string, f store.PatternFilter) (Pattern, []Run, error) {
	f.PatternID = ""
	rep, err := List(ctx, r, f)
	if err != nil {
		return Pattern{}, nil, err
	}
	var p *Pattern
	for i := range rep.Patterns {
		if rep.Patterns[i].ID == id {
			p = &rep.Patterns[i]
		}
	}
	if p == nil {
		return Pattern{}, nil, patternNotFound(id, f)
	}
	f.PatternID = id
	var runs []Run
	err = r.PatternRuns(ctx, f, func(run store.PatternRun) error {
		runs = append(runs, run)
		return nil
	})
	sort.SliceStable(runs, func(i, j int) bool {
		if !runs[i].Start.Equal(runs[j].Start) {
			return runs[i].Start.After(runs[j].Start)
		}
		return runs[i].TraceID < runs[j].TraceID
	})
	return *p, runs, err
}

// notFoundError is a pattern that no run of the range has; errors.Is(err, store.ErrNotFound).
type notFoundError struct{ msg string }

func (e notFoundError) Error() string        { return e.msg }
func (e notFoundError) Is(target error) bool { return target == store.ErrNotFound }

// patternNotFound names the pattern and the range it was looked for in, and where the patterns
// of that range are listed.
func patternNotFound(id string, f store.PatternFilter) error {
	rng := "in the store"
	if !f.Since.IsZero() {
		rng = "among the runs since " + f.Since.UTC().Format(time.RFC3339)
	}
	return notFoundError{fmt.Sprintf("pattern %q: no such pattern %s (runagain patterns lists the patterns and their ids)", id, rng)}
}

func signatures(ctx context.Context, r store.PatternReader, ids []string, have map[string]Signature) (map[string]Signature, error) {
	var want []string
	for _, id := range ids {
		if _, ok := have[id]; !ok {
			want = append(want, id)
		}
	}
	out := make(map[string]Signature, len(ids))
	for k, v := range have {
		out[k] = v
	}
	if len(want) == 0 {
		return out, nil
	}
	raw, err := r.PatternSignatures(ctx, want)
	if err != nil {
		return nil, err
	}
	for id, b := range raw {
		if s, err := Parse(b); err == nil {
			out[id] = s
		}
	}
	return out, nil
}
