// SPDX-License-Identifier: Apache-2.0

package mcp

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/proxy"
)

// ScopeName is the instrumentation scope of the spans `runagain mcp` writes.
const ScopeName = "github.com/runagain/runagain/internal/mcp"

// SpanSink receives exchange spans: the broker of the runagain command the agent runs under, or
// the collector (OTLP) when there is none.
type SpanSink interface {
	ConsumeTraces(ctx context.Context, td ptrace.Traces) error
}

// Options configure Run.
type Options struct {
	// Name is the server's name (--name): exchanges are recorded and replayed per name.
	Name string
	// Command starts the real server (argv); it is started only when a message must reach it.
	Command []string
	// Stdin, Stdout: the agent's side of the stdio transport. Stderr receives the server's
	// stderr and runagain's warnings.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Sink receives one span per exchange (nil: none are kept).
	Sink SpanSink
	// Broker answers requests from a recording in replay mode; nil: record (start the server,
	// pass everything through).
	Broker *Client
	// TraceID and ParentID place the spans (from TRACEPARENT); a zero TraceID starts a trace of
	// its own with a root span "runagain mcp NAME".
	TraceID  pcommon.TraceID
	ParentID pcommon.SpanID
	// Logger for warnings; default: to Stderr.
	Logger *log.Logger
}

// Stats is what Run did.
type Stats struct {
	Exchanges int // spans sent (requests with their responses, notifications)
	Malformed int // lines that are not JSON-RPC 2.0 messages, passed through unchanged
	Served    int // replay: requests answered from the recording
	Live      int // replay: requests sent to the real server
	Refused   int // replay: requests refused (divergence or side-effect firewall)
	SendErrs  int // span batches the sink did not take
	ExitCode  int // the server's exit code (0 when it was never started)
}

// session is one run of the stdio proxy.
type session struct {
	o       Options
	id      string // mcp.session.id
	root    pcommon.SpanID
	start   time.Time
	replay  bool
	outMu   sync.Mutex // serialises lines written to the agent
	mu      sync.Mutex
	st      Stats
	index   int
	proto   string
	pending map[string]*pendingReq // "client:"+id / "server:"+id -> request awaiting its response
	swallow map[string]bool        // replay: ids of live-server responses the agent must not see
	dropIDs map[string]bool        // replay: ids of agent responses to replayed server requests
	initReq []byte                 // replay: the agent's initialize request and initialized
	initNot []byte                 // notification, sent first to a server started live
	srv     *exec.Cmd
	srvIn   io.WriteCloser
	srvDone chan struct{}
	spans   chan ptrace.Traces
	sendWG  sync.WaitGroup
}

type pendingReq struct {
	msg    *message
	start  time.Time
	source string
	orig   pcommon.SpanID
}

// Run proxies one stdio MCP session between the agent (o.Stdin/o.Stdout) and the server. Each
// line passes through unchanged (the MCP stdio transport: newline-delimited JSON-RPC 2.0); each
// exchange becomes a span. With a broker in replay mode the server is not started: requests are
// answered from the recording, and the server is started only for a request the broker lets go
// live. Run returns when the agent closes stdin (the server then gets EOF, then SIGTERM after 5 s)
// or the server exits.
func Run(ctx context.Context, o Options) (Stats, error) {
	if o.Logger == nil {
		o.Logger = log.New(o.Stderr, "", 0)
	}
	s := &session{o: o, id: randomHex(16), start: time.Now(), pending: map[string]*pendingReq{},
		swallow: map[string]bool{}, dropIDs: map[string]bool{}, spans: make(chan ptrace.Traces, 256), srvDone: make(chan struct{})}
	if o.TraceID.IsEmpty() {
		s.o.TraceID = proxy.NewTraceID()
		s.root = proxy.NewSpanID()
	}
	if o.Broker != nil {
		mode, err := o.Broker.Mode(ctx, o.Name)
		if err != nil {
			return s.st, err
		}
		s.replay = mode == ModeReplay
	}
	s.sendWG.Add(1)
	go s.sendLoop()
	var err error
	if !s.replay {
		if err = s.startServer(); err != nil {
			err = fmt.Errorf("runagain mcp %s: starting %s: %w", o.Name, o.Command[0], err)
		}
	}
	if err == nil {
		s.readAgent(ctx)
	}
	s.stopServer()
	if !s.root.IsEmpty() {
		s.emitRoot()
	}
	close(s.spans)
	s.sendWG.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st, err
}

