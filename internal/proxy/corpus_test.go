// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/importer"
	"github.com/runagain/runagain/internal/redact"
	"github.com/runagain/runagain/internal/store/sqlitestore"
)

var cassetteFolders = []string{"openinference", "otel-python-contrib", "openllmetry", "pydantic-ai", "fantasy-go-vcr", "otel-js-contrib-nock", "large-payloads"}

// corpusCassettes lists the corpus cassettes by content (YAML with interactions, HAR, nock JSON).
func corpusCassettes(tb testing.TB) []string {
	reInter := regexp.MustCompile(`(?m)^interactions:`)
	var out []string
	for _, dir := range cassetteFolders {
		out = append(out, corpus.Walk(tb, dir, func(p string) bool {
			switch {
			case strings.HasSuffix(p, ".har"):
				return true
			case strings.HasSuffix(p, ".yaml"):
				b, err := os.ReadFile(p)
				return err == nil && reInter.Match(b)
			case strings.HasSuffix(p, ".json"):
				return strings.Contains(p, "nock")
			}
			return false
		})...)
	}
	return out
}

func fixtureExchanges(tb testing.TB, td ptrace.Traces) ([]*fixture.Exchange, pcommon.TraceID) {
	tb.Helper()
	var out []*fixture.Exchange
	var tid pcommon.TraceID
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		for j := 0; j < rss.At(i).ScopeSpans().Len(); j++ {
			spans := rss.At(i).ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				tid = spans.At(k).TraceID()
				if fixture.IsFixture(spans.At(k)) {
					ex, err := fixture.FromSpan(spans.At(k))
					if err != nil {
						tb.Fatal(err)
					}
					out = append(out, ex)
				}
			}
		}
	}
	return out, tid
}

func newRedactor(tb testing.TB) *redact.Redactor {
	rd, err := redact.New(redact.Config{HashKey: []byte("test-key")})
	if err != nil {
		tb.Fatal(err)
	}
	return rd
}

// flushRecorder records what a handler writes between flushes.
type flushRecorder struct {
	h        http.Header
	status   int
	cur      bytes.Buffer
	segments [][]byte
}

func (f *flushRecorder) Header() http.Header         { return f.h }
func (f *flushRecorder) WriteHeader(code int)        { f.status = code }
func (f *flushRecorder) Write(b []byte) (int, error) { return f.cur.Write(b) }
func (f *flushRecorder) Flush() {
	if f.cur.Len() > 0 {
		f.segments = append(f.segments, bytes.Clone(f.cur.Bytes()))
		f.cur.Reset()
	}
}

// liveRequest is the request a client would send for recorded exchange ex, as a forward-proxy
// request to the cassette's host over plain HTTP.
func liveRequest(tb testing.TB, ex *fixture.Exchange) *http.Request {
	u, err := parseURL(ex.URL)
	if err != nil {
		tb.Fatal(err)
	}
	u.Scheme = "http"
	req, err := http.NewRequest(ex.Method, u.String(), bytes.NewReader(ex.RequestBody))
	if err != nil {
		tb.Fatal(err)
	}
	for k, vs := range ex.RequestHeader {
		if fixture.IsHopByHop(k) || strings.EqualFold(k, "Host") || strings.EqualFold(k, "Accept-Encoding") {
			continue
		}
		req.Header[k] = vs
	}
	return req
}

