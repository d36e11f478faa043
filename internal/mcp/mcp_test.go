// SPDX-License-Identifier: Apache-2.0

package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/proxy"
)

// TestMain doubles as a small stdio MCP server (MCP_TEST_SERVER=1): it answers each request with
// its method and params echoed back, in bytes a re-encoder would change (spacing, escapes), sends
// a progress notification before answering tools/call, and appends each tools/call to the file
// MCP_TEST_LOG.
func TestMain(m *testing.M) {
	if os.Getenv("MCP_TEST_SERVER") == "1" {
		serve()
		return
	}
	os.Exit(m.Run())
}

func serve() {
	br := bufio.NewReader(os.Stdin)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(line, &req) == nil && len(req.ID) > 0 {
				if req.Method == "tools/call" {
					fmt.Print(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}` + "\n")
					f, _ := os.OpenFile(os.Getenv("MCP_TEST_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
					_, _ = f.Write(req.Params)
					f.Close()
				}
				p := req.Params
				if len(p) == 0 {
					p = []byte("null")
				}
				fmt.Printf("{\"jsonrpc\": \"2.0\", \"id\": %s ,\"result\":{\"echo\":%q, \"params\":%s, \"caf\\u00e9\":true}}\n", req.ID, req.Method, p)
			}
		}
		if err != nil {
			return
		}
	}
}

type memSink struct {
	mu    sync.Mutex
	spans []ptrace.Span
	logs  []plog.LogRecord
}

func (s *memSink) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		ss := td.ResourceSpans().At(i).ScopeSpans()
		for j := 0; j < ss.Len(); j++ {
			for k := 0; k < ss.At(j).Spans().Len(); k++ {
				sp := ptrace.NewSpan()
				ss.At(j).Spans().At(k).CopyTo(sp)
				s.spans = append(s.spans, sp)
			}
		}
	}
	return nil
}

func (s *memSink) ConsumeLogs(_ context.Context, ld plog.Logs) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		sl := ld.ResourceLogs().At(i).ScopeLogs()
		for j := 0; j < sl.Len(); j++ {
			for k := 0; k < sl.At(j).LogRecords().Len(); k++ {
				lr := plog.NewLogRecord()
				sl.At(j).LogRecords().At(k).CopyTo(lr)
				s.logs = append(s.logs, lr)
			}
		}
	}
	return nil
}

func (s *memSink) traces() ptrace.Traces {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	for _, sp := range s.spans {
		sp.CopyTo(ss.Spans().AppendEmpty())
	}
	return td
}

// agent plays an MCP client: it writes each line, waiting for the response of each request, and
// returns everything the proxy wrote back.
func agent(t *testing.T, o Options, lines ...string) (string, Stats) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	o.Stdin, o.Stdout, o.Stderr = inR, outW, os.Stderr
	o.Command = []string{os.Args[0]}
	var st Stats
	var runErr error
	done := make(chan struct{})
	go func() {
		st, runErr = Run(context.Background(), o)
		outW.Close()
		close(done)
	}()
	var got bytes.Buffer
	br := bufio.NewReader(outR)
	for _, l := range lines {
		_, err := io.WriteString(inW, l+"\n")
		require.NoError(t, err)
		m := parse([]byte(l))
		if m.kind != kindRequest {
			continue
		}
		for { // until the response of this request (notifications may come first)
			resp, err := br.ReadBytes('\n')
			require.NoError(t, err, "reading the answer to %s", l)
			got.Write(resp)
			if r := parse(trim(resp)); r.kind == kindResponse {
				break
			}
		}
	}
	inW.Close()
	rest, _ := io.ReadAll(br)
	got.Write(rest)
	<-done
	require.NoError(t, runErr)
	return got.String(), st
}

const (
	lineInit   = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	lineInited = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	lineCall   = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"append_note","arguments":{"text":"buy milk"}}}`
)

// TestRecordPassesThroughAndRecords: the agent reads the server's bytes unchanged, each exchange
// is a span with the MCP conventions, and the server's side effect happened.
func TestRecordPassesThroughAndRecords(t *testing.T) {
	t.Setenv("MCP_TEST_SERVER", "1")
	logf := t.TempDir() + "/calls"
	t.Setenv("MCP_TEST_LOG", logf)
	sink := &memSink{}
	got, st := agent(t, Options{Name: "notes", Sink: sink}, lineInit, lineInited, lineCall)
	want := "{\"jsonrpc\": \"2.0\", \"id\": 0 ,\"result\":{\"echo\":\"initialize\", \"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}, \"caf\\u00e9\":true}}\n" +
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}` + "\n" +
		"{\"jsonrpc\": \"2.0\", \"id\": 1 ,\"result\":{\"echo\":\"tools/call\", \"params\":{\"name\":\"append_note\",\"arguments\":{\"text\":\"buy milk\"}}, \"caf\\u00e9\":true}}\n"
	assert.Equal(t, want, got, "every byte as the server wrote it")
	b, _ := os.ReadFile(logf)
	assert.Equal(t, `{"name":"append_note","arguments":{"text":"buy milk"}}`, string(b))
	assert.Equal(t, 4, st.Exchanges) // initialize, initialized, progress, tools/call
	require.Len(t, sink.spans, 5)    // and the session's root span (no TRACEPARENT)
	var call ptrace.Span
	for _, sp := range sink.spans {
		if sp.Name() == "tools/call append_note" {
			call = sp
		}
	}
	a := call.Attributes().AsRaw()
	assert.Equal(t, "tools/call", a["mcp.method.name"])
	assert.Equal(t, "1", a["jsonrpc.request.id"])
	assert.Equal(t, "2025-06-18", a["mcp.protocol.version"], "from the initialize exchange")
	assert.Equal(t, "append_note", a["gen_ai.tool.name"])
	assert.Equal(t, `{"text":"buy milk"}`, a["gen_ai.tool.call.arguments"])
	assert.Contains(t, a["gen_ai.tool.call.result"], `"echo":"tools/call"`)
	assert.Equal(t, lineCall, a[AttrRequest])
	assert.Equal(t, ptrace.SpanKindClient, call.Kind())
}

// TestReplayServesWithoutServer: from the recording, no server is started (its side effect does
// not happen), the recorded response answers the live id, and a changed argument is refused
// naming the field, with a divergence record.
func TestReplayServesWithoutServer(t *testing.T) {
	t.Setenv("MCP_TEST_SERVER", "1")
	logf := t.TempDir() + "/calls"
	t.Setenv("MCP_TEST_LOG", logf)
	rec := &memSink{}
	recorded, _ := agent(t, Options{Name: "notes", Sink: rec}, lineInit, lineInited, lineCall)
	require.NoError(t, os.Remove(logf))

	start := func(allowWrites ...string) (*Broker, *memSink) {
		sink := &memSink{}
		b, err := StartBroker(BrokerConfig{Mode: ModeReplay, Recorded: rec.traces(), Record: true, Sink: sink, AllowWrites: allowWrites})
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.Close() })
		return b, sink
	}
	b, sink := start()
	c := Dial(strings.TrimPrefix(b.Env()[0], EnvBroker+"="))
	t.Setenv("MCP_TEST_SERVER", "0") // were the server started, it would not answer
	init7 := strings.Replace(lineInit, `"id":0`, `"id":7`, 1)
	call8 := strings.Replace(lineCall, `"id":1`, `"id":"eight"`, 1)
	got, st := agent(t, Options{Name: "notes", Sink: c, Broker: c}, init7, lineInited, call8)
	assert.Equal(t, strings.NewReplacer(`"id": 0 `, `"id": 7 `, `"id": 1 `, `"id": "eight" `).Replace(recorded), got)
	assert.Equal(t, 2, st.Served)
	_, err := os.Stat(logf)
	assert.True(t, os.IsNotExist(err), "the server did not run")
	assert.Len(t, sink.spans, 4, "the exchanges were relayed to the new run")

	b2, sink2 := start()
	c2 := Dial(strings.TrimPrefix(b2.Env()[0], EnvBroker+"="))
	changed := strings.Replace(lineCall, "buy milk", "buy oats", 1)
	got, st = agent(t, Options{Name: "notes", Sink: c2, Broker: c2}, lineInit, lineInited, changed)
	assert.Equal(t, 1, st.Refused)
	assert.Contains(t, got, `"code":-32001`)
	assert.Contains(t, got, `params.arguments.text: expected \"buy milk\", got \"buy oats\"`)
	require.NoError(t, b2.Close())
	r := b2.Result()
	require.NotNil(t, r.Divergence)
	assert.Equal(t, "params.arguments.text", r.Divergence.Diff.Field)
	require.Len(t, sink2.logs, 1)
	assert.Equal(t, proxy.EventDivergence, sink2.logs[0].EventName())

	// --allow-live-writes notes: the changed tools/call goes to the server, started with the
	// session's handshake replayed.
	t.Setenv("MCP_TEST_SERVER", "1")
	b3, _ := start("notes")
	c3 := Dial(strings.TrimPrefix(b3.Env()[0], EnvBroker+"="))
	got, st = agent(t, Options{Name: "notes", Sink: c3, Broker: c3}, lineInit, lineInited, changed)
	assert.Equal(t, 1, st.Live)
	assert.Contains(t, got, `"buy oats"`)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b, _ := os.ReadFile(logf); strings.Contains(string(b), "buy oats") || time.Now().After(deadline) {
			assert.Contains(t, string(b), "buy oats")
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMalformedLinePassesThrough: a line that is not JSON-RPC reaches the server unchanged and
// is counted.
func TestMalformedLinePassesThrough(t *testing.T) {
	t.Setenv("MCP_TEST_SERVER", "1")
	t.Setenv("MCP_TEST_LOG", t.TempDir()+"/calls")
	_, st := agent(t, Options{Name: "notes"}, `not json`, lineInit)
	assert.Equal(t, 1, st.Malformed)
	assert.Equal(t, 1, st.Exchanges)
}
