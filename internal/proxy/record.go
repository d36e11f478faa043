package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
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
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
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

// Recorder is the record-mode proxy (an http.Handler).
type Recorder struct {
	cfg   Config
	gp    *goproxy.ProxyHttpServer
	root  Root
	index atomic.Int64
	out   chan ptrace.Traces
	wg    sync.WaitGroup
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
	r.gp.OnRequest().HandleConnectFunc(func(host string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
		if r.cfg.CA != nil {
			return &goproxy.ConnectAction{Action: goproxy.ConnectMitm, TLSConfig: goproxy.TLSConfigFromCA(r.cfg.CA)}, host
		}
		r.cfg.Logger.Printf("runagain proxy: CONNECT %s tunnelled without recording (start the proxy with --mitm to record HTTPS)", host)
		return goproxy.OkConnect, host
	})
	r.gp.OnRequest().DoFunc(r.onRequest)
	r.gp.OnResponse().DoFunc(r.onResponse)
	r.gp.NonproxyHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { routeOrNotFound(&r.cfg, r.gp, w, req) })
	r.wg.Add(1)
	go r.sendLoop()
	return r
}

// newGoproxy returns a goproxy server with our defaults.
func newGoproxy(cfg *Config) *goproxy.ProxyHttpServer {
	gp := goproxy.NewProxyHttpServer()
	gp.Logger = cfg.Logger
	gp.Verbose = false
	gp.KeepDestinationHeaders = true
	gp.CertStore = newCertStore()
	// ConnectDial for tunnels: direct, never through HTTP(S)_PROXY of our own environment.
	d := &net.Dialer{Timeout: 30 * time.Second}
	gp.ConnectDial = func(network, addr string) (net.Conn, error) { return d.Dial(network, addr) }
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

// ServeHTTP implements http.Handler.
func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) { r.gp.ServeHTTP(w, req) }

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
	resp.Body = &captureBody{rc: resp.Body, p: p, r: r, sse: fixture.IsEventStream(resp.Header.Get("Content-Type"))}
	return resp
}

// captureBody tees the response body into the exchange, timing each read; at EOF or Close the
// exchange is finished and sent.
type captureBody struct {
	rc    io.ReadCloser
	p     *pending
	r     *Recorder
	sse   bool
	buf   bytes.Buffer
	reads []fixture.Chunk
	once  sync.Once
	err   error
	eof   bool // the upstream's body was read to its end
	// cutShort: closed before the end with no upstream error (the client stopped reading)
	cutShort bool
}

func (c *captureBody) Read(b []byte) (int, error) {
	n, err := c.rc.Read(b)
	if n > 0 {
		if c.buf.Len()+n <= MaxBodyBytes {
			c.reads = append(c.reads, fixture.Chunk{Offset: c.buf.Len(), Size: n, Time: time.Now()})
			c.buf.Write(b[:n])
		} else if len(c.p.trunc) == 0 || c.p.trunc[len(c.p.trunc)-1] != fixture.AttrResponseBody {
			c.p.trunc = append(c.p.trunc, fixture.AttrResponseBody)
		}
	}
	if err != nil {
		switch {
		case errors.Is(err, io.EOF):
			c.eof = true
		case errors.Is(err, context.Canceled):
			// the upstream request is bound to the client's: the client went away
			c.cutShort = true
		default:
			c.err = err
		}
		c.done()
	}
	return n, err
}

// Close is called by the proxy when the response is over: at the upstream's EOF, or earlier when
// the client went away (it read one SSE event and closed the stream), which marks the exchange
// cut short.
func (c *captureBody) Close() error {
	err := c.rc.Close()
	if !c.eof && c.err == nil {
		c.cutShort = true
	}
	c.done()
	return err
}

func (c *captureBody) done() {
	c.once.Do(func() {
		p := c.p
		p.ex.End = time.Now()
		body := c.buf.Bytes()
		if c.sse {
			// SSE events, each timed by the read that completed it.
			evs := fixture.SplitEvents(body)
			ri := 0
			for i := range evs {
				end := evs[i].Offset + evs[i].Size
				for ri < len(c.reads)-1 && c.reads[ri].Offset+c.reads[ri].Size < end {
					ri++
				}
				if ri < len(c.reads) {
					evs[i].Time = c.reads[ri].Time
				}
			}
			p.ex.Chunks = evs
		}
		if c.err != nil {
			p.ex.Error = errorType(c.err)
		}
		p.ex.CutShort = c.cutShort
		if c.r.cfg.RedactBodies && c.r.cfg.Redactor != nil {
			s, _ := c.r.cfg.Redactor.Redact(string(body))
			if c.sse && len(s) != len(body) {
				// offsets no longer line up with redacted text: re-split events, keep their times
				evs := fixture.SplitEvents([]byte(s))
				for i := range evs {
					if i < len(p.ex.Chunks) {
						evs[i].Time = p.ex.Chunks[i].Time
					}
				}
				p.ex.Chunks = evs
			}
			body = []byte(s)
		}
		p.ex.ResponseBody = bytes.Clone(body)
		c.r.finish(p)
	})
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
	r.stats.Lock()
	r.stats.exchanges++
	r.stats.traces[p.traceID] = true
	r.stats.Unlock()
	r.out <- td
}

