// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/elazarl/goproxy"
)

// A flow is one TCP connection whose bytes the proxy reads itself: the inside of a CONNECT
// tunnel, or a connection a network sandbox (internal/sandbox) captured on its way to any
// address. Its first bytes say what it carries:
//
//   - HTTP/1.x: each request is served as if sent to the proxy with an absolute URL
//     (http://HOST/...): recorded, or answered from the recording; no --mitm needed.
//   - TLS: with a CA (--mitm) it is terminated with a leaf certificate for the ClientHello's
//     SNI and its requests served as https://SNI/...; without one the policy decides.
//   - anything else (or nothing within peekTimeout): the policy decides.
//
// The policy (Recorder, Replayer) relays an opaque flow unrecorded or refuses it.

// peekTimeout bounds the wait for a flow's first bytes (a protocol where the server speaks first
// sends none: it cannot be recorded).
const peekTimeout = 30 * time.Second

// flowPolicy decides what happens to a flow the proxy cannot read.
type flowPolicy interface {
	// opaqueFlow is called for a flow to hostport that is not HTTP and not TLS the proxy can
	// intercept; what describes it ("an HTTPS tunnel", "a TCP connection that is neither HTTP
	// nor TLS"); explicit is true inside a CONNECT the client asked for. true relays it
	// unrecorded to hostport; false closes it.
	opaqueFlow(hostport, what string, explicit bool) bool
}

// flows serves flows for one Recorder or Replayer (h, which goproxy backs).
type flows struct {
	cfg    *Config
	h      http.Handler
	gp     *goproxy.ProxyHttpServer
	policy flowPolicy
	certs  *certStore

	mu     sync.Mutex
	logged map[string]bool
	active map[net.Conn]bool
	wg     sync.WaitGroup
}

func newFlows(cfg *Config, h http.Handler, gp *goproxy.ProxyHttpServer, p flowPolicy) *flows {
	return &flows{cfg: cfg, h: h, gp: gp, policy: p, certs: newCertStore(), logged: map[string]bool{}, active: map[net.Conn]bool{}}
}

// connectAction takes a CONNECT tunnel over: 200, then the flow is served.
func (f *flows) connectAction() *goproxy.ConnectAction {
	return &goproxy.ConnectAction{Action: goproxy.ConnectHijack, Hijack: func(req *http.Request, client net.Conn, _ *goproxy.ProxyCtx) {
		if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			client.Close()
			return
		}
		f.serve(client, req.URL.Host, true)
	}}
}

// ServeFlow serves a connection a network sandbox captured on its way to hostport (the name the
// sandbox resolved, else the address, with the port). It returns when the connection is over.
func (r *Recorder) ServeFlow(c net.Conn, hostport string) { r.flows.serve(c, hostport, false) }

// ServeFlow serves a connection a network sandbox captured on its way to hostport.
func (r *Replayer) ServeFlow(c net.Conn, hostport string) { r.flows.serve(c, hostport, false) }

// logOnce logs msg the first time key is seen.
func (f *flows) logOnce(key, msg string) {
	f.mu.Lock()
	first := !f.logged[key]
	f.logged[key] = true
	f.mu.Unlock()
	if first {
		f.cfg.Logger.Print(msg)
	}
}

func (f *flows) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active == nil {
		return false // shut down
	}
	f.active[c] = true
	f.wg.Add(1)
	return true
}

func (f *flows) untrack(c net.Conn) {
	f.mu.Lock()
	if f.active != nil && f.active[c] {
		delete(f.active, c)
		f.wg.Done()
	}
	f.mu.Unlock()
}

// shutdown waits for the flows in progress until ctx ends, then closes those left; no flow
// starts afterwards.
func (f *flows) shutdown(ctx context.Context) {
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	f.mu.Lock()
	for c := range f.active {
		c.Close()
		f.wg.Done()
	}
	f.active = nil
	f.mu.Unlock()
}

func (f *flows) serve(c net.Conn, hostport string, explicit bool) {
	if !f.track(c) {
		c.Close()
		return
	}
	defer f.untrack(c)
	defer c.Close()
	kind := "runagain proxy: CONNECT " + hostport
	if !explicit {
		kind = "runagain sandbox: TCP to " + hostport
	}
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(peekTimeout))
	first, _ := br.Peek(1)
	_ = c.SetReadDeadline(time.Time{})
	pc := &peekedConn{Conn: c, r: br}
	switch {
	case len(first) == 1 && first[0] == 0x16 && f.cfg.CA != nil: // TLS handshake record
		tc := tls.Server(pc, &tls.Config{NextProtos: []string{"http/1.1"}, GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
			name := h.ServerName
			if name == "" {
				name = hostOnly(hostport)
			}
			return f.leaf(name)
		}})
		if err := tc.Handshake(); err != nil {
			f.cfg.Logger.Printf("%s: TLS handshake with the client failed (does it trust the proxy's CA?): %v", kind, err)
			return
		}
		target := hostport
		if sni := tc.ConnectionState().ServerName; sni != "" {
			target = net.JoinHostPort(sni, portOf(hostport, "443"))
		}
		f.logOnce("tls "+hostport, kind+": HTTPS intercepted with the proxy's CA, each request recorded or replayed")
		f.serveHTTP(tc, "https", target)
	case len(first) == 1 && first[0] == 0x16:
		if !f.policy.opaqueFlow(hostport, "an HTTPS tunnel", explicit) {
			return
		}
		f.logOnce("tunnel "+hostport, kind+": HTTPS tunnelled without recording (start the proxy with --mitm to record HTTPS)")
		f.relay(pc, hostport)
	case len(first) == 1 && looksLikeHTTP(br):
		f.logOnce("http "+hostport, kind+": plain HTTP, each request recorded or replayed")
		f.serveHTTP(pc, "http", hostport)
	default:
		if !f.policy.opaqueFlow(hostport, "a TCP connection that is neither HTTP nor TLS", explicit) {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // a reset: the client sees the connection fail, not end
			}
			return
		}
		f.relay(pc, hostport)
	}
}

