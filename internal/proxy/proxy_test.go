// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/importer"
	"github.com/runagain/runagain/internal/redact"
)

// captureSink keeps what the proxy sends.
type captureSink struct {
	mu     sync.Mutex
	traces []ptrace.Traces
	logs   []plog.Logs
}

func (c *captureSink) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.traces = append(c.traces, td)
	return nil
}

func (c *captureSink) ConsumeLogs(_ context.Context, ld plog.Logs) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logs = append(c.logs, ld)
	return nil
}

func (c *captureSink) all() ptrace.Traces {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := ptrace.NewTraces()
	for _, td := range c.traces {
		td.ResourceSpans().MoveAndAppendTo(out.ResourceSpans())
	}
	c.traces = nil
	return out
}

func serve(t *testing.T, h http.Handler, cfg *Config) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg != nil {
		cfg.SelfHosts = SelfHosts(l.Addr())
	}
	s := Serve(l, h)
	t.Cleanup(func() { _ = s.Shutdown(5 * time.Second) })
	return "http://" + l.Addr().String()
}

func proxyClient(proxyURL string, roots *x509.CertPool) *http.Client {
	pu, _ := url.Parse(proxyURL)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: roots}}}
}

func quietLogger() *log.Logger { return log.New(io.Discard, "", 0) }

func do(t *testing.T, c *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

var sseEvents = []string{"data: {\"i\":0}\n\n", "event: delta\ndata: {\"i\":1}\n\n", "data: [DONE]\n\n"}

func sseUpstream(t *testing.T, tlsSrv bool) *httptest.Server {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, e := range sseEvents {
				_, _ = io.WriteString(w, e)
				w.(http.Flusher).Flush()
				time.Sleep(5 * time.Millisecond)
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "session=abcdef0123456789abcdef; Path=/")
		fmt.Fprintf(w, `{"echo":%q,"path":%q}`, body, r.URL.Path)
	})
	var s *httptest.Server
	if tlsSrv {
		s = httptest.NewTLSServer(h)
	} else {
		s = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s
}

func onlyFixture(t *testing.T, td ptrace.Traces) []ptrace.Span {
	t.Helper()
	var out []ptrace.Span
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		ss := td.ResourceSpans().At(i).ScopeSpans()
		for j := 0; j < ss.Len(); j++ {
			for k := 0; k < ss.At(j).Spans().Len(); k++ {
				if fixture.IsFixture(ss.At(j).Spans().At(k)) {
					out = append(out, ss.At(j).Spans().At(k))
				}
			}
		}
	}
	return out
}

