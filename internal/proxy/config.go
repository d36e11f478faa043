// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"crypto/tls"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/redact"
)

// MaxBodyBytes bounds one request or response body kept in a span (256 MiB); larger bodies are
// forwarded whole but recorded truncated, with runagain.fixture.truncated set.
const MaxBodyBytes = 256 << 20

// Config configures a Recorder or a Replayer.
type Config struct {
	Routes Routes
	// Redactor redacts recorded header values and url.full query values (always), request and
	// response bodies (when RedactBodies), and normalises requests for matching in replay.
	Redactor     *redact.Redactor
	RedactBodies bool
	// CA, when set, intercepts HTTPS CONNECT tunnels (MITM) with leaf certificates it signs.
	CA *tls.Certificate
	// Transport sends recorded requests upstream (record) and allowed ones (replay). Default: an
	// http.Transport that ignores HTTP_PROXY (the proxy must not loop through itself) and verifies TLS.
	Transport *http.Transport
	// Upstream, when set, replaces Transport for recorded requests: the request (as the agent
	// sent it, after route resolution) is recorded, then sent with Upstream. `runagain test`
	// points it at a Replayer, so a test run is recorded while its responses are replayed.
	Upstream http.RoundTripper
	// Sink receives spans (record) and divergence records (replay).
	Sink Sink
	// Logger for warnings; default log.Default().
	Logger *log.Logger
	// SpillPath, when set, receives the spans the sink could not take (after its retries) as
	// OTLP/JSON lines, which `runagain import` sends again; nothing recorded is dropped silently.
	SpillPath string
	// SelfHosts are host:port values that address the proxy itself (absolute-form requests to
	// them are served like relative ones). Serve fills it in from its listener.
	SelfHosts []string
	// ConnectTo maps a host:port the agent addresses (lower case) to the address dialled instead,
	// e.g. a staging or local upstream; requests and their recordings keep the host they were
	// sent to. It applies to Transport's default dialer and to tunnels.
	ConnectTo map[string]string
}

// dialer dials addr, or where ConnectTo sends it.
func (c *Config) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := c.ConnectTo[strings.ToLower(addr)]; ok {
			addr = to
		}
		return d.DialContext(ctx, network, addr)
	}
}

func (c *Config) defaults() {
	if c.Routes == nil {
		c.Routes, _ = NewRoutes(nil)
	}
	if c.Logger == nil {
		c.Logger = log.Default()
	}
	if c.Transport == nil {
		c.Transport = &http.Transport{
			Proxy:                 nil,
			DialContext:           c.dialer(),
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	}
}

// Root is the span that exchanges without a W3C traceparent become children of (the
// `runagain proxy --record -- COMMAND` run); the zero value means each such exchange starts a
// trace of its own.
type Root struct {
	TraceID pcommon.TraceID
	SpanID  pcommon.SpanID
}