// looksLikeHTTP reports whether the buffered bytes start an HTTP/1.x request line (a method
// token of upper-case letters, then a space).
func looksLikeHTTP(br *bufio.Reader) bool {
	b, _ := br.Peek(min(br.Buffered(), 8))
	for i, ch := range b {
		switch {
		case ch == ' ' && i > 0:
			return true
		case ch < 'A' || ch > 'Z':
			return false
		}
	}
	return len(b) > 0 && br.Buffered() < 8
}

// serveHTTP serves the HTTP/1.x requests of c with absolute URLs scheme://hostport (a request
// already in absolute form keeps its URL) through the proxy's handler.
func (f *flows) serveHTTP(c net.Conn, scheme, hostport string) {
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !req.URL.IsAbs() {
			req.URL.Scheme = scheme
			req.URL.Host = req.Host
			if req.URL.Host == "" {
				req.URL.Host = hostport
			}
		}
		f.h.ServeHTTP(w, req)
	})
	l := newOneConnListener(c)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, ErrorLog: f.cfg.Logger,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed || s == http.StateHijacked {
				l.Close()
			}
		}}
	_ = srv.Serve(l)
	<-l.done
}

// relay copies bytes both ways between c and a new connection to hostport (Relay).
func (f *flows) relay(c net.Conn, hostport string) {
	up, err := f.cfg.dialer()(context.Background(), "tcp", hostport)
	if err != nil {
		f.cfg.Logger.Printf("runagain proxy: connecting to %s: %v", hostport, err)
		return
	}
	Relay(c, up)
}

// leaf is the certificate for name signed by the CA, cached per name.
func (f *flows) leaf(name string) (*tls.Certificate, error) {
	return f.certs.Fetch(name, func() (*tls.Certificate, error) {
		tc, err := goproxy.TLSConfigFromCA(f.cfg.CA)(name, &goproxy.ProxyCtx{Proxy: f.gp})
		if err != nil {
			return nil, err
		}
		if len(tc.Certificates) == 0 {
			return nil, errors.New("no certificate signed for " + name)
		}
		return &tc.Certificates[0], nil
	})
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

func portOf(hostport, def string) string {
	if _, p, err := net.SplitHostPort(hostport); err == nil {
		return p
	}
	return def
}

// peekedConn reads through the buffer that peeked at its first bytes.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

// oneConnListener hands one connection to http.Server.Serve, then blocks until closed.
type oneConnListener struct {
	c    net.Conn
	once sync.Once
	mu   sync.Mutex
	used bool
	done chan struct{}
}

func newOneConnListener(c net.Conn) *oneConnListener {
	return &oneConnListener{c: c, done: make(chan struct{})}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if !l.used {
		l.used = true
		l.mu.Unlock()
		return l.c, nil
	}
	l.mu.Unlock()
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.c.LocalAddr() }

// describeFlow names a flow in a divergence ("CONNECT" for a tunnel, "TCP" for a captured one).
func describeFlow(explicit bool) string {
	if explicit {
		return http.MethodConnect
	}
	return "TCP"
}

// opaqueFlow (Recorder): an HTTPS tunnel the client asked for (CONNECT without --mitm) and any
// opaque flow inside a CONNECT are relayed unrecorded, as a forward proxy does; an opaque flow
// the sandbox captured is refused, since it could neither be recorded nor replayed (and a raw
// connection must not leave unseen), except an HTTPS tunnel, which a recording run relays.
func (r *Recorder) opaqueFlow(hostport, what string, explicit bool) bool {
	if explicit || what == "an HTTPS tunnel" {
		return true
	}
	r.flows.logOnce("refused "+hostport, fmt.Sprintf("runagain sandbox: refused %s to %s: it can be neither recorded nor replayed", what, hostport))
	return false
}

// opaqueFlow (Replayer): relayed only to --allow-host; otherwise refused and recorded as the
// replay's divergence, since nothing recorded can answer it.
func (r *Replayer) opaqueFlow(hostport, what string, explicit bool) bool {
	if r.allowed(hostport) {
		return true
	}
	r.mu.Lock()
	r.live++
	r.refused++
	d := &Divergence{Request: r.live, Method: describeFlow(explicit), URL: hostport,
		Diff: Difference{Field: "connect", Expected: "a plain-HTTP, route or intercepted (--mitm) request", Got: what + " to " + hostport}}
	r.diverge(d)
	r.mu.Unlock()
	r.cfg.Logger.Print(d.Message())
	return false
}
