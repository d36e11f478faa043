// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/elazarl/goproxy"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/runagainattr"
)

// Divergence log record: event name and attributes (docs/architecture.md: an inference is a new record
// pointing at the recorded span, never a change to it).
const (
	EventDivergence     = runagainattr.EventDivergence
	AttrDivField        = runagainattr.DivergenceField
	AttrDivExpected     = runagainattr.DivergenceExpected
	AttrDivGot          = runagainattr.DivergenceGot
	AttrDivRequestIndex = runagainattr.DivergenceRequest
	AttrDivNearestIndex = runagainattr.DivergenceNearest
	// AttrDivOriginalTrace is the recorded run the nearest span belongs to (the record itself is
	// on the attempt's run: replay, rerun or test).
	AttrDivOriginalTrace = "runagain.replay.original.trace_id"
	// HeaderDivergence is set on the error response a diverging request gets.
	HeaderDivergence = "X-Runagain-Replay-Divergence"
)

// Replayer is the replay-mode proxy (an http.Handler): it serves the recorded exchanges of one
// run and sends nothing to the network except to AllowHosts.
type Replayer struct {
	cfg     Config
	gp      *goproxy.ProxyHttpServer
	norm    Normalizer
	traceID pcommon.TraceID
	// origTrace is the recorded run's trace (of its fixture spans).
	origTrace pcommon.TraceID
	allow     map[string]bool
	writes    map[string]bool // --allow-live-writes (firewall.go)
	realtime  bool
	flows     *flows

	mu      sync.Mutex
	entries []*entry
	queues  map[string][]*entry
	served  int
	live    int
	div     *Divergence
	// forwarded and refused count requests sent live to an allowed host and refused.
	forwarded, refused int
	rerun              *rerunState // set in rerun mode (rerun.go)
	sinkWG             sync.WaitGroup
	sinkErr            error
	// holdRecords keeps the divergence record instead of sending it (HoldRecords), in held.
	holdRecords bool
	held        []plog.Logs
}

type entry struct {
	ex     *fixture.Exchange
	spanID pcommon.SpanID
	req    *request
	key    string // req.key()
	pos    int    // 0-based position in recorded order
	used   bool
	llm    bool // rerun mode: an LLM request (never the nearest of a non-LLM divergence)
}

// Divergence is the first live request that matched no recorded one.
type Divergence struct {
	Request       int // 1-based number of the live request
	Method, URL   string
	Diff          Difference
	Nearest       *fixture.Exchange // nil when the run has no exchange at all
	NearestSpanID pcommon.SpanID
	NearestPos    int  // 1-based position of Nearest in recorded order
	Exhausted     bool // an identical request was recorded, but fewer times than it is made now
	// Refusal is set when the side-effect firewall refused the request (firewall.go).
	Refusal string
}

// Message is the one-line explanation given to the client, the log record and the terminal.
func (d *Divergence) Message() string {
	head := fmt.Sprintf("runagain replay: request %d (%s %s) matches no recorded request", d.Request, d.Method, d.URL)
	if d.Refusal != "" {
		head = d.firewallMessage()
	}
	switch {
	case d.Nearest == nil:
		return head + ": the recorded run has no HTTP exchanges"
	case d.Exhausted:
		return fmt.Sprintf("%s: identical to recorded request %d (span %s), but every recording of it was already served (%s)",
			head, d.NearestPos, d.NearestSpanID, d.Diff)
	}
	return fmt.Sprintf("%s; nearest is recorded request %d (span %s): %s", head, d.NearestPos, d.NearestSpanID, d.Diff)
}

// ReplayOptions tune NewReplayer.
type ReplayOptions struct {
	// AllowHosts are hosts (name or name:port) whose requests with a safe method (GET, HEAD,
	// OPTIONS, TRACE) go to the network unrecorded; other methods are matched against the
	// recording and refused when nothing matches (the side-effect firewall, firewall.go).
	AllowHosts []string
	// AllowWrites are hosts whose requests go to the network unrecorded whatever their method.
	AllowWrites []string
	// Realtime paces SSE chunks with their recorded timing; default: as fast as possible.
	Realtime bool
	// IgnoreBody and IgnoreQuery: see Normalizer. A malformed IgnoreBody path is an error naming it.
	IgnoreBody, IgnoreQuery []string
	// Rerun, when set, turns the replay into a rerun (rerun.go): LLM requests that no longer
	// match go live, and every exchange is recorded as a new run.
	Rerun *RerunOptions
}