// readAgent reads the agent's lines until EOF.
func (s *session) readAgent(ctx context.Context) {
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		readLines(s.o.Stdin, func(l []byte) { lines <- l })
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.srvDone:
			if !s.replay || s.srv != nil {
				return // the server exited: the session is over
			}
		case l, ok := <-lines:
			if !ok {
				return
			}
			s.fromAgent(ctx, l)
		}
	}
}

// readLines calls f with each newline-terminated line of r, terminator included (the last line
// may lack one).
func readLines(r io.Reader, f func([]byte)) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		l, err := br.ReadBytes('\n')
		if len(l) > 0 {
			f(l)
		}
		if err != nil {
			return
		}
	}
}

// trim returns a line without its terminator.
func trim(l []byte) []byte {
	n := len(l)
	for n > 0 && (l[n-1] == '\n' || l[n-1] == '\r') {
		n--
	}
	return l[:n]
}

func (s *session) fromAgent(ctx context.Context, line []byte) {
	m := parse(trim(line))
	now := time.Now()
	if !s.replay {
		s.track("client", m, now, "", pcommon.SpanID{})
		s.toServer(line)
		return
	}
	switch m.kind {
	case kindRequest:
		if m.method == "initialize" {
			s.initReq = append([]byte(nil), line...)
		}
		s.replayRequest(ctx, m, line, now)
	case kindNotification:
		if m.method == "notifications/initialized" {
			s.initNot = append([]byte(nil), line...)
		}
		source := "recording" // answered by the replay: nothing to send
		if s.srv != nil {
			source = "live"
		}
		s.span(&Exchange{Direction: "client", Request: m.raw, Start: now, End: now, Source: source})
		if s.srv != nil {
			s.toServer(line)
		}
	case kindResponse:
		s.mu.Lock()
		drop := s.dropIDs[m.id]
		delete(s.dropIDs, m.id)
		s.mu.Unlock()
		if s.srv != nil && !drop {
			s.track("client", m, now, "", pcommon.SpanID{})
			s.toServer(line)
		}
	default:
		s.mu.Lock()
		s.st.Malformed++
		s.mu.Unlock()
		if s.srv != nil {
			s.toServer(line)
			return
		}
		s.toAgent(append(errorResponse("null", -32700, "Parse error: not a JSON-RPC 2.0 message (runagain mcp replay)", nil), '\n'))
	}
}

