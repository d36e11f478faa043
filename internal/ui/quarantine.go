// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"net/http"

	"github.com/runagain/runagain/internal/store"
)

// quarantineLimit is how many of the newest quarantined spans the page lists.
const quarantineLimit = 500

type quarantineView struct {
	Title string
	None  bool
	Err   string
	Spans []store.QuarantinedSpan
	Limit int
}

// quarantinePage lists the spans the span_quarantine processor kept aside (all-zero ids), newest
// first, each with its reason and its OTLP JSON as received.
func (s *Server) quarantinePage(w http.ResponseWriter, r *http.Request) {
	v := quarantineView{Title: "Quarantine", Limit: quarantineLimit}
	if s.opts.Quarantine == nil {
		v.None = true
	} else if spans, err := s.opts.Quarantine(r.Context(), quarantineLimit); err != nil {
		v.Err = err.Error()
	} else {
		v.Spans = spans
	}
	s.render(w, "quarantine.html", v)
}