// NewReplayer loads the fixture spans of td (offloaded bodies must be rehydrated already).
// traceID is the run, used for divergence records. Exchanges are served in recorded order
// (start time, then runagain.fixture.index) per match key.
func NewReplayer(cfg Config, td ptrace.Traces, traceID pcommon.TraceID, o ReplayOptions) (*Replayer, error) {
	ignore := make([]bodyPath, 0, len(o.IgnoreBody))
	for _, p := range o.IgnoreBody {
		bp, err := parseBodyPath(p)
		if err != nil {
			return nil, fmt.Errorf("--ignore-body-field %q: %w", p, err)
		}
		ignore = append(ignore, bp)
	}
	cfg.defaults()
	r := &Replayer{cfg: cfg, norm: Normalizer{Redactor: cfg.Redactor, IgnoreBody: o.IgnoreBody, IgnoreQuery: o.IgnoreQuery, ignore: ignore}, traceID: traceID, queues: map[string][]*entry{},
		allow: map[string]bool{}, realtime: o.Realtime}
	for _, h := range o.AllowHosts {
		r.allow[strings.ToLower(h)] = true
	}
	r.initFirewall(o)
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				sp := spans.At(k)
				if !fixture.IsFixture(sp) {
					continue
				}
				ex, err := fixture.FromSpan(sp)
				if err != nil {
					return nil, err
				}
				r.entries = append(r.entries, &entry{ex: ex, spanID: sp.SpanID()})
				r.origTrace = sp.TraceID()
			}
		}
	}
	sort.SliceStable(r.entries, func(a, b int) bool {
		ea, eb := r.entries[a].ex, r.entries[b].ex
		if !ea.Start.Equal(eb.Start) {
			return ea.Start.Before(eb.Start)
		}
		return ea.Index < eb.Index
	})
	for i, e := range r.entries {
		e.pos = i
		u, err := parseURL(e.ex.URL)
		if err != nil {
			return nil, fmt.Errorf("recorded request %d (span %s): url.full %q: %w", i+1, e.spanID, e.ex.URL, err)
		}
		e.req = r.norm.normalize(e.ex.Method, u, e.ex.RequestHeader.Get("Content-Type"), e.ex.RequestBody)
		e.key = e.req.key()
		r.queues[e.key] = append(r.queues[e.key], e)
	}
	r.gp = newGoproxy(&r.cfg)
	r.gp.Tr = cfg.Transport
	r.flows = newFlows(&r.cfg, r, r.gp, r)
	r.gp.OnRequest().HandleConnectFunc(r.onConnect)
	r.gp.OnRequest().DoFunc(r.onRequest)
	if o.Rerun != nil {
		if err := r.initRerun(*o.Rerun); err != nil {
			return nil, err
		}
	}
	r.gp.NonproxyHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { routeOrNotFound(&r.cfg, r.gp, w, req) })
	return r, nil
}

// Exchanges is the number of recorded exchanges loaded.
func (r *Replayer) Exchanges() int { return len(r.entries) }

// ServeHTTP implements http.Handler.
//
// A response the upstream broke off when it was recorded (fixture.Exchange.CutByUpstream) is
// served as it was received and then the connection is aborted (http.ErrAbortHandler: no
// terminating chunk), so the agent meets the same failure it met in the recording, not a clean,
// shortened response that would send it down another path.
func (r *Replayer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	cut := &upstreamCut{}
	r.gp.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), upstreamCutKey{}, cut)))
	if cut.Load() {
		panic(http.ErrAbortHandler)
	}
}

func (r *Replayer) allowed(hostport string) bool {
	h := strings.ToLower(hostport)
	if r.allow[h] {
		return true
	}
	if host, _, err := net.SplitHostPort(h); err == nil {
		return r.allow[host]
	}
	return false
}

func (r *Replayer) onConnect(host string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
	if r.allowed(host) {
		return goproxy.OkConnect, host
	}
	// The tunnel's first bytes decide (flow.go): plain HTTP and TLS with --mitm are answered
	// from the recording, anything else is refused as the divergence (opaqueFlow).
	return r.flows.connectAction(), host
}

