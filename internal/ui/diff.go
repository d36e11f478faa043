// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/runagain/runagain/internal/diff"
)

type diffView struct {
	Title  string
	A, B   string
	Step   int
	Err    string
	R      *diff.Result
	Items  []diffItem
	Nav    diffNav
	RunA   string
	RunB   string
	Totals []totalRow
	// Changes names a rerun's recorded changes (diff.ChangesLine); empty when neither run is one.
	Changes string
}

type pairView struct {
	diff.Pair
	I      int
	First  bool
	Input  []messageDiffView
	Output []messageDiffView
}

type messageDiffView struct {
	diff.MessageDiff
	Lines []lineView
}

// lineView is one line of a message's text diff; a removed line directly followed by an added
// one is shown with the characters that changed marked inside it (Segs).
type lineView struct {
	Op   string // " ", "-", "+"
	Segs []seg
}

type seg struct {
	Op   string // "" (both), "del", "ins"
	Text string
}

type totalRow struct {
	Name  string
	A, B  string
	Delta string
	Diff  bool
}

// diffPage shows two runs side by side, aligned by internal/diff as `runagain diff` aligns them,
// the first difference highlighted, with the text diff inside changed messages.
func (s *Server) diffPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v := diffView{Title: "Diff", A: strings.ToLower(strings.TrimSpace(q.Get("a"))), B: strings.ToLower(strings.TrimSpace(q.Get("b")))}
	if runs := q["run"]; len(runs) > 0 && v.A == "" && v.B == "" {
		// From the sessions list's Compare: two runs ticked, newest first; the older is A.
		if len(runs) != 2 {
			v.Err = fmt.Sprintf("tick exactly two runs to compare (%d ticked)", len(runs))
			w.WriteHeader(http.StatusBadRequest)
			s.render(w, "diff.html", v)
			return
		}
		http.Redirect(w, r, "/diff?"+url.Values{"a": {runs[1]}, "b": {runs[0]}}.Encode(), http.StatusSeeOther)
		return
	}
	if q.Get("step") != "" {
		if _, err := fmt.Sscan(q.Get("step"), &v.Step); err != nil {
			v.Step = 0 // not a number: no step filter
		}
	}
	if v.A == "" || v.B == "" {
		if v.A != "" || v.B != "" {
			// One run given: say what is missing instead of showing the empty form silently.
			v.Err = "give two runs to compare: a and b, each a 32-hex-character trace id"
			w.WriteHeader(http.StatusBadRequest)
		}
		s.render(w, "diff.html", v)
		return
	}
	var errA, errB error
	v.A, errA = s.resolveTrace(r.Context(), v.A)
	v.B, errB = s.resolveTrace(r.Context(), v.B)
	var res *diff.Result
	err := errors.Join(errA, errB)
	if err == nil {
		res, err = s.diffRuns(r.Context(), v.A, v.B, v.Step)
	}
	if err != nil {
		v.Err = err.Error()
		if errors.Is(err, errNotFound) {
			w.WriteHeader(http.StatusNotFound)
		} else {
			w.WriteHeader(http.StatusBadRequest)
		}
		s.render(w, "diff.html", v)
		return
	}
	v.R = res
	v.Changes = diff.ChangesLine(res)
	v.Title = "Diff " + shorten(v.A, 8) + " · " + shorten(v.B, 8)
	page := -1 // the first difference's
	if p, err := strconv.Atoi(q.Get("page")); err == nil && p >= 1 {
		page = min(p, maxPage) - 1
	}
	expand := -1
	if e := q.Get("expand"); e != "" {
		expand, _ = strconv.Atoi(e)
	}
	base := url.Values{"a": {v.A}, "b": {v.B}}
	if v.Step > 0 {
		base.Set("step", strconv.Itoa(v.Step))
	}
	var ok bool
	v.Items, v.Nav, ok = layoutPairs(res, base, page, expand)
	if !ok {
		v.Err = fmt.Sprintf("page %d is past the last page of this diff (%d)", page+1, v.Nav.Pages)
		w.WriteHeader(http.StatusNotFound)
	}
	t := res.Totals
	v.Totals = []totalRow{irow("steps", t.Steps), irow("LLM calls", t.LLMCalls), irow("tool calls", t.ToolCalls)}
	if t.HTTPCalls.A > 0 || t.HTTPCalls.B > 0 { // as the CLI: only for runs with HTTP or MCP steps
		v.Totals = append(v.Totals, irow("HTTP calls", t.HTTPCalls))
	}
	v.Totals = append(v.Totals,
		irow("input tokens", t.InputTokens), irow("output tokens", t.OutputTokens),
		totalRow{Name: "cost", A: fmtUSD(t.CostUSD.A), B: fmtUSD(t.CostUSD.B), Delta: signed(fmtUSD, t.CostUSD.Delta), Diff: t.CostUSD.Delta != 0},
		totalRow{Name: "duration", A: fmtMS(t.DurationMS.A), B: fmtMS(t.DurationMS.B), Delta: signed(fmtMS, t.DurationMS.Delta), Diff: t.DurationMS.Delta != 0},
		irow("errors", t.Errors), irow("alerts", t.Alerts),
	)
	s.render(w, "diff.html", v)
}

