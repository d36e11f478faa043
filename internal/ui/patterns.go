// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/runagain/runagain/internal/dataset"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// The Patterns pages (issue 32): /patterns lists the failure patterns of a range of runs as
// `runagain patterns` does (internal/patterns.List over the run index: no run is rebuilt);
// /patterns/{id} shows one pattern: its variants, its runs, the representative failing step of
// its newest example, a diff of that example against the nearest run without the pattern, and a
// CSRF-protected form that freezes its runs into a dataset (dataset.AddFromPattern, as
// `runagain dataset add NAME --pattern ID` does).

// nearestCandidates bounds the runs without the pattern that the pattern page reads to find the
// nearest one: the runs nearest in start time to the example, each read once (cached).
const nearestCandidates = 30

// maxStepNames bounds the step names compared per run by similarity (LCS is quadratic).
const maxStepNames = 200

type patternsView struct {
	Title    string
	Since    string
	Report   patterns.Report
	Patterns []patternRow
	Err      string
}

type patternRow struct {
	patterns.Pattern
	Spark string
}

func (s *Server) patternReader() (store.PatternReader, error) {
	pr, ok := s.opts.Reader.(store.PatternReader)
	if !ok {
		return nil, fmt.Errorf("%w: the configured store (%T) has no run index with failure signatures", errNotFound, s.opts.Reader)
	}
	return pr, nil
}

// patternFilter reads ?since= (24h, 7d, a date, an RFC 3339 time); none or "all": every run, as
// `runagain patterns` without --since.
func (s *Server) patternFilter(r *http.Request) (store.PatternFilter, string, error) {
	since := strings.TrimSpace(r.URL.Query().Get("since"))
	var f store.PatternFilter
	if since != "" && since != "all" {
		t, err := store.ParseTimeArg("since", since, s.opts.Now())
		if err != nil {
			return f, since, badRequest("%v", err)
		}
		f.Since = t
	}
	return f, since, nil
}

func (s *Server) patternsPage(w http.ResponseWriter, r *http.Request) {
	v := patternsView{Title: "Patterns"}
	f, since, err := s.patternFilter(r)
	v.Since = since
	if err == nil {
		var pr store.PatternReader
		if pr, err = s.patternReader(); err == nil {
			v.Report, err = patterns.List(r.Context(), pr, f)
		}
	}
	if err != nil {
		v.Err = err.Error()
		switch {
		case errors.Is(err, errBadRequest):
			w.WriteHeader(http.StatusBadRequest)
		case !errors.Is(err, errNotFound):
			w.WriteHeader(http.StatusInternalServerError)
		}
	}
	for _, p := range v.Report.Patterns {
		trend := p.Trend
		if len(trend) > patterns.MaxTrendDays {
			trend = trend[len(trend)-patterns.MaxTrendDays:]
		}
		v.Patterns = append(v.Patterns, patternRow{Pattern: p, Spark: patterns.Sparkline(trend)})
	}
	s.render(w, "patterns.html", v)
}

type patternView struct {
	Title   string
	Since   string
	P       patterns.Pattern
	Spark   string
	Runs    []patterns.Run
	More    int // runs not listed (maxPatternRuns)
	Example string
	// Step is the example's first failing span; Nearest the run it is diffed against.
	Step     *failingStep
	Nearest  *nearestRun
	NoNear   string // why there is no nearest run
	CSRF     string
	Datasets bool
	Limit    int
}

type failingStep struct {
	SpanID, Name, Kind, Message string
	Step                        int
}

type nearestRun struct {
	TraceID    string
	Start      time.Time
	Passing    bool    // a run with no pattern; else a run of another pattern
	Similarity float64 // 0..1 (stepSimilarity)
	Agent      string
}

// maxPatternRuns bounds the runs a pattern page lists (newest first).
const maxPatternRuns = 200

func (s *Server) patternPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	f, since, err := s.patternFilter(r)
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	pr, err := s.patternReader()
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	p, runs, err := patterns.Show(ctx, pr, id, f)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			if since == "" || since == "all" {
				err = fmt.Errorf("%w: no pattern %s in the store (the Patterns page lists them and their ids)", errNotFound, id)
			} else {
				err = fmt.Errorf("%w: no run of pattern %s since %s (it may have runs before: since=all)", errNotFound, id, since)
			}
		}
		s.failPage(w, r, err)
		return
	}
	v := patternView{Title: "Pattern " + p.ID, Since: since, P: p, Spark: patterns.Sparkline(p.Trend), Runs: runs,
		CSRF: s.csrf, Datasets: s.opts.Datasets != nil, Limit: dataset.DefaultPatternLimit}
	if len(v.Runs) > maxPatternRuns {
		v.More = len(v.Runs) - maxPatternRuns
		v.Runs = v.Runs[:maxPatternRuns]
	}
	var example *patterns.Run
	for i := range runs {
		if runs[i].Tier != store.TierCold {
			example = &runs[i]
			break
		}
	}
	if example == nil {
		v.NoNear = "none of the pattern's runs has its spans any more"
		s.render(w, "pattern.html", v)
		return
	}
	v.Example = example.TraceID
	c, err := s.loadRun(ctx, example.TraceID)
	if err != nil {
		v.NoNear = "its example run cannot be read: " + err.Error()
		s.render(w, "pattern.html", v)
		return
	}
	v.Step = firstFailing(c)
	v.Nearest, v.NoNear = s.nearest(ctx, pr, f, p.ID, c)
	s.render(w, "pattern.html", v)
}

