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
	r2 := req.Clone(req.Context())
	r2.URL = u
	r2.Host = u.Host
	r2.RequestURI = ""
	gp.ServeHTTP(w, r2)
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
