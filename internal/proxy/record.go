// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/llmhttp"
)

// Recorder is the record-mode proxy (an http.Handler).
type Recorder struct {
	cfg   Config
	gp    *goproxy.ProxyHttpServer
	root  Root
	flows *flows
	index atomic.Int64
	out   chan ptrace.Traces
	wg    sync.WaitGroup
	held  Held
	stats struct {
		sync.Mutex
		exchanges, sendErrors int
		traces                map[pcommon.TraceID]bool
		lastErr               error
	}
}

// NewRecorder returns a recording proxy. Spans are sent to cfg.Sink in the background; Close
// waits for them.
func NewRecorder(cfg Config, root Root) *Recorder {
	cfg.defaults()
	r := &Recorder{cfg: cfg, root: root, out: make(chan ptrace.Traces, 1024)}
	r.stats.traces = map[pcommon.TraceID]bool{}
	r.gp = newGoproxy(&r.cfg)
	r.gp.Tr = cfg.Transport
	r.flows = newFlows(&r.cfg, r, r.gp, r)
	// CONNECT: the tunnel's first bytes say what it carries (flow.go): plain HTTP is recorded
	// as is, TLS with --mitm, anything else is tunnelled unrecorded.
	r.gp.OnRequest().HandleConnectFunc(func(host string, _ *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
		return r.flows.connectAction(), host
	})
	r.gp.OnRequest().DoFunc(r.onRequest)
	r.gp.OnResponse().DoFunc(r.onResponse)
	r.gp.NonproxyHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { routeOrNotFound(&r.cfg, r.gp, w, req) })
	r.wg.Add(1)
	go r.sendLoop()
	return r
}

// ServeHTTP implements http.Handler.
//
// When the upstream breaks off a response body (its connection fails mid-stream), the client's
// connection is aborted too (http.ErrAbortHandler: no terminating chunk), so the agent sees the
// same failure it would have seen without the proxy instead of a clean, shortened response.
func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	cut := &upstreamCut{}
	r.gp.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), upstreamCutKey{}, cut)))
	if cut.Load() {
		panic(http.ErrAbortHandler)
	}
}

// upstreamCut is set by a response body whose upstream read failed before the end.
type upstreamCut struct{ atomic.Bool }

type upstreamCutKey struct{}

type pending struct {
	ex      *fixture.Exchange
	traceID pcommon.TraceID
	spanID  pcommon.SpanID
	parent  pcommon.SpanID
	trunc   []string
	extra   map[string]string // additional string attributes (a rerun's runagain.rerun.*)
	caller  bool              // the request carried the caller's span (W3C traceparent)
}

var tc = propagation.TraceContext{}

// parentOf extracts the caller's span from a W3C traceparent header.
func parentOf(h http.Header) (trace.SpanContext, bool) {
	sc := trace.SpanContextFromContext(tc.Extract(context.Background(), propagation.HeaderCarrier(h)))
	return sc, sc.IsValid()
}

func (r *Recorder) onRequest(req *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
	selfRoute(&r.cfg, req)
	if up := r.cfg.Upstream; up != nil {
		ctx.RoundTripper = goproxy.RoundTripperFunc(func(req *http.Request, _ *goproxy.ProxyCtx) (*http.Response, error) { return up.RoundTrip(req) })
	}
	p := &pending{ex: &fixture.Exchange{Method: req.Method, Source: "proxy", Start: time.Now(), RequestHeader: http.Header{}}}
	p.ex.Index = int(r.index.Add(1) - 1)
	p.ex.Protocol = protoVersion(req.Proto)
	for k, vs := range req.Header {
		if strings.HasPrefix(strings.ToLower(k), "proxy-") {
			continue
		}
		for _, v := range vs {
			p.ex.RequestHeader[k] = append(p.ex.RequestHeader[k], recordedHeaderValue(r.cfg.Redactor, k, v))
		}
	}
	p.ex.URL = redactURL(r.cfg.Redactor, req.URL)
	if req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return req, errorResponse(req, http.StatusBadGateway, "runagain proxy: reading the request body: "+err.Error())
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		p.ex.RequestBody = r.bodyForSpan(body, &p.trunc, fixture.AttrRequestBody)
	}
	if sc, ok := parentOf(req.Header); ok {
		p.traceID, p.parent = pcommon.TraceID(sc.TraceID()), pcommon.SpanID(sc.SpanID())
		p.caller = true
	} else if !r.root.TraceID.IsEmpty() {
		p.traceID, p.parent = r.root.TraceID, r.root.SpanID
	} else {
		p.traceID = NewTraceID()
	}
	p.spanID = NewSpanID()
	ctx.UserData = p
	return req, nil
}

func (r *Recorder) bodyForSpan(b []byte, trunc *[]string, key string) []byte {
	if len(b) > MaxBodyBytes {
		*trunc = append(*trunc, key)
		b = b[:MaxBodyBytes]
	}
	if r.cfg.RedactBodies && r.cfg.Redactor != nil {
		s, _ := r.cfg.Redactor.Redact(string(b))
		return []byte(s)
	}
	return b
}