// Emit queues extra spans (the run's root span) for the sink.
func (r *Recorder) Emit(td ptrace.Traces) { r.out <- td }

func (r *Recorder) sendLoop() {
	defer r.wg.Done()
	for td := range r.out {
		if r.cfg.Sink == nil {
			continue
		}
		if err := r.cfg.Sink.ConsumeTraces(context.Background(), td); err != nil {
			if r.cfg.SpillPath != "" {
				if serr := spill(r.cfg.SpillPath, td); serr == nil {
					err = fmt.Errorf("%w; kept in %s (send it with: runagain import %s)", err, r.cfg.SpillPath, r.cfg.SpillPath)
				} else {
					err = fmt.Errorf("%w; and keeping it in %s failed: %v", err, r.cfg.SpillPath, serr)
				}
			}
			r.cfg.Logger.Printf("runagain proxy: sending %d spans: %v", td.SpanCount(), err)
			r.stats.Lock()
			r.stats.sendErrors++
			r.stats.lastErr = err
			r.stats.Unlock()
		}
	}
}

// spill appends td to path as one OTLP/JSON line.
func spill(path string, td ptrace.Traces) error {
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Stats is what a Recorder did so far.
type Stats struct {
	Exchanges  int
	Traces     []pcommon.TraceID
	SendErrors int
	LastError  error
}

// Stats returns the counts so far.
func (r *Recorder) Stats() Stats {
	r.stats.Lock()
	defer r.stats.Unlock()
	st := Stats{Exchanges: r.stats.exchanges, SendErrors: r.stats.sendErrors, LastError: r.stats.lastErr}
	for t := range r.stats.traces {
		st.Traces = append(st.Traces, t)
	}
	return st
}

// Close waits until every queued span was handed to the sink. Call it after the server stopped.
func (r *Recorder) Close() error {
	close(r.out)
	r.wg.Wait()
	st := r.Stats()
	if st.SendErrors > 0 {
		return fmt.Errorf("%d span batches could not be sent: %w", st.SendErrors, st.LastError)
	}
	return nil
}

func protoVersion(p string) string {
	v := strings.TrimPrefix(p, "HTTP/")
	if v == p {
		return ""
	}
	return strings.TrimSuffix(v, ".0")
}

// redactURL gives url.full with user info removed and query values redacted.
func redactURL(rd *redact.Redactor, u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.UserPassword("REDACTED", "REDACTED")
	}
	if rd != nil && c.RawQuery != "" {
		q := c.Query()
		changed := false
		for k, vs := range q {
			for i, v := range vs {
				if nv, fs := rd.RedactKeyed(k, v); len(fs) > 0 {
					vs[i] = nv
					changed = true
				}
			}
		}
		if changed {
			c.RawQuery = q.Encode()
		}
	}
	return c.String()
}

func errorType(err error) string {
	if err == nil {
		return ""
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	if inner := errors.Unwrap(err); inner != nil {
		err = inner // the cause's type (*net.OpError...) rather than a wrapper's
	}
	return fmt.Sprintf("%T", err)
}

// errorResponse builds a plain-text response for the client.
func errorResponse(req *http.Request, status int, msg string) *http.Response {
	return goproxy.NewResponse(req, "text/plain; charset=utf-8", status, msg+"\n")
}

// NewTraceID returns a random trace id.
func NewTraceID() pcommon.TraceID {
	var id pcommon.TraceID
	for id.IsEmpty() {
		_, _ = rand.Read(id[:])
	}
	return id
}

// NewSpanID returns a random span id.
func NewSpanID() pcommon.SpanID {
	var id pcommon.SpanID
	for id.IsEmpty() {
		_, _ = rand.Read(id[:])
	}
	return id
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

// credentialHeaders carry a credential whatever their value looks like: HTTP authentication
// (RFC 9110 sections 11.6.2 and 11.7.2), cookies (RFC 6265) and the API-key headers of the LLM
// providers the proxy routes (OpenAI/Azure api-key, Anthropic x-api-key, Gemini x-goog-api-key).
// Their values are never recorded, even one that looks like a placeholder ("sk-test-123"):
// replay does not match on headers, so nothing needs them.
var credentialHeaders = map[string]bool{
	"authorization": true, "proxy-authorization": true, "cookie": true, "set-cookie": true,
	"x-api-key": true, "api-key": true, "x-goog-api-key": true, "x-auth-token": true,
}

// recordedHeaderValue is the value of header k as recorded: through the redactor when there is
// one; a credential header's value that is still as sent (no redactor, or a value the redactor
// took for a placeholder) is replaced whole with "[REDACTED:<lower-case header name>]".
func recordedHeaderValue(rd *redact.Redactor, k, v string) string {
	out := v
	if rd != nil {
		out, _ = rd.RedactKeyed(k, v)
	}
	if lk := strings.ToLower(k); credentialHeaders[lk] && out == v && v != "" {
		return "[REDACTED:" + lk + "]"
	}
	return out
}