func irow(name string, d diff.IntDelta) totalRow {
	return totalRow{Name: name, A: fmt.Sprint(d.A), B: fmt.Sprint(d.B), Delta: fmt.Sprintf("%+d", d.Delta), Diff: d.Delta != 0}
}

func signed(f func(float64) string, v float64) string {
	switch {
	case v > 0:
		return "+" + f(v)
	case v < 0:
		return "−" + f(-v)
	}
	return "0"
}

// diffRuns compares two runs with every payload rehydrated (diff.Runs reads the messages).
func (s *Server) diffRuns(ctx context.Context, a, b string, step int) (*diff.Result, error) {
	// The two runs are read and arranged side by side (reading a 10,000-span run from SQLite is
	// a third of its diff's time: BENCHMARKS.md, uibench); a run diffed with itself, once.
	same := strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
	var (
		cb    *cachedRun
		errB  error
		doneB = make(chan struct{})
	)
	if same {
		close(doneB)
	} else {
		go func() {
			defer close(doneB)
			cb, errB = s.loadRun(ctx, b)
		}()
	}
	ca, err := s.loadRun(ctx, a)
	<-doneB
	if err != nil {
		return nil, fmt.Errorf("run A %s: %w", a, err)
	}
	if same {
		cb = ca
	}
	if errB != nil {
		return nil, fmt.Errorf("run B %s: %w", b, errB)
	}
	for _, c := range []*cachedRun{ca, cb} {
		for i := range c.rows {
			_, _, _ = s.span(ctx, c, i) // a payload that stays a reference is named by diff.Runs
		}
	}
	// Locked in trace id order: a diff of A with B and one of B with A at once cannot deadlock.
	first, second := ca, cb
	if second.run.TraceID < first.run.TraceID {
		first, second = second, first
	}
	first.mu.Lock()
	defer first.mu.Unlock()
	if second != first {
		second.mu.Lock()
		defer second.mu.Unlock()
	}
	return diff.Runs(ca.view, cb.view, diff.Options{Step: step, Messages: llmCallMessages})
}

func messageDiffViews(ms []diff.MessageDiff) []messageDiffView {
	out := make([]messageDiffView, 0, len(ms))
	for _, m := range ms {
		mv := messageDiffView{MessageDiff: m}
		for i := 0; i < len(m.Text); i++ {
			l := m.Text[i]
			if l.Op == "-" && i+1 < len(m.Text) && m.Text[i+1].Op == "+" {
				del, ins := inline(l.Text, m.Text[i+1].Text)
				mv.Lines = append(mv.Lines, lineView{Op: "-", Segs: del}, lineView{Op: "+", Segs: ins})
				i++
				continue
			}
			mv.Lines = append(mv.Lines, lineView{Op: l.Op, Segs: []seg{{Text: l.Text}}})
		}
		out = append(out, mv)
	}
	return out
}

// inline marks the characters that differ between a removed line and the added line that
// replaces it (diff-match-patch, cleaned up to word-like boundaries).
func inline(a, b string) (del, ins []seg) {
	if len(a)+len(b) > 20000 {
		return []seg{{Op: "del", Text: a}}, []seg{{Op: "ins", Text: b}}
	}
	dmp := diffmatchpatch.New()
	ds := dmp.DiffCleanupSemantic(dmp.DiffMain(a, b, false))
	for _, d := range ds {
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			del = append(del, seg{Text: d.Text})
			ins = append(ins, seg{Text: d.Text})
		case diffmatchpatch.DiffDelete:
			del = append(del, seg{Op: "del", Text: d.Text})
		case diffmatchpatch.DiffInsert:
			ins = append(ins, seg{Op: "ins", Text: d.Text})
		}
	}
	return del, ins
}
