// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// errorView is the page every failed request gets: the status, what went wrong and where to go
// from here (the navigation bar, the run when one was named).
type errorView struct {
	Title   string
	Code    int
	Status  string
	Message string
	TraceID string // the run the request named, when it is a valid trace id
}

// failPage answers err as an error page with navigation: 404 for a missing run, step or span,
// 400 for a malformed request, 500 otherwise.
func (s *Server) failPage(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, errNotFound):
		code = http.StatusNotFound
	case errors.Is(err, errBadRequest):
		code = http.StatusBadRequest
	}
	v := errorView{Title: http.StatusText(code), Code: code, Status: http.StatusText(code),
		Message: strings.TrimPrefix(strings.TrimPrefix(err.Error(), errBadRequest.Error()+": "), errNotFound.Error()+": ")}
	if t := strings.ToLower(r.PathValue("trace")); isHex(t, 32) {
		v.TraceID = t
	}
	if strings.HasPrefix(r.URL.Path, "/api/") || r.Header.Get("Accept") == "application/json" {
		http.Error(w, err.Error(), code)
		return
	}
	var buf bytes.Buffer
	if e := s.tmpl.ExecuteTemplate(&buf, "error.html", v); e != nil {
		http.Error(w, err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(escapeBidi(buf.Bytes()))
}

// notFound is the error page of a path no handler serves.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.failPage(w, r, fmt.Errorf("%w: no page at %s", errNotFound, r.URL.Path))
}

// bidiControls are the Unicode bidirectional formatting characters (Unicode Standard Annex #9,
// explicit embeddings, overrides and isolates, plus the implicit marks): a payload holding
// U+202E would reverse the text after it on the page ("Trojan Source", CVE-2021-42574). The
// pages show each as a visible [U+XXXX], as the CLI does (internal/termsafe).
var bidiControls = []rune{0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069}

var bidiReplacer = func() *strings.Replacer {
	var pairs []string
	for _, r := range bidiControls {
		pairs = append(pairs, string(r), fmt.Sprintf("[U+%04X]", r))
	}
	return strings.NewReplacer(pairs...)
}()

// escapeBidi replaces bidi controls in a rendered page or JSON document (every one is inside
// text or a string: the replacement is plain text). Values served as the exact recorded bytes
// (/attr, downloads) keep them.
func escapeBidi(b []byte) []byte {
	for _, r := range bidiControls {
		if bytes.ContainsRune(b, r) {
			return []byte(bidiReplacer.Replace(string(b)))
		}
	}
	return b
}