func (r *Replayer) onRequest(req *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
	selfRoute(&r.cfg, req)
	if r.goesLive(req) {
		return req, nil // explicitly allowed: to the network, unrecorded
	}
	if r.rerun != nil {
		return r.rerunRequest(req, ctx)
	}
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(io.LimitReader(req.Body, MaxBodyBytes+1))
		req.Body.Close()
		if err != nil {
			return req, errorResponse(req, http.StatusBadGateway, "runagain replay: reading the request body: "+err.Error())
		}
		body = b
	}
	live := r.norm.normalize(req.Method, req.URL, req.Header.Get("Content-Type"), body)
	r.mu.Lock()
	r.live++
	n := r.live
	if r.div != nil {
		d := r.div
		r.refused++
		r.mu.Unlock()
		return req, divergenceResponse(req, d, fmt.Sprintf("runagain replay: stopped at request %d; request %d (%s %s) not served. %s",
			d.Request, n, req.Method, req.URL, d.Message()))
	}
	k := live.key()
	if q := r.queues[k]; len(q) > 0 {
		e := q[0]
		r.queues[k] = q[1:]
		e.used = true
		r.served++
		r.mu.Unlock()
		return req, r.response(req, rpcExchange(e.ex, e.req, live))
	}
	d := r.nearest(live, n, req)
	r.diverge(d)
	r.refused++
	r.mu.Unlock()
	r.cfg.Logger.Print(d.Message())
	return req, divergenceResponse(req, d, d.Message())
}

// nearest builds the divergence of live against the closest recorded request, preferring
// ones not served yet. Callers hold r.mu.
func (r *Replayer) nearest(live *request, n int, req *http.Request) *Divergence {
	d := &Divergence{Request: n, Method: req.Method, URL: redactURL(r.cfg.Redactor, req.URL), Refusal: r.refusal(req)}
	var best *entry
	bestScore := -1.0
	for _, pass := range []bool{false, true} { // unused first, then any
		for _, e := range r.entries {
			if e.used != pass || e.llm {
				continue
			}
			if s := similarity(e.req, live); s > bestScore {
				best, bestScore = e, s
			}
		}
		if best != nil {
			break
		}
	}
	if best == nil {
		d.Diff = Difference{Field: "request", Expected: "(no recorded request)", Got: req.Method + " " + req.URL.Path}
		return d
	}
	d.Nearest, d.NearestSpanID, d.NearestPos = best.ex, best.spanID, best.pos+1
	if diff, ok := diff(best.req, live); ok {
		d.Diff = diff
	} else {
		d.Exhausted = true
		count := 0
		for _, e := range r.entries {
			if e.key == best.key {
				count++
			}
		}
		d.Diff = Difference{Field: "count", Expected: fmt.Sprintf("%d time(s)", count), Got: "once more"}
	}
	return d
}

// diverge stores the first divergence and sends its record. Callers hold r.mu.
func (r *Replayer) diverge(d *Divergence) {
	if r.div != nil {
		return
	}
	r.div = d
	if r.cfg.Sink == nil {
		return
	}
	ld := divergenceLogs(r.traceID, d)
	if !r.origTrace.IsEmpty() {
		lr := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
		lr.Attributes().PutStr(AttrDivOriginalTrace, r.origTrace.String())
	}
	if r.holdRecords {
		r.held = append(r.held, ld)
		return
	}
	r.send(ld)
}

// HoldRecords keeps the divergence record instead of sending it, until ReleaseRecords: the
// attempt's run may become the agent's own trace once the command has ended (agentrun.Joiner).
func (r *Replayer) HoldRecords() {
	r.mu.Lock()
	r.holdRecords = true
	r.mu.Unlock()
}

// ReleaseRecords sends the records held since HoldRecords, in trace (the run the attempt became;
// empty: the trace they were made for), and ends the hold.
func (r *Replayer) ReleaseRecords(trace pcommon.TraceID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ld := range r.held {
		if !trace.IsEmpty() {
			lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
			for i := 0; i < lrs.Len(); i++ {
				lrs.At(i).SetTraceID(trace)
			}
		}
		r.send(ld)
	}
	r.held, r.holdRecords = nil, false
}