func (r *Recorder) onResponse(resp *http.Response, ctx *goproxy.ProxyCtx) *http.Response {
	p, ok := ctx.UserData.(*pending)
	if !ok {
		return resp
	}
	ctx.UserData = nil
	if resp == nil {
		p.ex.End = time.Now()
		p.ex.Error = errorType(ctx.Error)
		r.finish(p)
		return resp
	}
	p.ex.Status = resp.StatusCode
	if v := protoVersion(resp.Proto); v != "" {
		p.ex.Protocol = v // the upstream connection's protocol (network.protocol.version)
	}
	p.ex.ResponseHeader = http.Header{}
	for k, vs := range resp.Header {
		for _, v := range vs {
			p.ex.ResponseHeader[k] = append(p.ex.ResponseHeader[k], recordedHeaderValue(r.cfg.Redactor, k, v))
		}
	}
	if resp.Uncompressed {
		p.ex.DecodedEncoding = "gzip" // Go's transport removed the gzip encoding it asked for
	}
	if resp.Body == nil || resp.Body == http.NoBody || resp.StatusCode == http.StatusSwitchingProtocols {
		// A protocol upgrade (WebSocket) is recorded as its handshake only; goproxy needs the
		// upstream connection (resp.Body) untouched to relay the frames.
		p.ex.End = time.Now()
		r.finish(p)
		return resp
	}
	cb := &captureBody{rc: resp.Body, p: p, r: r, sse: fixture.IsEventStream(resp.Header.Get("Content-Type"))}
	if resp.Request != nil {
		cb.upstreamCut, _ = resp.Request.Context().Value(upstreamCutKey{}).(*upstreamCut)
	}
	resp.Body = cb
	return resp
}

// finish turns an exchange into a span and queues it for the sink.
func (r *Recorder) finish(p *pending) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "runagain-proxy")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(fixture.ScopeName)
	sp := ss.Spans().AppendEmpty()
	sp.SetTraceID(p.traceID)
	sp.SetSpanID(p.spanID)
	sp.SetParentSpanID(p.parent)
	fixture.ToSpan(p.ex, sp)
	if !p.caller {
		// An agent with no tracing of its own: the exchange is its LLM or MCP call, read from the
		// recorded bytes (llmhttp). With a caller span, the caller's instrumentation records the
		// call; deriving it again would count its tokens and cost twice.
		llmhttp.Derive(p.ex, sp.Attributes())
	}
	for k, v := range p.extra {
		sp.Attributes().PutStr(k, v)
	}
	if len(p.trunc) > 0 {
		s := sp.Attributes().PutEmptySlice("runagain.fixture.truncated")
		for _, k := range p.trunc {
			s.AppendEmpty().SetStr(k)
		}
	}
	if !r.holdExchange(p, td) {
		r.out <- td
	}
	// Counted once queued: a caller that waits for Stats().Exchanges and then calls Close never
	// closes r.out under a send still in flight.
	r.stats.Lock()
	r.stats.exchanges++
	r.stats.traces[p.traceID] = true
	r.stats.Unlock()
}

// MaxHeld bounds the exchange batches a Held keeps in memory; later ones are sent at once,
// unjoined.
const MaxHeld = 4096

// Held keeps exchange batches while a join is pending (Start .. Take): what would go under the
// proxy's root is placed in the agent's own trace once the command has ended (internal/agentrun
// Joiner). At most MaxHeld are kept. The zero value holds nothing; safe for concurrent use.
type Held struct {
	mu  sync.Mutex
	on  bool
	tds []ptrace.Traces
}

// Start begins holding.
func (h *Held) Start() {
	h.mu.Lock()
	h.on = true
	h.mu.Unlock()
}

// Take ends the hold and returns the batches kept, in the order they were kept.
func (h *Held) Take() []ptrace.Traces {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.tds
	h.on, h.tds = false, nil
	return out
}

// Keep keeps td when a hold is on and fewer than MaxHeld are kept; false: send it now.
func (h *Held) Keep(td ptrace.Traces) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.on || len(h.tds) >= MaxHeld {
		return false
	}
	h.tds = append(h.tds, td)
	return true
}

// Hold keeps, from now on, the exchanges that would go under the proxy's root (no traceparent)
// instead of sending them, so that they can be placed in the agent's own trace once it has ended
// (Join); TakeHeld hands them over and ends the hold. At most MaxHeld are kept.
func (r *Recorder) Hold() { r.held.Start() }

// TakeHeld ends the hold and returns the exchanges kept, in the order they finished. The caller
// sends them (Emit), placed or as they are.
func (r *Recorder) TakeHeld() []ptrace.Traces { return r.held.Take() }

func (r *Recorder) holdExchange(p *pending, td ptrace.Traces) bool {
	if p.caller || r.root.TraceID.IsEmpty() || p.traceID != r.root.TraceID {
		return false
	}
	return r.held.Keep(td)
}

func protoVersion(p string) string {
	v := strings.TrimPrefix(p, "HTTP/")
	if v == p {
		return ""
	}
	return strings.TrimSuffix(v, ".0")
}
