// SPDX-License-Identifier: Apache-2.0

package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/llmhttp"
	"github.com/runagain/runagain/internal/proxy"
	"github.com/runagain/runagain/internal/runagainattr"
)

// Attributes of the divergence record of an MCP request (besides proxy's runagain.replay.*).
const (
	// AttrRefusal says why the side-effect firewall refused a request: "unrecorded_tool_call".
	AttrRefusal = runagainattr.ReplayRefusal
)

// BrokerConfig configures the broker a runagain command starts for the MCP servers of its agent.
type BrokerConfig struct {
	// Mode is ModeRecord (proxy --record) or ModeReplay (replay, rerun, test).
	Mode string
	// Recorded is the run whose MCP exchanges are served (ModeReplay; payloads rehydrated).
	Recorded ptrace.Traces
	// Normalizer matches requests as the HTTP replay does (redactor, ignored body fields).
	Normalizer proxy.Normalizer
	// AllowServers (--allow-mcp) may receive unrecorded requests other than tools/call live.
	AllowServers []string
	// AllowWrites (--allow-live-writes) may receive any unrecorded request live, tools/call included.
	AllowWrites []string
	// Record relays the exchange spans `runagain mcp` sends to Sink (record, rerun, test);
	// false drops them (replay keeps no new run).
	Record bool
	// Sink receives the relayed spans and the divergence records.
	Sink proxy.Sink
	// TraceID is the run the divergence records belong to (the attempt's run).
	TraceID pcommon.TraceID
	Logger  *log.Logger
}

// Broker answers the `runagain mcp` processes of one agent run over a Unix socket.
type Broker struct {
	cfg  BrokerConfig
	dir  string
	path string
	srv  *http.Server
	done chan struct{}

	mu       sync.Mutex
	servers  map[string]*recorded
	requests int
	res      Result
	sinkWG   sync.WaitGroup
	held     proxy.Held
}

// recorded are the exchanges of one server in the recording.
type recorded struct {
	entries []*entry
	queues  map[string][]*entry
	notes   []*Exchange // the server's own messages (notifications, requests), in order
}

type entry struct {
	ex     *Exchange
	spanID pcommon.SpanID
	msg    proxy.Message
	key    string
	pos    int
	used   bool
	method string
	tool   string
}

// Divergence is the first MCP request that matched no recorded one (or was refused).
type Divergence struct {
	Request       int // 1-based number of the MCP request in this run
	Server        string
	Method, Tool  string
	Diff          proxy.Difference
	NearestSpanID pcommon.SpanID
	NearestPos    int    // 1-based; 0 when the server has no recorded request
	Refusal       string // set when the side-effect firewall refused it
}

// Message is the one-line explanation given to the agent, the record and the terminal.
func (d *Divergence) Message() string {
	what := d.Method
	if d.Tool != "" {
		what += " " + d.Tool
	}
	head := fmt.Sprintf("runagain replay: MCP request %d to server %s (%s) matches no recorded request", d.Request, d.Server, what)
	if d.Refusal != "" {
		head = fmt.Sprintf("runagain replay: MCP request %d to server %s (%s) refused by the side-effect firewall: an unrecorded tools/call goes live only with --allow-live-writes %s", d.Request, d.Server, what, d.Server)
	}
	if d.NearestPos == 0 {
		return head + ": " + d.Diff.String()
	}
	return fmt.Sprintf("%s; nearest is recorded request %d (span %s): %s", head, d.NearestPos, d.NearestSpanID, d.Diff)
}

// Result is what the broker did.
type Result struct {
	Servers    []string    // server names that connected
	Served     int         // requests answered from the recording
	Live       int         // requests let through to the real server
	Refused    int         // requests refused (divergence or firewall)
	Spans      int         // exchange spans relayed to the sink
	Divergence *Divergence // the first refused request
	Recorded   int         // recorded requests loaded (all servers)
	Unserved   int         // recorded requests never asked for
}

// StartBroker listens on a fresh Unix socket (in a private temporary directory) and serves.
func StartBroker(cfg BrokerConfig) (*Broker, error) {
	if cfg.Logger == nil {
		cfg.Logger = log.Default()
	}
	b := &Broker{cfg: cfg, servers: map[string]*recorded{}, done: make(chan struct{})}
	if cfg.Mode == ModeReplay {
		b.load(cfg.Recorded)
	}
	dir, err := os.MkdirTemp("", "runagain-mcp-")
	if err != nil {
		return nil, err
	}
	b.dir, b.path = dir, filepath.Join(dir, "broker.sock")
	l, err := net.Listen("unix", b.path)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("mcp broker: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /session", b.session)
	mux.HandleFunc("POST /call", b.call)
	mux.HandleFunc("POST /spans", b.spans)
	b.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(b.done)
		_ = b.srv.Serve(l)
	}()
	return b, nil
}

// Env is the environment that points `runagain mcp` at the broker.
func (b *Broker) Env() []string { return []string{EnvBroker + "=" + b.path} }

// Exchanges is the number of recorded MCP requests loaded.
func (b *Broker) Exchanges() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.res.Recorded
}

