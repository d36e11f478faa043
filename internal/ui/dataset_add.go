// SPDX-License-Identifier: Apache-2.0

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

// addToDataset freezes the run into dataset NAME (the form's name, case and expect fields) with
// the functions `runagain dataset add NAME RUN --case-id ID --expect E` uses (dataset.NewCase,
// Store.Add): a new version holding the newest version's cases with this one added or
// replaced. It answers with a redirect to the version.
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
	for i := range c.rows {
		if c.run.Tier != store.TierHot {
			break // NewCase says why the run cannot be frozen
		}
		if _, _, err := s.span(ctx, c, i); err != nil {
			s.failPage(w, r, fmt.Errorf("run %s: rehydrating payloads: %w", c.run.TraceID, err))
			return
		}
	}
	var expects []string
	for _, e := range strings.Split(r.PostFormValue("expect"), "\n") {
		if e = strings.TrimSpace(e); e != "" {
			expects = append(expects, e)
		}
	}
	c.mu.Lock()
	cs, _, err := dataset.NewCase(c.view, strings.TrimSpace(r.PostFormValue("case")), "", expects)
	c.mu.Unlock()
	if err != nil {
		s.failPage(w, r, badRequest("%v", err))
		return
	}
	m, _, err := s.opts.Datasets.Add(ctx, name, strings.TrimSpace(r.PostFormValue("note")), []*dataset.Case{cs})
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	http.Redirect(w, r, "/datasets/"+url.PathEscape(m.Name)+"/"+url.PathEscape(m.Version)+"#case-"+url.QueryEscape(cs.ID), http.StatusSeeOther)
}