// TestCorpusCassettesReplay: every cassette in the corpus that records a request (a nock "[]"
// recording of none is refused by the importer, importer.ErrNoExchanges) imports, goes through a real SQLite
// hot-tier file, and replaying each of its requests through the proxy (as an HTTP forward proxy
// on 127.0.0.1) returns the recorded status, headers less hop-by-hop ones, and body byte for
// byte; SSE bodies are written one recorded event per flush, in order.
func TestCorpusCassettesReplay(t *testing.T) {
	files := corpusCassettes(t)
	if len(files) < 900 {
		t.Fatalf("found %d cassettes, want the ~970 of the corpus", len(files))
	}
	db, err := sqlitestore.Open(filepath.Join(t.TempDir(), "hot.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	quiet := log.New(io.Discard, "", 0)
	rd := newRedactor(t)
	var requests, sseChecked, skipped int
	for _, f := range files {
		res, err := importer.ParseFile(f)
		if errors.Is(err, importer.ErrNoExchanges) {
			continue
		}
		if err != nil {
			t.Errorf("import %s: %v", f, err)
			continue
		}
		want, tid := fixtureExchanges(t, res.Traces)
		if rej, err := db.WriteTraces(context.Background(), res.Traces); err != nil || len(rej) > 0 {
			t.Fatalf("%s: store: %v %v", f, err, rej)
		}
		run, err := db.Run(context.Background(), tid.String())
		if err != nil {
			t.Fatalf("%s: read back: %v", f, err)
		}
		if strings.HasPrefix(want0(want).URL, "grpc+sample:") {
			skipped++ // pydantic-ai xAI gRPC samples: imported, not HTTP
			continue
		}
		rp, err := NewReplayer(Config{Redactor: rd, Logger: quiet}, run.Traces, tid, ReplayOptions{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if rp.Exchanges() != len(want) {
			t.Fatalf("%s: replayer loaded %d exchanges, want %d", f, rp.Exchanges(), len(want))
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := Serve(l, rp)
		pu, _ := url.Parse("http://" + l.Addr().String())
		client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), DisableCompression: true}}
		for i, ex := range want {
			name := filepath.Base(f) + "#" + itoa(i)
			resp, err := client.Do(liveRequest(t, ex))
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			requests++
			if err != nil {
				t.Errorf("%s: read: %v", name, err)
				continue
			}
			if resp.StatusCode != ex.Status {
				t.Errorf("%s: status %d, want %d (%s)", name, resp.StatusCode, ex.Status, resp.Header.Get(HeaderDivergence)+" "+clip(string(got)))
				continue
			}
			if !bytes.Equal(got, ex.ResponseBody) {
				t.Errorf("%s: body differs: %d bytes, want %d", name, len(got), len(ex.ResponseBody))
			}
			wantH := ex.ReplayHeader()
			for k, vs := range wantH {
				if g := resp.Header.Values(k); strings.Join(g, "\x00") != strings.Join(vs, "\x00") {
					t.Errorf("%s: header %s = %q, want %q", name, k, g, vs)
				}
			}
			for k := range resp.Header {
				if _, ok := wantH[k]; !ok && k != "Content-Length" && !fixture.IsHopByHop(k) {
					t.Errorf("%s: header %s served but not recorded", name, k)
				}
			}
		}
		_ = srv.Shutdown(5e9)
		if r := rp.Result(); r.Divergence != nil || r.Served != len(want) {
			t.Errorf("%s: served %d of %d; divergence: %v", f, r.Served, len(want), r.Divergence)
		}
		// Chunk order: on a fresh replayer, each SSE response is written one event per flush.
		var sse []*fixture.Exchange
		for _, ex := range want {
			if len(ex.Chunks) > 0 {
				sse = append(sse, ex)
			}
		}
		if len(sse) == 0 {
			continue
		}
		rp2, err := NewReplayer(Config{Redactor: rd, Logger: quiet}, run.Traces, tid, ReplayOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ex := range want {
			fr := &flushRecorder{h: http.Header{}}
			req := liveRequest(t, ex)
			req.RequestURI = req.URL.String()
			rp2.ServeHTTP(fr, req)
			fr.Flush()
			if len(ex.Chunks) == 0 {
				continue
			}
			sseChecked++
			if len(fr.segments) != len(ex.Chunks) {
				t.Errorf("%s: %d flushed writes, want %d SSE chunks", filepath.Base(f), len(fr.segments), len(ex.Chunks))
				continue
			}
			for i, c := range ex.Chunks {
				if !bytes.Equal(fr.segments[i], ex.ResponseBody[c.Offset:c.Offset+c.Size]) {
					t.Errorf("%s: chunk %d differs", filepath.Base(f), i)
					break
				}
			}
		}
	}
	t.Logf("%d cassettes, %d requests replayed, %d SSE responses checked chunk by chunk, %d non-HTTP sample files imported only", len(files), requests, sseChecked, skipped)
	if sseChecked < 100 {
		t.Errorf("only %d SSE responses checked; the corpus has ~160 cassettes with streams", sseChecked)
	}
}

func want0(exs []*fixture.Exchange) *fixture.Exchange {
	if len(exs) == 0 {
		return &fixture.Exchange{}
	}
	return exs[0]
}

func itoa(i int) string { return strconv.Itoa(i) }
