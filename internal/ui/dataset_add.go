package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/runagain/runagain/internal/dataset"
	"github.com/runagain/runagain/internal/store"
)

// newCSRFToken is the per-process token every state-changing form carries (hidden field csrf).
func newCSRFToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// checkCSRF refuses a state-changing request that another site could have made: a cross-origin
// request (net/http CrossOriginProtection: Sec-Fetch-Site, else Origin against Host), or one
// without this process's form token.
func (s *Server) checkCSRF(r *http.Request) error {
	if err := s.cop.Check(r); err != nil {
		return err
	}
	if got := r.PostFormValue("csrf"); subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) != 1 {
		return errors.New("the form's csrf token is missing or wrong: reload the page and submit again")
	}
	return nil
}

// addToDataset freezes the run into dataset NAME (the form's name, case and expect fields, as
// `runagain dataset add NAME RUN --case ID --expect E` does): a new version holding the newest
// version's cases with this one added or replaced. It answers with a redirect to the version.
func (s *Server) addToDataset(w http.ResponseWriter, r *http.Request) {
	if err := s.checkCSRF(r); err != nil {
		http.Error(w, "403 forbidden: "+err.Error(), http.StatusForbidden)
		return
	}
	if s.opts.Datasets == nil {
		s.failPage(w, r, fmt.Errorf("%w: no dataset store is configured", errNotFound))
		return
	}
	ctx := r.Context()
	name := strings.TrimSpace(r.PostFormValue("name"))
	if err := dataset.CheckName(name); err != nil {
		s.failPage(w, r, badRequest("dataset name: %v", err))
		return
	}
	c, err := s.loadRun(ctx, r.PathValue("trace"))
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	if c.run.Tier != store.TierHot {
		s.failPage(w, r, badRequest("run %s is only in the %s tier: its spans and payloads are gone, it cannot be frozen", c.run.TraceID, c.run.Tier))
		return
	}
	for i := range c.rows {
		if _, _, err := s.span(ctx, c, i); err != nil {
			s.failPage(w, r, fmt.Errorf("run %s: rehydrating payloads: %w", c.run.TraceID, err))
			return
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	facts, err := dataset.RunFacts(c.view)
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	ex := &dataset.CaseExpect{}
	for _, e := range strings.Split(r.PostFormValue("expect"), "\n") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		x, err := dataset.ParseExpect(e, facts)
		if err != nil {
			s.failPage(w, r, badRequest("expectation %q: %v", e, err))
			return
		}
		ex.Expect = append(ex.Expect, x)
	}
	cs, err := dataset.Freeze(strings.TrimSpace(r.PostFormValue("case")), c.run.TraceID, c.run.Traces, c.run.Logs, ex)
	if err != nil {
		s.failPage(w, r, badRequest("%v", err))
		return
	}
	cases := []*dataset.Case{cs}
	if vs, err := s.opts.Datasets.Versions(ctx, name); err == nil {
		old, err := s.opts.Datasets.Cases(ctx, vs[0])
		if err != nil {
			s.failPage(w, r, err)
			return
		}
		for _, o := range old {
			if o.ID != cs.ID {
				cases = append(cases, o)
			}
		}
	} else if !errors.Is(err, dataset.ErrNotFound) {
		s.failPage(w, r, err)
		return
	}
	m, _, err := s.opts.Datasets.Put(ctx, name, strings.TrimSpace(r.PostFormValue("note")), cases)
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	http.Redirect(w, r, "/datasets/"+url.PathEscape(m.Name)+"/"+url.PathEscape(m.Version)+"#case-"+url.QueryEscape(cs.ID), http.StatusSeeOther)
}
