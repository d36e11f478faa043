// SPDX-License-Identifier: Apache-2.0

// Package ui is the web view of `runagain ui`: server-rendered pages (html/template) over the
// same store.Reader the CLI reads, with a little plain JavaScript and CSS embedded with embed
// (no front-end build step).
//
// Pages: Sessions (/), Run (/runs/{trace_id}, a virtualised waterfall whose rows come from
// /api/runs/{trace_id}/rows in pages), a span's panel (/runs/{trace_id}/spans/{span_id}/panel,
// loaded on demand), Step N (/runs/{trace_id}/steps/{n}, what `runagain show --step N` prints) and
// Diff (/diff?a=...&b=...), Patterns (/patterns, /patterns/{id}: patterns.go). Every value comes from agent payloads, which are untrusted: pages are
// rendered with html/template (contextual escaping) and the script only ever sets textContent.
//
// Access: New serves without authentication; WithToken wraps a handler so that every request must
// carry the bearer token (Authorization header, or a cookie set by visiting any page once with
// ?token=...), else it gets 401. CheckListen tells whether an address needs a token.
package ui

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/runagain/runagain/internal/dataset"
	"github.com/runagain/runagain/internal/payloadref"
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// DefaultListen is where `runagain ui` listens unless told otherwise: loopback only.
const DefaultListen = "127.0.0.1:7600"

// Options configures New.
type Options struct {
	// Reader is the store the pages read (the CLI's openReader()). Required; New does not close it.
	Reader store.Reader
	// Prices price each call (the runagain_storage extension's table with its overrides); nil:
	// the embedded table. SessionKeys name sessions (nil: genai.DefaultSessionKeys). Both go to
	// the read model (runview.Build), so the pages count and price as every other view.
	Prices      *pricing.Prices
	SessionKeys []string
	// Datasets is the dataset store the Datasets page lists (internal/dataset); nil hides it.
	Datasets *dataset.Store
	// Quarantine lists the hot tier's dead-letter table newest first (the CLI's readQuarantine);
	// nil: the Quarantine page says none is configured.
	Quarantine func(ctx context.Context, limit int) ([]store.QuarantinedSpan, error)
	// NoRehydrate shows payload references (K_ref) instead of fetching the payloads.
	NoRehydrate bool
	// PayloadStaging is the payload store's staging area (payloadref.WithStagingDir), so that a
	// payload whose pack the collector on this machine has not uploaded yet is read from there;
	// "" reads uploaded packs only.
	PayloadStaging string
	// PageSize is the sessions page's rows per page (default 50).
	PageSize int
	// CacheTTL is how long a read run is kept for further requests (default 30 s): a run still
	// being recorded shows new spans after at most this long.
	CacheTTL time.Duration
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// Server serves the pages. It is an http.Handler.
type Server struct {
	opts     Options
	mux      *http.ServeMux
	tmpl     *template.Template
	resolver *payloadref.Resolver

	csrf string                      // the token of state-changing forms (dataset_add.go)
	cop  *http.CrossOriginProtection // refuses cross-origin state-changing requests

	mu   sync.Mutex
	runs map[string]*cachedRun
	// details are the listed runs' aggregates (agents, alerts, cost, previews), by trace id:
	// at most maxDetails, least recently used evicted (hashicorp/golang-lru), so the UI's memory
	// does not grow with the store it lists.
	details *lru.Cache[string, runDetail]
}

// maxDetails bounds the UI's cache of run aggregates: 10,000 entries of a few hundred bytes
// each (previews are cut short), a few MB; a sessions filter that reads more candidates than
// that reads the evicted ones again.
const maxDetails = 10_000

// New returns the UI's handler over o.Reader. Close releases the payload resolver.
func New(o Options) (*Server, error) {
	if o.Reader == nil {
		return nil, errors.New("ui: Options.Reader is nil")
	}
	if o.PageSize <= 0 {
		o.PageSize = 50
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	tmpl, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("ui: parse templates: %w", err)
	}
	details, err := lru.New[string, runDetail](maxDetails)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: o, mux: http.NewServeMux(), tmpl: tmpl, resolver: payloadref.NewResolver(payloadref.WithStagingDir(o.PayloadStaging)),
		runs: map[string]*cachedRun{}, details: details, csrf: newCSRFToken(), cop: http.NewCrossOriginProtection()}
	static, _ := fs.Sub(staticFS, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.sessionsPage)
	s.mux.HandleFunc("GET /runs/{trace}", s.fullTrace(s.runPage))
	s.mux.HandleFunc("GET /sessions/{session}", s.sessionPage)
	s.mux.HandleFunc("POST /runs/{trace}/dataset", s.addToDataset)
	s.mux.HandleFunc("GET /runs/{trace}/steps/{n}", s.fullTrace(s.stepPage))
	s.mux.HandleFunc("GET /runs/{trace}/spans/{span}/panel", s.panelFragment)
	s.mux.HandleFunc("GET /runs/{trace}/spans/{span}/attr", s.attrValue)
	s.mux.HandleFunc("GET /runs/{trace}/spans/{span}/otlp", s.spanOTLP)
	s.mux.HandleFunc("GET /api/runs/{trace}/rows", s.rowsAPI)
	s.mux.HandleFunc("GET /api/runs/{trace}/find", s.findAPI)
	s.mux.HandleFunc("GET /api/runs/{trace}/tree", s.treeAPI)
	s.mux.HandleFunc("GET /diff", s.diffPage)
	s.mux.HandleFunc("GET /datasets", s.datasetsPage)
	s.mux.HandleFunc("GET /quarantine", s.quarantinePage)
	s.mux.HandleFunc("GET /patterns", s.patternsPage)
	s.mux.HandleFunc("GET /patterns/{id}", s.patternPage)
	s.mux.HandleFunc("POST /patterns/{id}/dataset", s.addPatternToDataset)
	s.mux.HandleFunc("GET /datasets/{name}/{version}", s.versionPage)
	s.mux.HandleFunc("GET /", s.notFound)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Nothing on these pages needs another origin; inline scripts and event handlers never run.
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	s.mux.ServeHTTP(w, r)
}

