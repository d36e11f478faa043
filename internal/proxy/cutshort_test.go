// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
)

// TestRecordStreamClosedEarly: a client that reads one server-sent event and closes the stream
// is recorded as cut short (attribute and ERROR status) with the event it read, never as a
// complete response; a stream read to its end is not.
func TestRecordStreamClosedEarly(t *testing.T) {
	release := make(chan struct{})
	up := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"i\":0}\n\n"))
		w.(http.Flusher).Flush()
		if r.URL.Path == "/full" {
			_, _ = w.Write([]byte("data: [DONE]\n\n"))
			return
		}
		select { // the rest never comes before the client leaves
		case <-release:
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}), nil)
	defer close(release)
	sink := &captureSink{}
	rec := NewRecorder(Config{Redactor: newRedactor(t), Sink: sink, Logger: quietLogger()}, Root{})
	client := proxyClient(serve(t, rec, nil), nil)

	resp, err := client.Get(up + "/partial")
	require.NoError(t, err)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "data: {\"i\":0}\n", line)
	resp.Body.Close() // the client stops reading
	_, full := do(t, client, mustReq(t, "GET", up+"/full", ""))
	assert.Equal(t, "data: {\"i\":0}\n\ndata: [DONE]\n\n", string(full))

	deadline := time.Now().Add(10 * time.Second)
	for rec.Stats().Exchanges < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, rec.Close())
	spans := onlyFixture(t, sink.all())
	require.Len(t, spans, 2)
	for _, s := range spans {
		ex, err := fixture.FromSpan(s)
		require.NoError(t, err)
		cut, _ := s.Attributes().Get(fixture.AttrCutShort)
		if strings.HasSuffix(ex.URL, "/partial") {
			assert.True(t, ex.CutShort)
			assert.True(t, cut.Bool())
			assert.Equal(t, ptrace.StatusCodeError, s.Status().Code())
			assert.Contains(t, s.Status().Message(), "cut short")
			assert.Equal(t, "data: {\"i\":0}\n\n", string(ex.ResponseBody), "what the client read")
		} else {
			assert.False(t, ex.CutShort, "read to its end")
			assert.Equal(t, ptrace.StatusCodeUnset, s.Status().Code())
		}
	}
}

// TestRecordStreamCutByUpstream: an upstream that dies in the middle of a server-sent-event
// stream (its connection closed after one event, no terminating chunk) makes the agent's HTTP
// client fail as it would without the proxy, and the exchange is recorded with status Error,
// "cut short by upstream" and the event received, never as a complete response. Replayed, the
// response breaks off the same way.
func TestRecordStreamCutByUpstream(t *testing.T) {
	up := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"i\":0}\n\n"))
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close() // the upstream dies mid-stream
		}
	}), nil)
	sink := &captureSink{}
	rec := NewRecorder(Config{Redactor: newRedactor(t), Sink: sink, Logger: quietLogger()}, Root{})
	client := proxyClient(serve(t, rec, nil), nil)

	resp, err := client.Get(up + "/stream")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Error(t, err, "the agent's client must see the abort, not a clean end")
	assert.Equal(t, "data: {\"i\":0}\n\n", string(body), "what arrived before the cut")

	deadline := time.Now().Add(10 * time.Second)
	for rec.Stats().Exchanges < 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(t, rec.Close())
	spans := onlyFixture(t, sink.all())
	require.Len(t, spans, 1)
	s := spans[0]
	ex, err := fixture.FromSpan(s)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, ex.Status)
	assert.True(t, ex.CutByUpstream(), "error %q", ex.Error)
	assert.False(t, ex.CutShort, "not closed by the client")
	assert.Equal(t, ptrace.StatusCodeError, s.Status().Code())
	assert.Contains(t, s.Status().Message(), "cut short by upstream")
	assert.Equal(t, "data: {\"i\":0}\n\n", string(ex.ResponseBody))

	// Replayed, the agent meets the same break: the recorded event, then the connection fails.
	td := ptrace.NewTraces()
	s.CopyTo(td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty())
	rp, err := NewReplayer(Config{Redactor: newRedactor(t), Logger: quietLogger()}, td, s.TraceID(), ReplayOptions{})
	require.NoError(t, err)
	resp, err = proxyClient(serve(t, rp, nil), nil).Get(up + "/stream")
	require.NoError(t, err)
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Error(t, err, "a replay must break off where the recording did, not end cleanly")
	assert.Equal(t, "data: {\"i\":0}\n\n", string(body))
	assert.Equal(t, 1, rp.Result().Served)
	assert.Nil(t, rp.Result().Divergence)
}