// TestRecordForwardProxy: plain-HTTP forward proxying records a client span under the caller's
// traceparent span, credentials in headers and query never reach the sink, the response body is
// complete and an SSE stream is recorded event by event in order.
func TestRecordForwardProxy(t *testing.T) {
	up := sseUpstream(t, false)
	sink := &captureSink{}
	cfg := Config{Redactor: newRedactor(t), Sink: sink, Logger: quietLogger()}
	rec := NewRecorder(cfg, Root{})
	purl := serve(t, rec, nil)
	client := proxyClient(purl, nil)
	secret := "sk-proj-" + strings.Repeat("Ab3x", 10) + "T3BlbkFJ9q"
	qsecret := "AIza" + strings.Repeat("Sy9k", 8) + "abc"

	req, _ := http.NewRequest("POST", up.URL+"/v1/echo?key="+qsecret+"&page=2", strings.NewReader(`{"q":"hello"}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	resp, body := do(t, client, req)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"path":"/v1/echo"`) {
		t.Fatalf("proxied response %d %s", resp.StatusCode, body)
	}
	req2, _ := http.NewRequest("GET", up.URL+"/stream", nil)
	_, streamed := do(t, client, req2)
	if string(streamed) != strings.Join(sseEvents, "") {
		t.Fatalf("client got %q", streamed)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	td := sink.all()
	raw, _ := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte(qsecret)) || bytes.Contains(raw, []byte("abcdef0123456789abcdef")) {
		t.Fatal("a credential reached the sink")
	}
	spans := onlyFixture(t, td)
	if len(spans) != 2 {
		t.Fatalf("%d fixture spans, want 2", len(spans))
	}
	var echo, stream ptrace.Span
	for _, s := range spans {
		if v, _ := s.Attributes().Get(fixture.AttrMethod); v.Str() == "POST" {
			echo = s
		} else {
			stream = s
		}
	}
	if echo.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || echo.ParentSpanID().String() != "b7ad6b7169203331" || echo.Kind() != ptrace.SpanKindClient {
		t.Errorf("span not a client child of the traceparent: trace %s parent %s kind %v", echo.TraceID(), echo.ParentSpanID(), echo.Kind())
	}
	if stream.ParentSpanID() != (pcommon.SpanID{}) || stream.TraceID() == echo.TraceID() {
		t.Errorf("a request without traceparent must start its own trace")
	}
	ex, err := fixture.FromSpan(echo)
	if err != nil {
		t.Fatal(err)
	}
	if string(ex.RequestBody) != `{"q":"hello"}` || !bytes.Equal(ex.ResponseBody, body) || ex.Status != 200 {
		t.Errorf("recorded %q -> %d %q", ex.RequestBody, ex.Status, ex.ResponseBody)
	}
	if a := ex.RequestHeader.Get("Authorization"); a != "[REDACTED:authorization]" {
		t.Errorf("stored Authorization %q", a)
	}
	if !strings.Contains(ex.URL, "page=2") || strings.Contains(ex.URL, qsecret) {
		t.Errorf("url.full %q", ex.URL)
	}
	for _, k := range []string{fixture.AttrServerAddress, fixture.AttrServerPort, fixture.AttrStatusCode, fixture.AttrURLScheme} {
		if _, ok := echo.Attributes().Get(k); !ok {
			t.Errorf("missing %s", k)
		}
	}
	sx, err := fixture.FromSpan(stream)
	if err != nil {
		t.Fatal(err)
	}
	if len(sx.Chunks) != len(sseEvents) {
		t.Fatalf("%d chunks recorded, want %d", len(sx.Chunks), len(sseEvents))
	}
	for i, c := range sx.Chunks {
		if got := string(sx.ResponseBody[c.Offset : c.Offset+c.Size]); got != sseEvents[i] {
			t.Errorf("chunk %d = %q, want %q", i, got, sseEvents[i])
		}
		if i > 0 && c.Time.Before(sx.Chunks[i-1].Time) {
			t.Errorf("chunk %d timed before chunk %d", i, i-1)
		}
	}
}

// TestRecordRouteAndMITM: a reverse-proxy route and an HTTPS CONNECT intercepted with the
// generated CA both record; the CA key is private to its owner.
func TestRecordRouteAndMITM(t *testing.T) {
	up := sseUpstream(t, true)
	dir := t.TempDir()
	ca, caPath, err := LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, CAKeyFile)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("CA key file: %v %v", st, err)
	}
	ca2, _, err := LoadOrCreateCA(dir)
	if err != nil || !bytes.Equal(ca2.Certificate[0], ca.Certificate[0]) {
		t.Fatalf("CA not reloaded: %v", err)
	}
	upRoots := x509.NewCertPool()
	upRoots.AddCert(up.Certificate())
	routes, err := NewRoutes([]string{"local=" + up.URL + "/base"})
	if err != nil {
		t.Fatal(err)
	}
	sink := &captureSink{}
	cfg := Config{Routes: routes, Redactor: newRedactor(t), Sink: sink, CA: ca, Logger: quietLogger(),
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: upRoots}}}
	rec := NewRecorder(cfg, Root{TraceID: NewTraceID(), SpanID: NewSpanID()})
	purl := serve(t, rec, nil)

	// Route: the SDK only changes its base URL.
	resp, body := do(t, http.DefaultClient, mustReq(t, "POST", purl+"/local/v1/x?a=1", `{"r":1}`))
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"path":"/base/v1/x"`) {
		t.Fatalf("route: %d %s", resp.StatusCode, body)
	}
	// HTTPS through CONNECT, trusting the proxy CA.
	pem, _ := os.ReadFile(caPath)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		t.Fatal("CA PEM does not parse")
	}
	resp, body = do(t, proxyClient(purl, roots), mustReq(t, "POST", up.URL+"/v1/secure", `{"s":2}`))
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"path":"/v1/secure"`) {
		t.Fatalf("mitm: %d %s", resp.StatusCode, body)
	}
	_ = rec.Close()
	spans := onlyFixture(t, sink.all())
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	urls := map[string]bool{}
	for _, s := range spans {
		ex, _ := fixture.FromSpan(s)
		urls[ex.URL] = true
		if s.ParentSpanID().IsEmpty() {
			t.Errorf("%s: not under the run's root span", ex.URL)
		}
	}
	if !urls[up.URL+"/base/v1/x?a=1"] || !urls[up.URL+"/v1/secure"] {
		t.Errorf("recorded urls %v", urls)
	}
}

