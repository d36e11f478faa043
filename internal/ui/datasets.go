// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/runagain/runagain/internal/dataset"
	"github.com/runagain/runagain/internal/store"
)

type datasetsView struct {
	Title    string
	None     bool
	Err      string
	Datasets []datasetView
}

type datasetView struct {
	Name     string
	Versions []*dataset.Manifest
}

type versionView struct {
	Title   string
	M       *dataset.Manifest
	Cases   []caseView
	Err     string
	Scanned int
}

type caseView struct {
	ID, TraceID string
	Files       int
	Bytes       int64
	Input       string
	Expect      []string
	InStore     bool
	Last        *testRunView
}

// testRunView is the newest test run of a case found in the store, its expectations checked
// again from what it recorded (dataset.RunFacts, dataset.Evaluate).
type testRunView struct {
	TraceID  string
	Start    time.Time
	Status   string // "pass", "fail", or "unknown" (the run could not be read)
	Failure  string
	Checked  int
	Original string
	// DiffURL opens the diff with the case's run at its first difference; SameSteps says there
	// is none (a failed expectation the case's own run fails too).
	DiffURL   string
	SameSteps bool
}

// datasetsPage lists the datasets and their versions, newest first (internal/dataset).
func (s *Server) datasetsPage(w http.ResponseWriter, r *http.Request) {
	v := datasetsView{Title: "Datasets"}
	if s.opts.Datasets == nil {
		v.None = true
		s.render(w, "datasets.html", v)
		return
	}
	names, err := s.opts.Datasets.Names(r.Context())
	if err != nil {
		v.Err = err.Error()
	}
	for _, n := range names {
		vs, err := s.opts.Datasets.Versions(r.Context(), n)
		if err != nil {
			v.Err = err.Error()
			continue
		}
		v.Datasets = append(v.Datasets, datasetView{Name: n, Versions: vs})
	}
	s.render(w, "datasets.html", v)
}

// versionPage shows one version: its cases, the run each froze, their inputs and expectations.
func (s *Server) versionPage(w http.ResponseWriter, r *http.Request) {
	if s.opts.Datasets == nil {
		s.failPage(w, r, fmt.Errorf("%w: no dataset store is configured", errNotFound))
		return
	}
	m, err := s.opts.Datasets.Resolve(r.Context(), r.PathValue("name")+"@"+r.PathValue("version"))
	if err != nil {
		kind := errBadRequest
		if errors.Is(err, dataset.ErrNotFound) {
			kind = errNotFound
		}
		s.failPage(w, r, fmt.Errorf("%w: %w", kind, err))
		return
	}
	v := versionView{Title: "Dataset " + m.Name + "@" + dataset.Short(m.Version), M: m}
	cases, err := s.opts.Datasets.Cases(r.Context(), m)
	if err != nil {
		v.Err = err.Error()
	}
	byID := map[string]*dataset.Case{}
	for _, c := range cases {
		byID[c.ID] = c
	}
	for _, ref := range m.Cases {
		cv := caseView{ID: ref.ID, TraceID: ref.TraceID, Files: len(ref.Files)}
		for _, f := range ref.Files {
			cv.Bytes += f.Size
		}
		if c := byID[ref.ID]; c != nil && c.Expect != nil {
			cv.Input = c.Expect.Input
			for _, e := range c.Expect.Expect {
				cv.Expect = append(cv.Expect, e.Name())
			}
		}
		if _, err := s.opts.Reader.Run(r.Context(), ref.TraceID); err == nil {
			cv.InStore = true
		}
		v.Cases = append(v.Cases, cv)
	}
	last := s.lastTestRuns(r.Context(), m)
	for i := range v.Cases {
		if tr, ok := last[v.Cases[i].ID]; ok {
			if c := byID[v.Cases[i].ID]; c != nil {
				v.Cases[i].Last = s.checkTestRun(r.Context(), c, tr)
			}
		}
	}
	s.render(w, "dataset.html", v)
}

// lastTestRuns finds, among the runs started since m was created (newest first, until every case
// has one), the newest test run of each case of m (by the attributes `runagain test` records).
func (s *Server) lastTestRuns(ctx context.Context, m *dataset.Manifest) map[string]store.RunSummary {
	out := map[string]store.RunSummary{}
	sums, err := s.opts.Reader.Runs(ctx, store.RunFilter{Since: m.Created})
	if err != nil {
		return out
	}
	for _, sum := range sums {
		if len(out) == len(m.Cases) {
			break
		}
		d := s.detail(ctx, sum)
		if d.TestCase == "" || d.TestDataset != m.Name || d.TestVersion != m.Version {
			continue
		}
		if _, seen := out[d.TestCase]; !seen {
			out[d.TestCase] = sum
		}
	}
	return out
}

// checkTestRun checks case c's expectations again against its test run sum, as `runagain test`
// did (the command's exit code is not recorded in the run: it is taken as 0).
func (s *Server) checkTestRun(ctx context.Context, c *dataset.Case, sum store.RunSummary) *testRunView {
	tv := &testRunView{TraceID: sum.TraceID, Start: sum.Start, Status: "unknown", Original: c.TraceID}
	cr, err := s.loadRun(ctx, sum.TraceID)
	if err != nil {
		tv.Failure = err.Error()
		return tv
	}
	for i := range cr.rows {
		_, _, _ = s.span(ctx, cr, i)
	}
	cr.mu.Lock()
	facts, err := dataset.RunFacts(cr.view)
	cr.mu.Unlock()
	if err != nil {
		tv.Failure = err.Error()
		return tv
	}
	if c.Expect == nil {
		c.Expect = &dataset.CaseExpect{}
	}
	checked, failures := dataset.Evaluate(c, facts, 0)
	tv.Checked = len(checked)
	tv.Status = "pass"
	if len(failures) > 0 {
		tv.Status, tv.Failure = "fail", failures[0].String()
		if res, err := s.diffRuns(ctx, c.TraceID, sum.TraceID, 0); err == nil {
			if res.Identical {
				tv.SameSteps = true
			} else {
				tv.DiffURL = "/diff?" + url.Values{"a": {c.TraceID}, "b": {sum.TraceID}}.Encode() + fmt.Sprintf("#pair-%d", res.First.Pair)
			}
		}
	}
	return tv
}