// firstFailing is the first span of c that failed (status ERROR), nil when none.
func firstFailing(c *cachedRun) *failingStep {
	for i, row := range c.rows {
		if !row.Error {
			continue
		}
		n := c.nodes[i]
		st := &failingStep{SpanID: row.SpanID, Name: row.Name, Kind: row.Kind, Message: n.Span.Status().Message()}
		if n.Step != nil {
			st.Step = n.Step.Index
		}
		return st
	}
	return nil
}

// nearest finds the run most like c (the example of pattern id) among the runs of f without the
// pattern that belong to the same agent (patterns.Agent, else the root span's name): the passing
// runs first, else runs of other patterns. Of the nearestCandidates runs nearest in start time,
// the one whose step names are most alike (stepSimilarity) wins; a tie goes to the nearer in time.
// It returns why there is none when there is none.
func (s *Server) nearest(ctx context.Context, pr store.PatternReader, f store.PatternFilter, id string, c *cachedRun) (*nearestRun, string) {
	agent := runAgent(c.view)
	f.PatternID = ""
	var passing, other []patterns.Run
	err := pr.PatternRuns(ctx, f, func(r store.PatternRun) error {
		switch {
		case r.Tier == store.TierCold || r.TraceID == c.run.TraceID || r.PatternID == id:
		case r.PatternID == "":
			passing = append(passing, r)
		default:
			other = append(other, r)
		}
		return nil
	})
	if err != nil {
		return nil, "reading the run index: " + err.Error()
	}
	mine := stepNames(c.view)
	for _, set := range [][]patterns.Run{passing, other} {
		sort.Slice(set, func(i, j int) bool { return absDur(set[i].Start.Sub(c.start)) < absDur(set[j].Start.Sub(c.start)) })
		var best *nearestRun
		read := 0
		for _, r := range set {
			if read == nearestCandidates {
				break
			}
			if r.Agent != "" && r.Agent != agent {
				continue
			}
			cc, err := s.loadRun(ctx, r.TraceID)
			if err != nil {
				continue
			}
			read++
			if runAgent(cc.view) != agent {
				continue
			}
			sim := stepSimilarity(mine, stepNames(cc.view))
			if best == nil || sim > best.Similarity {
				best = &nearestRun{TraceID: r.TraceID, Start: r.Start, Passing: r.PatternID == "", Similarity: sim, Agent: agent}
			}
		}
		if best != nil {
			return best, ""
		}
	}
	return nil, fmt.Sprintf("no run of agent %q without this pattern since %s", agent, sinceText(f.Since))
}

func sinceText(t time.Time) string {
	if t.IsZero() {
		return "the first run"
	}
	return t.UTC().Format("2006-01-02 15:04") + " UTC"
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// runAgent is the agent a run belongs to (patterns.Agent: gen_ai.agent.name, else service.name),
// else its first root span's name.
func runAgent(v *runview.View) string {
	if a := patterns.Agent(v); a != "" {
		return a
	}
	for _, n := range v.Nodes {
		if n.Depth == 0 {
			return n.Span.Name()
		}
	}
	return ""
}

// stepNames are a run's LLM and tool steps in run order, each as kind and name (the operation
// and model of an LLM call, the tool's name), at most maxStepNames.
func stepNames(v *runview.View) []string {
	var out []string
	for _, n := range v.Nodes {
		if len(out) == maxStepNames {
			break
		}
		switch n.Kind {
		case genai.KindLLM, genai.KindTool:
			out = append(out, string(n.Kind)+":"+n.Span.Name())
		}
	}
	return out
}

// stepSimilarity is 2·LCS(a, b) / (|a| + |b|) over step names (1 for two empty runs): how much of
// the two step sequences is the same steps in the same order.
func stepSimilarity(a, b []string) float64 {
	if len(a)+len(b) == 0 {
		return 1
	}
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			switch {
			case a[i] == b[j]:
				cur[j+1] = prev[j] + 1
			case prev[j+1] >= cur[j]:
				cur[j+1] = prev[j+1]
			default:
				cur[j+1] = cur[j]
			}
		}
		prev, cur = cur, prev
	}
	return 2 * float64(prev[len(b)]) / float64(len(a)+len(b))
}