func mustReq(t *testing.T, method, u, body string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// recorded builds a run of exchanges (as a recorder would have stored them).
func recorded(exs ...*fixture.Exchange) (ptrace.Traces, pcommon.TraceID) {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	tid := NewTraceID()
	t0 := time.Unix(1700000000, 0)
	for i, ex := range exs {
		ex.Source = "proxy"
		ex.Index = i
		ex.Start = t0.Add(time.Duration(i) * time.Second)
		ex.End = ex.Start
		if ex.Status == 0 {
			ex.Status = 200
		}
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(tid)
		sp.SetSpanID(NewSpanID())
		fixture.ToSpan(ex, sp)
	}
	return td, tid
}

// TestReplayMatching: recorded order per key, query/method/body differences named, the
// redactor's normalisation (a hashed e-mail matches the live one), nothing to the network
// unless allowed, and every request after a divergence refused.
func TestReplayMatching(t *testing.T) {
	rd := newRedactor(t)
	stored, _ := rd.Redact(`{"user":"jane.doe@example.com","n":1}`)
	if !strings.Contains(stored, "email:") {
		t.Fatalf("redactor did not hash the e-mail: %s", stored)
	}
	td, tid := recorded(
		&fixture.Exchange{Method: "POST", URL: "https://api.example.com/v1/a?x=1", RequestBody: []byte(`{"m":"a","k":[1,2]}`), ResponseBody: []byte("first"), ResponseHeader: http.Header{"X-R": {"1"}}},
		&fixture.Exchange{Method: "POST", URL: "https://api.example.com/v1/a?x=1", RequestBody: []byte(`{"k":[1,2],"m":"a"}`), ResponseBody: []byte("second")},
		&fixture.Exchange{Method: "POST", URL: "https://api.example.com/v1/user", RequestBody: []byte(stored), ResponseBody: []byte("user")},
		&fixture.Exchange{Method: "GET", URL: "https://api.example.com/v1/list?page=1&limit=5", ResponseBody: []byte("list")},
	)
	var allowedHits int
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { allowedHits++; _, _ = io.WriteString(w, "live") }))
	defer allowed.Close()
	au, _ := url.Parse(allowed.URL)
	sink := &captureSink{}
	rp, err := NewReplayer(Config{Redactor: rd, Sink: sink, Logger: quietLogger()}, td, tid, ReplayOptions{AllowHosts: []string{au.Host}})
	if err != nil {
		t.Fatal(err)
	}
	purl := serve(t, rp, nil)
	c := proxyClient(purl, nil)
	get := func(method, u, body string) (int, string, http.Header) {
		resp, b := do(t, c, mustReq(t, method, u, body))
		return resp.StatusCode, string(b), resp.Header
	}
	// Same key twice: served in recorded order; JSON key order does not matter.
	if code, b, h := get("POST", "http://api.example.com/v1/a?x=1", `{"k":[1,2], "m":"a"}`); code != 200 || b != "first" || h.Get("X-R") != "1" {
		t.Fatalf("1st: %d %q", code, b)
	}
	if _, b, _ := get("POST", "http://api.example.com/v1/a?x=1", `{"m":"a","k":[1,2]}`); b != "second" {
		t.Fatalf("2nd: %q", b)
	}
	// The live e-mail matches the recorded hash token.
	if code, b, _ := get("POST", "http://api.example.com/v1/user", `{"user":"jane.doe@example.com","n":1}`); code != 200 || b != "user" {
		t.Fatalf("normalised body: %d %q", code, b)
	}
	// An allowed host reaches the network.
	if _, b, _ := get("GET", allowed.URL+"/anything", ""); b != "live" || allowedHits != 1 {
		t.Fatalf("allowed host: %q hits %d", b, allowedHits)
	}
	// One query value changed: the divergence names it.
	code, b, h := get("GET", "http://api.example.com/v1/list?page=2&limit=5", "")
	if code != http.StatusBadRequest || h.Get(HeaderDivergence) != "query.page" || !strings.Contains(b, `expected \"1\", got \"2\"`) {
		t.Fatalf("divergence response %d %s %v", code, b, h)
	}
	// After the divergence even a recorded request is refused.
	if code, b, _ := get("GET", "http://api.example.com/v1/list?page=1&limit=5", ""); code != http.StatusBadRequest || !strings.Contains(b, "stopped at request 4") {
		t.Fatalf("after divergence: %d %s", code, b)
	}
	if err := rp.Close(); err != nil {
		t.Fatal(err)
	}
	r := rp.Result()
	if r.Divergence == nil || r.Divergence.Request != 4 || r.Divergence.NearestPos != 4 || r.Served != 3 {
		t.Fatalf("result %+v", r)
	}
	if len(sink.logs) != 1 {
		t.Fatalf("%d divergence records sent", len(sink.logs))
	}
	lr := sink.logs[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	if lr.TraceID() != tid || lr.EventName() != EventDivergence || lr.SeverityNumber() != plog.SeverityNumberError {
		t.Errorf("divergence record %v %s", lr.TraceID(), lr.EventName())
	}
	if v, _ := lr.Attributes().Get(AttrDivField); v.Str() != "query.page" {
		t.Errorf("record field %q", v.Str())
	}
}

