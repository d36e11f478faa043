// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"net/http"
	"strings"
)

// fullTrace serves a page of one run at its full trace id: a URL naming an unambiguous prefix
// (/runs/4bf92f35) is redirected (302 Found, the query kept) to the same page at the full id, as
// `runagain show` accepts prefixes; a bad id or an ambiguous prefix is a 400 naming the
// candidates, no match a 404.
func (s *Server) fullTrace(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := strings.ToLower(strings.TrimSpace(r.PathValue("trace")))
		if isHex(id, 32) {
			h(w, r)
			return
		}
		full, err := s.resolveTrace(r.Context(), id)
		if err != nil {
			s.failPage(w, r, err)
			return
		}
		u := *r.URL
		u.Path = "/runs/" + full + strings.TrimPrefix(r.URL.Path, "/runs/"+r.PathValue("trace"))
		u.RawPath = ""
		http.Redirect(w, r, u.String(), http.StatusFound)
	}
}