// replayRequest asks the broker what to do with a request of the agent.
func (s *session) replayRequest(ctx context.Context, m *message, line []byte, now time.Time) {
	d, err := s.o.Broker.Call(ctx, s.o.Name, m.raw)
	if err != nil {
		d = &Decision{Action: ActionRefuse, Error: fmt.Sprintf("runagain mcp %s: the replay broker did not answer: %v", s.o.Name, err)}
	}
	switch d.Action {
	case ActionServe:
		var orig pcommon.SpanID
		if b, err := hex.DecodeString(d.Span); err == nil && len(b) == 8 {
			copy(orig[:], b)
		}
		for _, sm := range d.Before { // the server's notifications and requests recorded during it
			smm := parse([]byte(sm))
			if smm.kind == kindRequest {
				s.mu.Lock()
				s.dropIDs[smm.id] = true
				s.mu.Unlock()
			}
			s.toAgent(append(append([]byte(nil), sm...), '\n'))
		}
		resp := []byte(d.Response)
		if rec := parse(resp); rec.id != "" && rec.id != m.id {
			if nb, ok := replaceID(resp, rec.id, m.id); ok {
				resp = nb
			}
		}
		s.noteProtocol(m, resp)
		s.mu.Lock()
		s.st.Served++
		s.mu.Unlock()
		s.span(&Exchange{Direction: "client", Request: m.raw, Response: resp, Start: now, End: time.Now(), Source: "recording", OriginalSpan: orig})
		s.toAgent(append(resp, '\n'))
	case ActionLive:
		if s.srv == nil {
			if err := s.startLive(); err != nil {
				s.refuse(m, now, errorResponse(m.id, CodeUnavailable, fmt.Sprintf("runagain mcp %s: starting the server to send a request live: %v", s.o.Name, err), nil))
				return
			}
		}
		s.mu.Lock()
		s.st.Live++
		s.mu.Unlock()
		s.track("client", m, now, "live", pcommon.SpanID{})
		s.toServer(line)
	default:
		resp := []byte(d.Response)
		if len(resp) == 0 {
			resp = errorResponse(m.id, CodeDivergence, d.Error, nil)
		}
		s.refuse(m, now, resp)
	}
}

func (s *session) refuse(m *message, now time.Time, resp []byte) {
	s.mu.Lock()
	s.st.Refused++
	s.mu.Unlock()
	s.span(&Exchange{Direction: "client", Request: m.raw, Response: resp, Start: now, End: time.Now(), Source: "refused"})
	s.toAgent(append(resp, '\n'))
}

// startLive starts the server during a replay and replays the session's handshake to it (the
// agent's initialize request, whose response the agent already had, and its initialized
// notification).
func (s *session) startLive() error {
	if err := s.startServer(); err != nil {
		return err
	}
	if s.initReq != nil {
		if m := parse(trim(s.initReq)); m.id != "" {
			s.mu.Lock()
			s.swallow[m.id] = true
			s.mu.Unlock()
		}
		s.toServer(s.initReq)
	}
	if s.initNot != nil {
		s.toServer(s.initNot)
	}
	return nil
}

func (s *session) startServer() error {
	if len(s.o.Command) == 0 {
		return errors.New("no server command (runagain mcp --name NAME -- COMMAND...)")
	}
	c := exec.Command(s.o.Command[0], s.o.Command[1:]...)
	c.Stderr = s.o.Stderr
	in, err := c.StdinPipe()
	if err != nil {
		return err
	}
	out, err := c.StdoutPipe()
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return err
	}
	s.srv, s.srvIn = c, in
	go func() {
		readLines(out, s.fromServer)
		err := c.Wait()
		var ee *exec.ExitError
		s.mu.Lock()
		if errors.As(err, &ee) {
			s.st.ExitCode = ee.ExitCode()
		}
		s.mu.Unlock()
		close(s.srvDone)
	}()
	return nil
}

// stopServer closes the server's stdin and waits for it to exit, with SIGTERM after 5 s and
// SIGKILL after 5 more (the MCP stdio transport's shutdown).
func (s *session) stopServer() {
	if s.srv == nil {
		return
	}
	_ = s.srvIn.Close()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		select {
		case <-s.srvDone:
			return
		case <-time.After(5 * time.Second):
			_ = s.srv.Process.Signal(sig)
		}
	}
	<-s.srvDone
}

func (s *session) fromServer(line []byte) {
	m := parse(trim(line))
	now := time.Now()
	if m.kind == kindResponse {
		s.mu.Lock()
		sw := s.swallow[m.id]
		delete(s.swallow, m.id)
		s.mu.Unlock()
		if sw {
			return
		}
	}
	s.track("server", m, now, "", pcommon.SpanID{})
	s.toAgent(line)
}