// TestDifferences: each kind of change is named by its field.
func TestDifferences(t *testing.T) {
	n := Normalizer{Redactor: newRedactor(t)}
	u := func(s string) *url.URL { x, _ := url.Parse(s); return x }
	base := n.normalize("POST", u("http://h/v1/a?x=1"), "", []byte(`{"messages":[{"role":"user","content":"hi"}],"model":"m"}`))
	cases := []struct {
		method, url, body, field string
	}{
		{"GET", "http://h/v1/a?x=1", `{"messages":[{"role":"user","content":"hi"}],"model":"m"}`, "method"},
		{"POST", "http://h/v1/b?x=1", `{"messages":[{"role":"user","content":"hi"}],"model":"m"}`, "path"},
		{"POST", "http://h/v1/a", `{"messages":[{"role":"user","content":"hi"}],"model":"m"}`, "query.x"},
		{"POST", "http://h/v1/a?x=1", `{"messages":[{"role":"user","content":"ho"}],"model":"m"}`, "body.messages[0].content"},
		{"POST", "http://h/v1/a?x=1", `{"messages":[{"role":"user","content":"hi"}],"model":"m","stream":true}`, "body.stream"},
		{"POST", "http://h/v1/a?x=1", `{"messages":[],"model":"m"}`, "body.messages.length"},
		{"POST", "http://h/v1/a?x=1", `not json`, "body"},
	}
	for _, c := range cases {
		d, ok := diff(base, n.normalize(c.method, u(c.url), "", []byte(c.body)))
		if !ok || d.Field != c.field {
			t.Errorf("%s %s %s: got %v (%v), want field %s", c.method, c.url, c.body, d, ok, c.field)
		}
	}
	if _, ok := diff(base, n.normalize("post", u("http://other/v1/a?x=1"), "application/json", []byte(` {"model":"m","messages":[{"content":"hi","role":"user"}]}`))); ok {
		t.Error("host, method case, whitespace and key order must not matter")
	}
}