// Close releases the payload resolver's buckets.
func (s *Server) Close() error { return s.resolver.Close() }

// TokenCookie is the cookie WithToken sets once a browser has presented the token in ?token=.
const TokenCookie = "runagain_ui_token"

// WithToken requires the bearer token on every request: "Authorization: Bearer TOKEN", or the
// cookie TokenCookie. A request with ?token=TOKEN gets the cookie (HttpOnly, SameSite=Strict) and
// is redirected to the same URL without it, so a browser can open the UI from one link. Anything
// else gets 401 with a WWW-Authenticate challenge (RFC 6750). An empty token returns h unchanged.
func WithToken(h http.Handler, token string) http.Handler {
	if token == "" {
		return h
	}
	ok := func(got string) bool { return subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1 }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found && ok(strings.TrimSpace(auth)) {
			h.ServeHTTP(w, r)
			return
		}
		if c, err := r.Cookie(TokenCookie); err == nil && ok(c.Value) {
			h.ServeHTTP(w, r)
			return
		}
		if q := r.URL.Query(); q.Has("token") && ok(q.Get("token")) {
			http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q.Del("token")
			// Same origin only: a path like //host would be read by the browser as another host.
			target := "/" + strings.TrimLeft(r.URL.EscapedPath(), "/")
			if len(q) > 0 {
				target += "?" + q.Encode()
			}
			http.Redirect(w, r, target, http.StatusSeeOther)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="runagain ui"`)
		http.Error(w, "401 unauthorized: this runagain ui needs its bearer token (Authorization: Bearer TOKEN, or open any page once with ?token=TOKEN)", http.StatusUnauthorized)
	})
}

// IsLoopback reports whether a listen address (host:port) binds only loopback interfaces:
// 127.0.0.0/8, ::1 or "localhost". An empty host (every interface) is not loopback.
func IsLoopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// CheckListen returns an error when addr is not loopback and token is empty: the UI shows every
// stored payload, so it is never exposed beyond this machine without a token.
func CheckListen(addr, token string) error {
	lo, err := IsLoopback(addr)
	if err != nil {
		return err
	}
	if !lo && token == "" {
		return fmt.Errorf("refusing to listen on %s without a token: the UI shows every stored prompt and payload; "+
			"listen on 127.0.0.1 or give --token / --token-file (clients send Authorization: Bearer TOKEN)", addr)
	}
	return nil
}

// Serve listens on addr and serves h until ctx ends, then shuts down gracefully. ready, if not
// nil, receives the bound address (useful with port 0).
func Serve(ctx context.Context, addr string, h http.Handler, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	}
}