// Close stops the broker (after the agent ended) and waits for the divergence record.
func (b *Broker) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := b.srv.Shutdown(ctx)
	<-b.done
	b.sinkWG.Wait()
	os.RemoveAll(b.dir)
	return err
}

// Result returns the outcome so far.
func (b *Broker) Result() Result {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.res
	r.Unserved = 0
	for _, rs := range b.servers {
		for _, e := range rs.entries {
			if !e.used {
				r.Unserved++
			}
		}
	}
	return r
}

// load indexes the recorded MCP exchanges of td by server, in recorded order.
func (b *Broker) load(td ptrace.Traces) {
	type spanEx struct {
		ex *Exchange
		id pcommon.SpanID
	}
	var all []spanEx
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				if ex, ok := FromSpan(spans.At(k)); ok && ex.Source != "refused" {
					all = append(all, spanEx{ex, spans.At(k).SpanID()})
				}
			}
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if !all[i].ex.Start.Equal(all[j].ex.Start) {
			return all[i].ex.Start.Before(all[j].ex.Start)
		}
		return all[i].ex.Index < all[j].ex.Index
	})
	for _, s := range all {
		rs := b.servers[s.ex.Server]
		if rs == nil {
			rs = &recorded{queues: map[string][]*entry{}}
			b.servers[s.ex.Server] = rs
		}
		m := parse(s.ex.Request)
		if s.ex.Direction == "server" {
			rs.notes = append(rs.notes, s.ex)
			continue
		}
		if m.kind != kindRequest || s.ex.Response == nil {
			continue // the agent's notifications are not answered
		}
		e := &entry{ex: s.ex, spanID: s.id, msg: b.cfg.Normalizer.Message(s.ex.Request), pos: len(rs.entries), method: m.method}
		if m.method == "tools/call" {
			e.tool = m.param("name")
		}
		e.key = e.msg.Key()
		rs.entries = append(rs.entries, e)
		rs.queues[e.key] = append(rs.queues[e.key], e)
		b.res.Recorded++
	}
}

func (b *Broker) session(w http.ResponseWriter, r *http.Request) {
	var q struct {
		Server string `json:"server"`
	}
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	b.res.Servers = append(b.res.Servers, q.Server)
	b.mu.Unlock()
	writeJSON(w, map[string]string{"mode": b.cfg.Mode})
}

func (b *Broker) spans(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 256<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if !b.cfg.Record || b.cfg.Sink == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	if b.holdSpans(td) {
		w.WriteHeader(http.StatusOK)
		return
	}
	if err := b.cfg.Sink.ConsumeTraces(r.Context(), td); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	b.mu.Lock()
	b.res.Spans += td.SpanCount()
	b.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// Hold keeps the exchange spans `runagain mcp` relays for the run's own trace (cfg.TraceID)
// until TakeHeld, instead of sending them: a join (internal/agentrun Joiner) places them in the
// agent's trace, under the tool calls they belong to. Spans of another trace (an agent that
// passed its own traceparent to the server) are sent at once. MaxHeld bounds what is kept, as
// for the proxy's HTTP exchanges.
func (b *Broker) Hold() { b.held.Start() }

// TakeHeld ends the hold and returns the spans kept, in the order they arrived.
func (b *Broker) TakeHeld() []ptrace.Traces { return b.held.Take() }

// Emit sends spans TakeHeld returned (placed or not) to the sink; a failure is logged.
func (b *Broker) Emit(td ptrace.Traces) {
	if b.cfg.Sink == nil {
		return
	}
	if err := b.cfg.Sink.ConsumeTraces(context.Background(), td); err != nil {
		b.cfg.Logger.Printf("runagain mcp: sending %d exchange spans: %v", td.SpanCount(), err)
	}
}

// holdSpans keeps td when a hold is on and every span of it is in the run's own trace.
func (b *Broker) holdSpans(td ptrace.Traces) bool {
	if b.cfg.TraceID.IsEmpty() {
		return false
	}
	n := 0
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			sps := sss.At(j).Spans()
			for k := 0; k < sps.Len(); k++ {
				if sps.At(k).TraceID() != b.cfg.TraceID {
					return false
				}
				n++
			}
		}
	}
	if n == 0 || !b.held.Keep(td) {
		return false
	}
	b.mu.Lock()
	b.res.Spans += n
	b.mu.Unlock()
	return true
}

func (b *Broker) call(w http.ResponseWriter, r *http.Request) {
	var q struct {
		Server  string `json:"server"`
		Message string `json:"message"`
	}
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, b.decide(q.Server, []byte(q.Message)))
}