func TestRoutes(t *testing.T) {
	for _, bad := range []string{"openai", "=https://x", "a=ftp://x", "a=notaurl", "a/b=https://x",
		"op enai=http://127.0.0.1:1", "openai=http://127.0.0.1:99999", "openai=http://127.0.0.1:0"} {
		if _, err := ParseRoute(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseRoute(%q) = %v, want an error naming it", bad, err)
		}
	}
	// A target without a scheme: the error says what was probably meant.
	_, err := ParseRoute("openai=127.0.0.1:25001")
	if err == nil || !strings.Contains(err.Error(), "did you mean openai=http://127.0.0.1:25001?") {
		t.Errorf("ParseRoute without a scheme: %v", err)
	}
	rs, err := NewRoutes([]string{"openai=http://127.0.0.1:9/base/"})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := rs.Resolve(&url.URL{Path: "/openai/v1/chat/completions", RawQuery: "a=1"})
	if !ok || got.String() != "http://127.0.0.1:9/base/v1/chat/completions?a=1" {
		t.Fatalf("resolve: %v %v", got, ok)
	}
	if _, ok := rs.Resolve(&url.URL{Path: "/nope/x"}); ok {
		t.Fatal("unknown route resolved")
	}
}

// TestReplayMITM: with a CA, HTTPS requests through CONNECT are intercepted and answered from
// the recording without any connection to the recorded host; without one, CONNECT is refused
// and counted as the divergence.
func TestReplayMITM(t *testing.T) {
	ca, caPath, err := LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pem, _ := os.ReadFile(caPath)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	// api.invalid cannot resolve: an answer proves nothing was dialled.
	td, tid := recorded(&fixture.Exchange{Method: "POST", URL: "https://api.invalid/v1/x", RequestBody: []byte(`{"a":1}`),
		ResponseBody: []byte(`{"ok":true}`), ResponseHeader: http.Header{"Content-Type": {"application/json"}}})
	rp, err := NewReplayer(Config{Redactor: newRedactor(t), CA: ca, Logger: quietLogger()}, td, tid, ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	resp, body := do(t, proxyClient(serve(t, rp, nil), roots), mustReq(t, "POST", "https://api.invalid/v1/x", `{"a":1}`))
	if resp.StatusCode != 200 || string(body) != `{"ok":true}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("mitm replay: %d %s %v", resp.StatusCode, body, resp.Header)
	}
	rp2, err := NewReplayer(Config{Redactor: newRedactor(t), Logger: quietLogger()}, td, tid, ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := proxyClient(serve(t, rp2, nil), roots).Do(mustReq(t, "POST", "https://api.invalid/v1/x", `{"a":1}`)); err == nil {
		t.Fatal("CONNECT without --mitm must be refused in replay")
	}
	if d := rp2.Result().Divergence; d == nil || d.Diff.Field != "connect" {
		t.Fatalf("divergence %+v", d)
	}
}

type failingSink struct{ captureSink }

func (*failingSink) ConsumeTraces(context.Context, ptrace.Traces) error {
	return fmt.Errorf("collector unavailable")
}

// TestRecordSpillsWhenCollectorDown: spans the sink refuses are kept as OTLP/JSON lines that
// `runagain import` reads back, and Close reports the failure.
func TestRecordSpillsWhenCollectorDown(t *testing.T) {
	up := sseUpstream(t, false)
	spillPath := filepath.Join(t.TempDir(), "unsent.jsonl")
	rec := NewRecorder(Config{Redactor: newRedactor(t), Sink: &failingSink{}, SpillPath: spillPath, Logger: quietLogger()}, Root{})
	c := proxyClient(serve(t, rec, nil), nil)
	do(t, c, mustReq(t, "POST", up.URL+"/a", "one"))
	do(t, c, mustReq(t, "POST", up.URL+"/b", "two"))
	if err := rec.Close(); err == nil || !strings.Contains(err.Error(), "2 span batches") {
		t.Fatalf("Close: %v", err)
	}
	res, err := importer.ParseFile(spillPath)
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != "otlp-json" || len(onlyFixture(t, res.Traces)) != 2 {
		t.Fatalf("spilled %s with %d fixture spans", res.Format, len(onlyFixture(t, res.Traces)))
	}
}

// TestNormalizeFormsAndIgnored: multipart bodies match across boundaries and differ by part,
// URL-encoded forms by field, and ignored body paths and query parameters do not take part.
func TestNormalizeFormsAndIgnored(t *testing.T) {
	n := Normalizer{Redactor: newRedactor(t), IgnoreBody: []string{"metadata.request_id", "messages[*].id"}, IgnoreQuery: []string{"ts"}}
	u := func(s string) *url.URL { x, _ := url.Parse(s); return x }
	mp := func(boundary, file string) (string, []byte) {
		var b bytes.Buffer
		fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n", boundary)
		fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\nContent-Type: audio/wav\r\n\r\n%s\r\n--%s--\r\n", boundary, file, boundary)
		return "multipart/form-data; boundary=" + boundary, b.Bytes()
	}
	ct1, b1 := mp("AAAA1111", "RIFFdata")
	ct2, b2 := mp("BBBB2222", "RIFFdata")
	ct3, b3 := mp("CCCC3333", "RIFFdatX")
	rec := n.normalize("POST", u("http://h/v1/audio?ts=1"), ct1, b1)
	if d, ok := diff(rec, n.normalize("POST", u("http://h/v1/audio?ts=2"), ct2, b2)); ok {
		t.Errorf("same multipart with another boundary and an ignored query differs: %v", d)
	}
	if d, ok := diff(rec, n.normalize("POST", u("http://h/v1/audio"), ct3, b3)); !ok || d.Field != "body.parts[1].body" {
		t.Errorf("changed file part: %v %v", d, ok)
	}
	f := "application/x-www-form-urlencoded"
	if d, ok := diff(n.normalize("POST", u("http://h/t"), f, []byte("grant=a&scope=x")), n.normalize("POST", u("http://h/t"), f, []byte("scope=y&grant=a"))); !ok || d.Field != "body.scope" {
		t.Errorf("form field: %v %v", d, ok)
	}
	j1 := `{"messages":[{"id":"m1","content":"hi"}],"metadata":{"request_id":"r1","team":"a"}}`
	j2 := `{"messages":[{"id":"m2","content":"hi"}],"metadata":{"request_id":"r2","team":"a"}}`
	if d, ok := diff(n.normalize("POST", u("http://h/x"), "", []byte(j1)), n.normalize("POST", u("http://h/x"), "", []byte(j2))); ok {
		t.Errorf("ignored paths still differ: %v", d)
	}
	if got := splitPath("a.b[*].c[2]"); strings.Join(got, " ") != "a b [*] c [2]" {
		t.Errorf("splitPath: %q", got)
	}
	for p, ok := range map[string]bool{"metadata.request_id": true, "messages[*].id": true, "a[2][*]": true,
		"messages[": false, "a..b": false, "a[x]": false, "a[-1]": false, "a[+1]": false, "": false, ".a": false} {
		_, err := NewReplayer(Config{Logger: quietLogger()}, ptrace.NewTraces(), pcommon.TraceID{}, ReplayOptions{IgnoreBody: []string{p}})
		if (err == nil) != ok {
			t.Errorf("IgnoreBody %q: %v", p, err)
		} else if err != nil && !strings.Contains(err.Error(), strconv.Quote(p)) {
			t.Errorf("IgnoreBody %q: error does not name the path: %v", p, err)
		}
	}
}

func TestErrorType(t *testing.T) {
	opErr := &net.OpError{Op: "dial", Net: "tcp", Err: io.EOF}
	timeout := &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{io.ErrUnexpectedEOF, "io.ErrUnexpectedEOF"}, // a sentinel: named, not "*errors.errorString"
		{fmt.Errorf("body: %w", io.ErrUnexpectedEOF), "io.ErrUnexpectedEOF"},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, "ECONNRESET"},
		{errors.New("something broke"), "_OTHER"}, // no type names it
		{fmt.Errorf("reading: %w", opErr), "*net.OpError"},
		{fmt.Errorf("reading: %w", timeout), "timeout"},
	} {
		if got := errorType(tc.err); got != tc.want {
			t.Errorf("errorType(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestReplayExhausted: a request recorded twice and made a third time diverges as "count",
// pointing at a recording of it and saying how often it was recorded.
func TestReplayExhausted(t *testing.T) {
	td, tid := recorded(
		&fixture.Exchange{Method: "GET", URL: "https://api.example.com/v1/ping", ResponseBody: []byte("a")},
		&fixture.Exchange{Method: "GET", URL: "https://api.example.com/v1/ping", ResponseBody: []byte("b")},
	)
	rp, err := NewReplayer(Config{Logger: quietLogger()}, td, tid, ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := proxyClient(serve(t, rp, nil), nil)
	for i, want := range []string{"a", "b"} {
		if resp, b := do(t, c, mustReq(t, "GET", "http://api.example.com/v1/ping", "")); resp.StatusCode != 200 || string(b) != want {
			t.Fatalf("request %d: %d %q", i+1, resp.StatusCode, b)
		}
	}
	resp, b := do(t, c, mustReq(t, "GET", "http://api.example.com/v1/ping", ""))
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get(HeaderDivergence) != "count" {
		t.Fatalf("3rd request: %d %s", resp.StatusCode, b)
	}
	d := rp.Result().Divergence
	if d == nil || !d.Exhausted || d.Diff.Expected != "2 time(s)" || (d.NearestPos != 1 && d.NearestPos != 2) {
		t.Fatalf("divergence %+v", d)
	}
}

// TestCredentialHeadersNeverRecorded: a credential header is stored redacted whatever its
// value looks like, a placeholder-like token included (the redactor keeps those elsewhere).
func TestCredentialHeadersNeverRecorded(t *testing.T) {
	rd := newRedactor(t)
	for _, c := range []struct{ k, v, want string }{
		{"Authorization", "Bearer EXAMPLEKEY123456789", "[REDACTED:authorization]"},
		{"Authorization", "Bearer sk-test-123", "[REDACTED:authorization]"},
		{"X-Api-Key", "test", "[REDACTED:x-api-key]"},
		{"Cookie", "session=xxx", "[REDACTED:cookie]"},
		{"X-Goog-Api-Key", "your-key-here", "[REDACTED:x-goog-api-key]"},
		{"Content-Type", "application/json", "application/json"},
	} {
		for _, r := range []*redact.Redactor{rd, nil} {
			got := recordedHeaderValue(r, c.k, c.v)
			if got == c.v && c.want != c.v || strings.Contains(got, c.v) && c.want != c.v {
				t.Errorf("%s: %q recorded as %q (redactor %v)", c.k, c.v, got, r != nil)
			}
			if r == nil && got != c.want {
				t.Errorf("%s without redactor: %q, want %q", c.k, got, c.want)
			}
		}
	}
}