// send sends ld to the sink in the background (Close waits). Callers hold r.mu.
func (r *Replayer) send(ld plog.Logs) {
	r.sinkWG.Add(1)
	go func() {
		defer r.sinkWG.Done()
		if err := r.cfg.Sink.ConsumeLogs(context.Background(), ld); err != nil {
			r.mu.Lock()
			r.sinkErr = err
			r.mu.Unlock()
			r.cfg.Logger.Printf("runagain replay: sending the divergence record: %v", err)
		}
	}()
}

// divergenceLogs is the log record of d: severity ERROR, event name runagain.replay.divergence,
// trace id of the replayed run, span id of the nearest recorded exchange.
func divergenceLogs(traceID pcommon.TraceID, d *Divergence) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "runagain-replay")
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(fixture.ScopeName)
	lr := sl.LogRecords().AppendEmpty()
	now := pcommon.NewTimestampFromTime(time.Now())
	lr.SetTimestamp(now)
	lr.SetObservedTimestamp(now)
	lr.SetSeverityNumber(plog.SeverityNumberError)
	lr.SetSeverityText("ERROR")
	lr.SetEventName(EventDivergence)
	lr.SetTraceID(traceID)
	lr.SetSpanID(d.NearestSpanID)
	lr.Body().SetStr(d.Message())
	a := lr.Attributes()
	a.PutStr(AttrDivField, d.Diff.Field)
	a.PutStr(AttrDivExpected, d.Diff.Expected)
	a.PutStr(AttrDivGot, d.Diff.Got)
	a.PutInt(AttrDivRequestIndex, int64(d.Request))
	if d.Nearest != nil {
		a.PutInt(AttrDivNearestIndex, int64(d.NearestPos))
	}
	a.PutStr(fixture.AttrMethod, d.Method)
	a.PutStr(fixture.AttrURLFull, d.URL)
	// its identity: the replayed run, the request and the recorded span it differs from
	a.PutStr(runagainattr.RecordID, runagainattr.RecordIDOf(EventDivergence, traceID.String(),
		strconv.Itoa(d.Request), d.NearestSpanID.String(), d.Diff.Field))
	if d.Refusal != "" {
		a.PutStr(AttrRefusal, d.Refusal)
	}
	return ld
}

func divergenceResponse(req *http.Request, d *Divergence, msg string) *http.Response {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": "runagain_replay_divergence", "code": "replay_divergence",
		"field": d.Diff.Field, "expected": d.Diff.Expected, "got": d.Diff.Got,
	}})
	resp := goproxy.NewResponse(req, "application/json", http.StatusBadRequest, string(body))
	resp.Header.Set(HeaderDivergence, d.Diff.Field)
	resp.Header.Set("X-Should-Retry", "false") // Stainless SDKs (openai, anthropic) honour it
	return resp
}

// response builds the recorded response: status, headers less hop-by-hop ones, the body byte for
// byte, SSE chunks one write (and flush) each.
func (r *Replayer) response(req *http.Request, ex *fixture.Exchange) *http.Response {
	if ex.Status == 0 {
		return errorResponse(req, http.StatusBadGateway, "runagain replay: the recorded request got no response ("+ex.Error+")")
	}
	resp := &http.Response{
		Request: req, StatusCode: ex.Status, Status: strconv.Itoa(ex.Status) + " " + http.StatusText(ex.Status),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: ex.ReplayHeader(), ContentLength: int64(len(ex.ResponseBody)),
	}
	// Serve no header that was not recorded: a nil value stops net/http from adding a sniffed
	// Content-Type or a Date of its own (goproxy copies the nil through).
	for _, k := range []string{"Content-Type", "Date"} {
		if _, ok := resp.Header[k]; !ok {
			resp.Header[k] = nil
		}
	}
	if len(ex.Chunks) > 0 {
		resp.ContentLength = -1
		resp.Body = &chunkReader{body: ex.ResponseBody, chunks: ex.Chunks, realtime: r.realtime, start: time.Now()}
	} else {
		resp.Header.Set("Content-Length", strconv.Itoa(len(ex.ResponseBody)))
		resp.Body = io.NopCloser(bytes.NewReader(ex.ResponseBody))
	}
	if ex.CutByUpstream() {
		// What arrived, then the recorded break (ServeHTTP aborts the connection).
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
		cut, _ := req.Context().Value(upstreamCutKey{}).(*upstreamCut)
		resp.Body = &cutBody{rc: resp.Body, cut: cut, err: fmt.Errorf("runagain replay: the upstream broke off this response when it was recorded (%s)", ex.Error)}
	}
	return resp
}

