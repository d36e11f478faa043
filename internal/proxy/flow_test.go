// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/fixture"
)

// connectThenGET opens a CONNECT tunnel to target through the proxy at purl and sends a plain
// HTTP GET inside it (what undici does for http:// URLs with NODE_USE_ENV_PROXY).
func connectThenGET(t *testing.T, purl, target, path string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(purl, "http://"))
	require.NoError(t, err)
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, target)
	resp, err = http.ReadResponse(br, nil)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestPlainHTTPInsideCONNECT: plain HTTP in a CONNECT tunnel is recorded without --mitm (and the
// log says so), and replayed from the recording without reaching the upstream.
func TestPlainHTTPInsideCONNECT(t *testing.T) {
	var hits atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "weather at %s", r.URL.Path)
	}))
	defer up.Close()
	var logs bytes.Buffer
	sink := &captureSink{}
	rec := NewRecorder(Config{Redactor: newRedactor(t), Sink: sink, Logger: log.New(&logs, "", 0)}, Root{TraceID: NewTraceID(), SpanID: NewSpanID()})
	purl := serve(t, rec, nil)
	target := strings.TrimPrefix(up.URL, "http://")
	code, body := connectThenGET(t, purl, target, "/paris")
	require.Equal(t, 200, code)
	require.Equal(t, "weather at /paris", body)
	require.NoError(t, rec.Close())
	assert.Contains(t, logs.String(), "CONNECT "+target+": plain HTTP, each request recorded or replayed")
	spans := onlyFixture(t, sink.all())
	require.Len(t, spans, 1)
	ex, err := fixture.FromSpan(spans[0])
	require.NoError(t, err)
	assert.Equal(t, "http://"+target+"/paris", ex.URL)

	td, tid := recorded(ex)
	up.Close()
	before := hits.Load()
	rp, err := NewReplayer(Config{Redactor: newRedactor(t), Logger: quietLogger()}, td, tid, ReplayOptions{})
	require.NoError(t, err)
	code, body = connectThenGET(t, serve(t, rp, nil), target, "/paris")
	assert.Equal(t, 200, code)
	assert.Equal(t, "weather at /paris", body)
	assert.Equal(t, before, hits.Load())
}

// TestServeFlow: a captured connection carrying HTTP is recorded under the name it was sent
// to; one carrying neither HTTP nor TLS is reset in record mode and refused as the divergence in
// replay.
func TestServeFlow(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "host %s", r.Host)
	}))
	defer up.Close()
	var logs bytes.Buffer
	sink := &captureSink{}
	rec := NewRecorder(Config{Redactor: newRedactor(t), Sink: sink, Logger: log.New(&logs, "", 0),
		ConnectTo: map[string]string{"tool.example.com:80": strings.TrimPrefix(up.URL, "http://")}}, Root{TraceID: NewTraceID(), SpanID: NewSpanID()})

	client, server := net.Pipe()
	go rec.ServeFlow(server, "tool.example.com:80")
	fmt.Fprint(client, "GET /w HTTP/1.1\r\nHost: tool.example.com\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(client), nil)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	assert.Equal(t, "host tool.example.com", string(b))
	client.Close()

	client, server = net.Pipe()
	done := make(chan struct{})
	go func() { rec.ServeFlow(server, "192.0.2.1:9"); close(done) }()
	_, _ = client.Write([]byte{0, 1, 2, 3})
	_, err = client.Read(make([]byte, 1))
	assert.Error(t, err, "an opaque flow is closed, never relayed")
	<-done
	require.NoError(t, rec.Close())
	assert.Contains(t, logs.String(), "runagain sandbox: refused a TCP connection that is neither HTTP nor TLS to 192.0.2.1:9")
	spans := onlyFixture(t, sink.all())
	require.Len(t, spans, 1)
	ex, _ := fixture.FromSpan(spans[0])
	assert.Equal(t, "http://tool.example.com/w", ex.URL)

	td, tid := recorded(ex)
	rp, err := NewReplayer(Config{Redactor: newRedactor(t), Logger: quietLogger()}, td, tid, ReplayOptions{})
	require.NoError(t, err)
	client, server = net.Pipe()
	go rp.ServeFlow(server, "192.0.2.1:9")
	_, _ = client.Write([]byte{0, 1, 2, 3})
	_, err = client.Read(make([]byte, 1))
	assert.Error(t, err)
	d := rp.Result().Divergence
	require.NotNil(t, d)
	assert.Equal(t, "TCP", d.Method)
	assert.Equal(t, "connect", d.Diff.Field)
}