// track pairs messages into exchanges: a request waits for its response from the other side; a
// notification is an exchange of its own; a response completes its request's exchange.
func (s *session) track(from string, m *message, now time.Time, source string, orig pcommon.SpanID) {
	other := map[string]string{"client": "server", "server": "client"}[from]
	switch m.kind {
	case kindRequest:
		s.mu.Lock()
		s.pending[from+":"+m.id] = &pendingReq{msg: m, start: now, source: source, orig: orig}
		s.mu.Unlock()
	case kindNotification:
		s.span(&Exchange{Direction: from, Request: m.raw, Start: now, End: now, Source: source})
	case kindResponse:
		s.mu.Lock()
		p := s.pending[other+":"+m.id]
		delete(s.pending, other+":"+m.id)
		s.mu.Unlock()
		if p == nil {
			return
		}
		s.noteProtocol(p.msg, m.raw)
		s.span(&Exchange{Direction: other, Request: p.msg.raw, Response: m.raw, Start: p.start, End: now, Source: p.source, OriginalSpan: p.orig})
	default:
		s.mu.Lock()
		s.st.Malformed++
		s.mu.Unlock()
	}
}

// noteProtocol keeps the protocol version an initialize exchange negotiated (the server's
// answer, else the version the client asked for).
func (s *session) noteProtocol(req *message, resp []byte) {
	if req.method != "initialize" {
		return
	}
	var r struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	v := req.param("protocolVersion") // the client's, unless the server answered with another
	if json.Unmarshal(resp, &r) == nil && r.Result.ProtocolVersion != "" {
		v = r.Result.ProtocolVersion
	}
	if v != "" {
		s.mu.Lock()
		s.proto = v
		s.mu.Unlock()
	}
}

func (s *session) toServer(line []byte) {
	if s.srvIn == nil {
		return
	}
	if _, err := s.srvIn.Write(line); err != nil {
		s.o.Logger.Printf("runagain mcp %s: writing to the server: %v", s.o.Name, err)
	}
}

func (s *session) toAgent(line []byte) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	_, _ = s.o.Stdout.Write(line)
}

// span queues the span of one exchange.
func (s *session) span(e *Exchange) {
	s.mu.Lock()
	e.Server, e.SessionID, e.ProtocolVersion, e.Index = s.o.Name, s.id, s.proto, s.index
	s.index++
	s.st.Exchanges++
	s.mu.Unlock()
	td := ptrace.NewTraces()
	sp := s.scope(td).Spans().AppendEmpty()
	sp.SetTraceID(s.o.TraceID)
	sp.SetSpanID(proxy.NewSpanID())
	if s.root.IsEmpty() {
		sp.SetParentSpanID(s.o.ParentID)
	} else {
		sp.SetParentSpanID(s.root)
	}
	e.ToSpan(sp)
	s.spans <- td
}

func (s *session) scope(td ptrace.Traces) ptrace.ScopeSpans {
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "runagain-mcp")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(ScopeName)
	return ss
}

// emitRoot queues the root span of a session that had no caller trace.
func (s *session) emitRoot() {
	td := ptrace.NewTraces()
	sp := s.scope(td).Spans().AppendEmpty()
	sp.SetTraceID(s.o.TraceID)
	sp.SetSpanID(s.root)
	sp.SetName("runagain mcp " + s.o.Name)
	sp.SetKind(ptrace.SpanKindInternal)
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(s.start))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(time.Now()))
	sp.Attributes().PutStr(AttrServer, s.o.Name)
	s.spans <- td
}

func (s *session) sendLoop() {
	defer s.sendWG.Done()
	for td := range s.spans {
		if s.o.Sink == nil {
			continue
		}
		if err := s.o.Sink.ConsumeTraces(context.Background(), td); err != nil {
			s.mu.Lock()
			s.st.SendErrs++
			s.mu.Unlock()
			s.o.Logger.Printf("runagain mcp %s: sending a span: %v", s.o.Name, err)
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