// addPatternToDataset freezes runs of pattern {id} into dataset NAME (form fields name, limit,
// note), each expecting no_pattern=ID, with dataset.AddFromPattern (what `runagain dataset add
// NAME --pattern ID --limit N` calls), and redirects to the new version.
func (s *Server) addPatternToDataset(w http.ResponseWriter, r *http.Request) {
	if err := s.checkCSRF(r); err != nil {
		http.Error(w, "403 forbidden: "+err.Error(), http.StatusForbidden)
		return
	}
	if s.opts.Datasets == nil {
		s.failPage(w, r, fmt.Errorf("%w: no dataset store is configured", errNotFound))
		return
	}
	pr, err := s.patternReader()
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	a := dataset.PatternAdd{Name: strings.TrimSpace(r.PostFormValue("name")), PatternID: r.PathValue("id"),
		Note: strings.TrimSpace(r.PostFormValue("note")),
		View: runview.Options{Prices: s.opts.Prices, SessionKeys: s.opts.SessionKeys}}
	if err := dataset.CheckName(a.Name); err != nil {
		s.failPage(w, r, badRequest("dataset name: %v", err))
		return
	}
	if l := strings.TrimSpace(r.PostFormValue("limit")); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			s.failPage(w, r, badRequest("limit %q: want a number of runs from 1 to 1000", l))
			return
		}
		a.Limit = n
	}
	if since := strings.TrimSpace(r.PostFormValue("since")); since != "" && since != "all" {
		t, err := store.ParseTimeArg("since", since, s.opts.Now())
		if err != nil {
			s.failPage(w, r, badRequest("%v", err))
			return
		}
		a.Since = t
	}
	if !s.opts.NoRehydrate {
		a.View.Resolver = s.resolver
	}
	m, _, cases, err := dataset.AddFromPattern(r.Context(), s.opts.Datasets, s.opts.Reader, pr, a)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			err = fmt.Errorf("%w: %v", errNotFound, err)
		}
		s.failPage(w, r, err)
		return
	}
	frag := ""
	if len(cases) > 0 {
		frag = "#case-" + url.QueryEscape(cases[0].Case.ID)
	}
	http.Redirect(w, r, "/datasets/"+url.PathEscape(m.Name)+"/"+url.PathEscape(m.Version)+frag, http.StatusSeeOther)
}

// patternRuns is the set of trace ids of pattern id among the runs started in [since, until)
// (the sessions page's ?pattern= filter): read from the run index, one entry per run of the
// pattern.
func (s *Server) patternRuns(ctx context.Context, id string, ids []string) (map[string]bool, error) {
	pr, err := s.patternReader()
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	err = pr.PatternRuns(ctx, store.PatternFilter{PatternID: id, TraceIDs: ids}, func(r store.PatternRun) error {
		out[r.TraceID] = true
		return nil
	})
	return out, err
}

// patternChunk is how many listed runs the sessions page's pattern filter looks up at once.
const patternChunk = 256

// patternPages is the sessions page's pattern filter: the runs of the walk, newest first, are
// looked up patternChunk at a time in the run index (store.PatternFilter.TraceIDs), and those of
// pattern id are passed on to visit in the walk's order. The cost is that of the runs walked
// until the page and its count are full, not of the pattern's or the store's size.
type patternPages struct {
	s       *Server
	ctx     context.Context
	id      string
	visit   func(store.RunSummary) bool
	pending []store.RunSummary
	stopped bool
	err     error
}

// add is the walk's callback (store.EachRun): false once visit stopped or a lookup failed.
func (p *patternPages) add(sum store.RunSummary) bool {
	p.pending = append(p.pending, sum)
	if len(p.pending) < patternChunk {
		return true
	}
	return p.flush()
}

func (p *patternPages) flush() bool {
	if len(p.pending) == 0 || p.stopped {
		return !p.stopped
	}
	ids := make([]string, len(p.pending))
	for i, r := range p.pending {
		ids[i] = r.TraceID
	}
	in, err := p.s.patternRuns(p.ctx, p.id, ids)
	if err != nil {
		p.err, p.stopped = fmt.Errorf("pattern %s: %w", p.id, err), true
		return false
	}
	for _, r := range p.pending {
		if in[r.TraceID] && !p.visit(r) {
			p.stopped = true
			break
		}
	}
	p.pending = p.pending[:0]
	return !p.stopped
}

// close passes on the runs of the walk's last, partial chunk and returns a lookup's error.
func (p *patternPages) close() error {
	p.flush()
	return p.err
}

// runPattern is a run's pattern as the run page links it ("" when the run is not failing).
type runPattern struct {
	ID, Title string
}

func patternOf(v *runview.View) *runPattern {
	sig := patterns.FromView(v)
	if !sig.Failing() {
		return nil
	}
	return &runPattern{ID: sig.ID(), Title: sig.Canonical().Title()}
}