// decide matches one request of the agent against the recording of its server.
func (b *Broker) decide(server string, raw []byte) *Decision {
	m := parse(raw)
	live := b.cfg.Normalizer.Message(raw)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests++
	n := b.requests
	if d := b.res.Divergence; d != nil {
		b.res.Refused++
		msg := fmt.Sprintf("runagain replay: stopped at MCP request %d; request %d not served. %s", d.Request, n, d.Message())
		return &Decision{Action: ActionRefuse, Response: string(errorResponse(m.id, CodeDivergence, msg, divData(d)))}
	}
	rs := b.servers[server]
	if rs == nil {
		rs = &recorded{queues: map[string][]*entry{}}
		b.servers[server] = rs
	}
	if q := rs.queues[live.Key()]; len(q) > 0 {
		e := q[0]
		rs.queues[live.Key()] = q[1:]
		e.used = true
		b.res.Served++
		d := &Decision{Action: ActionServe, Response: string(e.ex.Response), Span: e.spanID.String()}
		for _, nt := range rs.notes {
			if !nt.Start.Before(e.ex.Start) && nt.Start.Before(e.ex.End) {
				d.Before = append(d.Before, string(nt.Request))
			}
		}
		return d
	}
	writes, reads := contains(b.cfg.AllowWrites, server), contains(b.cfg.AllowServers, server)
	if writes || (reads && m.method != "tools/call") {
		b.res.Live++
		return &Decision{Action: ActionLive}
	}
	d := b.nearest(rs, server, m, live, n)
	if reads {
		d.Refusal = "unrecorded_tool_call"
	}
	b.res.Refused++
	b.res.Divergence = d
	b.record(d)
	b.cfg.Logger.Print(d.Message())
	code := CodeDivergence
	if d.Refusal != "" {
		code = CodeRefused
	}
	return &Decision{Action: ActionRefuse, Response: string(errorResponse(m.id, code, d.Message(), divData(d)))}
}

// nearest builds the divergence of a request against the closest recorded request of its
// server, preferring ones not served yet and of the same tool. Callers hold b.mu.
func (b *Broker) nearest(rs *recorded, server string, m *message, live proxy.Message, n int) *Divergence {
	d := &Divergence{Request: n, Server: server, Method: m.method}
	if m.method == "tools/call" {
		d.Tool = m.param("name")
	}
	var best *entry
	bestScore := -1.0
	for _, used := range []bool{false, true} {
		for _, e := range rs.entries {
			if e.used != used {
				continue
			}
			s := proxy.MessageSimilarity(e.msg, live)
			if e.method == m.method {
				s += 16
			}
			if s > bestScore {
				best, bestScore = e, s
			}
		}
		if best != nil {
			break
		}
	}
	if best == nil {
		d.Diff = proxy.Difference{Field: "server", Expected: "(no recorded request to server " + server + ")", Got: m.method}
		return d
	}
	d.NearestSpanID, d.NearestPos = best.spanID, best.pos+1
	if df, ok := proxy.MessageDiff(best.msg, live); ok {
		d.Diff = df
	} else {
		count := 0
		for _, e := range rs.entries {
			if e.key == best.key {
				count++
			}
		}
		d.Diff = proxy.Difference{Field: "count", Expected: fmt.Sprintf("%d time(s)", count), Got: "once more"}
	}
	return d
}

// record sends the divergence record of d (event runagain.replay.divergence, on the attempt's
// run, pointing at the nearest recorded exchange). Callers hold b.mu.
func (b *Broker) record(d *Divergence) {
	if b.cfg.Sink == nil {
		return
	}
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "runagain-replay")
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(ScopeName)
	lr := sl.LogRecords().AppendEmpty()
	now := pcommon.NewTimestampFromTime(time.Now())
	lr.SetTimestamp(now)
	lr.SetObservedTimestamp(now)
	lr.SetSeverityNumber(plog.SeverityNumberError)
	lr.SetSeverityText("ERROR")
	lr.SetEventName(proxy.EventDivergence)
	lr.SetTraceID(b.cfg.TraceID)
	lr.SetSpanID(d.NearestSpanID)
	lr.Body().SetStr(d.Message())
	a := lr.Attributes()
	a.PutStr(proxy.AttrDivField, d.Diff.Field)
	a.PutStr(proxy.AttrDivExpected, d.Diff.Expected)
	a.PutStr(proxy.AttrDivGot, d.Diff.Got)
	a.PutInt(proxy.AttrDivRequestIndex, int64(d.Request))
	if d.NearestPos > 0 {
		a.PutInt(proxy.AttrDivNearestIndex, int64(d.NearestPos))
	}
	a.PutStr(llmhttp.AttrMCPMethodName, d.Method)
	a.PutStr(AttrServer, d.Server)
	if d.Tool != "" {
		a.PutStr(genai.AttrToolName, d.Tool)
	}
	if d.Refusal != "" {
		a.PutStr(AttrRefusal, d.Refusal)
	}
	b.sinkWG.Add(1)
	go func() {
		defer b.sinkWG.Done()
		if err := b.cfg.Sink.ConsumeLogs(context.Background(), ld); err != nil {
			b.cfg.Logger.Printf("runagain replay: sending the MCP divergence record: %v", err)
		}
	}()
}

func divData(d *Divergence) map[string]string {
	m := map[string]string{"type": "runagain_replay_divergence", "field": d.Diff.Field, "expected": d.Diff.Expected, "got": d.Diff.Got}
	if d.Refusal != "" {
		m["type"] = "runagain_replay_refused"
		m["refusal"] = d.Refusal
	}
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