// cutBody is a recorded response body that ends in the upstream's break: after the bytes it
// returns err instead of io.EOF, and marks cut (nil: a request that did not come through
// Replayer.ServeHTTP, whose connection then ends cleanly).
type cutBody struct {
	rc  io.ReadCloser
	cut *upstreamCut
	err error
}

func (c *cutBody) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	if errors.Is(err, io.EOF) {
		if c.cut != nil {
			c.cut.Store(true)
		}
		err = c.err
	}
	return n, err
}

// WriteTo keeps the chunk-per-write of a chunkReader (one flush per recorded chunk).
func (c *cutBody) WriteTo(w io.Writer) (int64, error) {
	wt, ok := c.rc.(io.WriterTo)
	if !ok {
		return io.Copy(w, struct{ io.Reader }{c})
	}
	n, err := wt.WriteTo(w)
	if err == nil {
		if c.cut != nil {
			c.cut.Store(true)
		}
		err = c.err
	}
	return n, err
}

func (c *cutBody) Close() error { return c.rc.Close() }

// chunkReader returns one recorded chunk per Read (goproxy writes and flushes each read of an
// event stream), pacing them by their recorded times when realtime.
type chunkReader struct {
	body     []byte
	chunks   []fixture.Chunk
	i, off   int
	realtime bool
	start    time.Time
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for c.i < len(c.chunks) && c.off >= c.chunks[c.i].Offset+c.chunks[c.i].Size {
		c.i++
	}
	if c.i >= len(c.chunks) {
		if c.off < len(c.body) { // bytes after the last chunk (none when chunks cover the body)
			n := copy(p, c.body[c.off:])
			c.off += n
			return n, nil
		}
		return 0, io.EOF
	}
	ch := c.chunks[c.i]
	if c.off < ch.Offset {
		ch = fixture.Chunk{Offset: c.off, Size: ch.Offset - c.off}
	} else if c.realtime && c.off == ch.Offset {
		first := c.chunks[0].Time
		if d := ch.Time.Sub(first) - time.Since(c.start); d > 0 && d < time.Minute {
			time.Sleep(d)
		}
	}
	end := ch.Offset + ch.Size
	n := copy(p, c.body[c.off:end])
	c.off += n
	return n, nil
}

func (c *chunkReader) Close() error { return nil }

// WriteTo writes each remaining chunk with one Write call, so io.Copy (goproxy's copy to its
// flushing writer) flushes exactly once per recorded chunk, however large.
func (c *chunkReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	buf := make([]byte, 0)
	for {
		// grow the buffer to the next chunk's size and let Read fill it with that one chunk
		need := len(c.body) - c.off
		for i := c.i; i < len(c.chunks); i++ {
			if end := c.chunks[i].Offset + c.chunks[i].Size; end > c.off {
				need = end - c.off
				if c.off < c.chunks[i].Offset {
					need = c.chunks[i].Offset - c.off
				}
				break
			}
		}
		if need <= 0 {
			return total, nil
		}
		if cap(buf) < need {
			buf = make([]byte, need)
		}
		n, err := c.Read(buf[:need])
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// Result is the outcome of a replay.
type Result struct {
	Recorded   int         // exchanges in the run
	Served     int         // requests answered from the recording
	Requests   int         // requests received (not counting allowed hosts)
	Divergence *Divergence // first divergence, nil when none
	Unserved   int         // recorded exchanges never requested
	Live       int         // requests sent to an allowed host unrecorded (--allow-host, --allow-live-writes)
	Refused    int         // requests refused (divergences, the side-effect firewall)
}

// Result returns the outcome so far.
func (r *Replayer) Result() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := Result{Recorded: len(r.entries), Served: r.served, Requests: r.live, Divergence: r.div, Live: r.forwarded, Refused: r.refused}
	for _, e := range r.entries {
		if !e.used {
			res.Unserved++
		}
	}
	return res
}

// Close waits for the divergence record to be sent and returns its send error.
func (r *Replayer) Close() error {
	r.sinkWG.Wait()
	if r.rerun != nil {
		if err := r.rerun.rec.Close(); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sinkErr
}
