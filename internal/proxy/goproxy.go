// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/elazarl/goproxy"
)

// newGoproxy returns a goproxy server with our defaults.
func newGoproxy(cfg *Config) *goproxy.ProxyHttpServer {
	gp := goproxy.NewProxyHttpServer()
	gp.Logger = cfg.Logger
	gp.Verbose = false
	gp.KeepDestinationHeaders = true
	gp.CertStore = newCertStore()
	// ConnectDial for tunnels: direct, never through HTTP(S)_PROXY of our own environment.
	dial := cfg.dialer()
	gp.ConnectDial = func(network, addr string) (net.Conn, error) { return dial(context.Background(), network, addr) }
	return gp
}

// routeOrNotFound serves a relative request ("/openai/v1/...") through its route.
func routeOrNotFound(cfg *Config, gp *goproxy.ProxyHttpServer, w http.ResponseWriter, req *http.Request) {
	u, ok := cfg.Routes.Resolve(req.URL)
	if !ok {
		http.Error(w, fmt.Sprintf("runagain proxy: no route for %s; routes: %s; or use the proxy as HTTP_PROXY",
			req.URL.Path, strings.Join(cfg.Routes.Names(), ", ")), http.StatusNotFound)
		return
	}
	if d := doubledSegment(u.Path); d != "" && cfg.Logger != nil {
		if _, seen := doubledWarned.LoadOrStore(u.Host+d, true); !seen {
			cfg.Logger.Printf("runagain proxy: %s %s goes to %s, with %s twice: the route's URL likely ends in %s and the client adds it again (give the route without it, e.g. --route NAME=%s://%s)",
				req.Method, req.URL.Path, redactURL(cfg.Redactor, u), d, d, u.Scheme, u.Host)
		}
	}
	r2 := req.Clone(req.Context())
	r2.URL = u
	r2.Host = u.Host
	r2.RequestURI = ""
	gp.ServeHTTP(w, r2)
}

// doubledWarned holds the upstream host and segment warned about once per process.
var doubledWarned sync.Map

// doubledSegment returns "/v1" when p holds an API version segment twice in a row ("/v1/v1/chat",
// "/api/v1/v1/chat"): a route whose URL ends in the version the client's base path adds again.
// "" otherwise.
func doubledSegment(p string) string {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	for i := 0; i+1 < len(segs); i++ {
		s := segs[i]
		if s == segs[i+1] && len(s) >= 2 && s[0] == 'v' && strings.Trim(s[1:], "0123456789") == "" {
			return "/" + s
		}
	}
	return ""
}

// selfRoute rewrites an absolute-form request addressed to the proxy itself through its route.
func selfRoute(cfg *Config, req *http.Request) bool {
	for _, h := range cfg.SelfHosts {
		if strings.EqualFold(req.URL.Host, h) {
			if u, ok := cfg.Routes.Resolve(req.URL); ok {
				req.URL = u
				req.Host = u.Host
			}
			return true
		}
	}
	return false
}

// errorResponse builds a plain-text response for the client.
func errorResponse(req *http.Request, status int, msg string) *http.Response {
	return goproxy.NewResponse(req, "text/plain; charset=utf-8", status, msg+"\n")
}

// certStore caches MITM leaf certificates per host.
type certStore struct {
	mu sync.Mutex
	m  map[string]*tls.Certificate
}

func newCertStore() *certStore { return &certStore{m: map[string]*tls.Certificate{}} }

func (s *certStore) Fetch(host string, gen func() (*tls.Certificate, error)) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.m[host]; ok {
		return c, nil
	}
	c, err := gen()
	if err != nil {
		return nil, err
	}
	s.m[host] = c
	return c, nil
}
