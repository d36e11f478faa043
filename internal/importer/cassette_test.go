// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	yaml "go.yaml.in/yaml/v3"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/fixture"
)

// cassetteFolders are the corpus folders holding HTTP recordings (see the corpus README).
var cassetteFolders = []string{"openinference", "otel-python-contrib", "openllmetry", "pydantic-ai", "fantasy-go-vcr", "otel-js-contrib-nock", "large-payloads"}

// CorpusCassettes lists every cassette file of the corpus, selected by content: YAML with a
// top-level interactions list, HAR, and nock JSON arrays.
func CorpusCassettes(tb testing.TB) []string {
	tb.Helper()
	var out []string
	reInter := regexp.MustCompile(`(?m)^interactions:`)
	for _, dir := range cassetteFolders {
		out = append(out, corpus.Walk(tb, dir, func(p string) bool {
			switch {
			case strings.HasSuffix(p, ".har"):
				return true
			case strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml"):
				b, err := os.ReadFile(p)
				return err == nil && reInter.Match(b)
			case strings.HasSuffix(p, ".json") && strings.Contains(p, "nock"):
				return true
			}
			return false
		})...)
	}
	return out
}

func fixtureSpans(td ptrace.Traces) []ptrace.Span {
	var out []ptrace.Span
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			for k := 0; k < sss.At(j).Spans().Len(); k++ {
				if s := sss.At(j).Spans().At(k); fixture.IsFixture(s) {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// TestCorpusCassettesImport: every cassette of the corpus parses with the expected format into
// one trace with one fixture span per recorded interaction, except the nock recordings of no
// request ("[]"), refused with ErrNoExchanges.
func TestCorpusCassettesImport(t *testing.T) {
	files := CorpusCassettes(t)
	if len(files) < 900 {
		t.Fatalf("found %d cassettes in the corpus, want the ~970 listed in its README", len(files))
	}
	byFormat := map[string]int{}
	empty := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		res, err := ParseBytes(f, data)
		if errors.Is(err, ErrNoExchanges) {
			if string(bytes.TrimSpace(data)) != "[]" {
				t.Errorf("%s: refused as empty but is not \"[]\": %v", f, err)
			}
			empty++
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		byFormat[res.Format]++
		if res.TraceCount() != 1 {
			t.Errorf("%s: %d traces, want 1", f, res.TraceCount())
		}
		want := -1
		switch res.Format {
		case "vcrpy", "go-vcr":
			var doc struct {
				Interactions []any `yaml:"interactions"`
			}
			if err := yaml.Unmarshal(data, &doc); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			want = len(doc.Interactions)
		case "nock":
			var arr []json.RawMessage
			_ = json.Unmarshal(data, &arr)
			want = len(arr)
		case "har":
			var h struct {
				Log struct{ Entries []json.RawMessage }
			}
			_ = json.Unmarshal(data, &h)
			want = len(h.Log.Entries)
		default:
			t.Errorf("%s: detected as %s", f, res.Format)
		}
		if got := len(fixtureSpans(res.Traces)); got != want {
			t.Errorf("%s (%s): %d fixture spans, want %d", filepath.Base(f), res.Format, got, want)
		}
	}
	t.Logf("cassettes by format: %v, %d empty (refused)", byFormat, empty)
	if empty == 0 {
		t.Errorf("the corpus's nock recording of no request (openai-chat-completions-handles-connection-errors-without-crashing.json) was not refused")
	}
	for _, f := range []string{"vcrpy", "go-vcr", "nock", "har"} {
		if byFormat[f] == 0 {
			t.Errorf("no %s cassette found in the corpus", f)
		}
	}
}

// TestVCRPyGzipBinary: a gzip !!binary body is stored decoded and marked, headers are kept.
func TestVCRPyGzipBinary(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(`{"ok":true,"text":"héllo"}`))
	_ = zw.Close()
	var b64 strings.Builder
	enc := json.NewEncoder(&b64)
	_ = enc
	y := "interactions:\n- request:\n    body: '{\"a\": 1}'\n    headers:\n      authorization:\n      - Bearer sk-test\n    method: POST\n    uri: https://api.example.com/v1/x?y=1\n  response:\n    body:\n      string: !!binary |\n        " +
		b64encode(gz.Bytes()) + "\n    headers:\n      Content-Encoding:\n      - gzip\n      Content-Type:\n      - application/json\n    status:\n      code: 201\n      message: Created\nversion: 1\n"
	res, err := ParseBytes("x.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != "vcrpy" {
		t.Fatalf("format %s", res.Format)
	}
	sp := fixtureSpans(res.Traces)
	if len(sp) != 1 {
		t.Fatalf("%d spans", len(sp))
	}
	ex, err := fixture.FromSpan(sp[0])
	if err != nil {
		t.Fatal(err)
	}
	if string(ex.ResponseBody) != `{"ok":true,"text":"héllo"}` || ex.DecodedEncoding != "gzip" || ex.Status != 201 {
		t.Fatalf("got body %q enc %q status %d", ex.ResponseBody, ex.DecodedEncoding, ex.Status)
	}
	if ex.ResponseHeader.Get("Content-Encoding") != "gzip" || ex.ReplayHeader().Get("Content-Encoding") != "" {
		t.Fatalf("headers %v / replay %v", ex.ResponseHeader, ex.ReplayHeader())
	}
	if string(ex.RequestBody) != `{"a": 1}` || ex.Method != "POST" || ex.URL != "https://api.example.com/v1/x?y=1" {
		t.Fatalf("request %s %s %q", ex.Method, ex.URL, ex.RequestBody)
	}
}

// TestPydanticParsedBody: parsed_body is re-encoded the way pydantic-ai's deserializer does
// (json.dumps defaults): ", " and ": " separators, ensure_ascii, PyYAML scalar types.
func TestPydanticParsedBody(t *testing.T) {
	y := `interactions:
- request:
    headers:
      content-type:
      - application/json
    method: POST
    parsed_body:
      model: m
      n: 1
      top_p: 1.0
      small: 1.0e-05
      big: 12345678901234567.0
      stream: false
      stop: null
      text: "caf\u00e9 \U0001F600"
      'yes': yes
      list:
      - 1
      - '2'
    uri: https://api.example.com/v1/chat
  response:
    headers:
      content-type:
      - application/json
    parsed_body:
      id: x
    status:
      code: 200
      message: OK
version: 1
`
	res, err := ParseBytes("p.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := fixture.FromSpan(fixtureSpans(res.Traces)[0])
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model": "m", "n": 1, "top_p": 1.0, "small": 1e-05, "big": 1.2345678901234568e+16, "stream": false, "stop": null, "text": "caf\u00e9 \ud83d\ude00", "yes": true, "list": [1, "2"]}`
	if string(ex.RequestBody) != want {
		t.Fatalf("request body\n got %s\nwant %s", ex.RequestBody, want)
	}
	if string(ex.ResponseBody) != `{"id": "x"}` || ex.Source != "vcrpy-pydantic" {
		t.Fatalf("response body %s source %s", ex.ResponseBody, ex.Source)
	}
}

// TestCassetteMalformed: errors name the position and the field.
func TestCassetteMalformed(t *testing.T) {
	cases := map[string]string{
		"interactions:\n- request:\n    method: POST\n  response:\n    status:\n      code: 200\n":                          "x.yaml:3:5: interactions[0].request: method and uri are required",
		"interactions:\n- request:\n    method: GET\n    uri: http://a/\n  response:\n    status:\n      code: abc\n":       "x.yaml:7:13: interactions[0].response.status.code: \"abc\" is not an HTTP status",
		"version: 2\ninteractions:\n- request:\n    url: http://a/\n    method: GET\n  response:\n    body: x\n":            "x.yaml:7:5: interactions[0].response.code: missing",
		"interactions:\n- request:\n    method: GET\n    uri: http://a/\n    body: !!binary |\n      @@@\n  response: {}\n": "interactions[0].request.body: invalid !!binary base64",
	}
	for in, want := range cases {
		_, err := ParseBytes("x.yaml", []byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("input %q:\n got %v\nwant %s", in, err, want)
		}
	}
	_, err := ParseBytes("n.json", []byte(`[{"scope":"https://a:443","method":"GET","path":"/","response":{"x":}}]`))
	if err == nil || !strings.Contains(err.Error(), "n.json:1:") {
		t.Errorf("nock malformed: %v", err)
	}
}

// TestHARFields: what the HAR reader takes from an entry (github.com/chromedp/cdproto/har
// types): method, url, HTTP version, headers without HTTP/2 pseudo-headers, a base64 request
// body (postData.encoding, outside HAR 1.2) and response body (content.encoding),
// content.mimeType as Content-Type only when no header gives one, start and duration; and the
// errors naming the entry and the field.
func TestHARFields(t *testing.T) {
	h := `{"log":{"version":"1.2","creator":{"name":"t","version":"1"},"entries":[
{"startedDateTime":"2024-05-01T10:00:00.250Z","time":1500.5,
 "request":{"method":"POST","url":"https://api.example.com/v1/x?q=1","httpVersion":"HTTP/2.0",
  "headers":[{"name":":authority","value":"api.example.com"},{"name":"Content-Type","value":"application/octet-stream"}],
  "postData":{"mimeType":"application/octet-stream","text":"aGVsbG8=","encoding":"base64"}},
 "response":{"status":201,"statusText":"Created","headers":[],"content":{"size":5,"mimeType":"text/plain","text":"d29ybGQ=","encoding":"base64"}}},
{"startedDateTime":"2024-05-01T10:00:02Z",
 "request":{"method":"GET","url":"https://api.example.com/v1/y","headers":[null]},
 "response":{"status":200,"headers":[{"name":"Content-Type","value":"application/json"}],"content":{"mimeType":"text/plain","text":"{}"}}}]}}`
	td, err := HAR{}.Parse([]byte(h))
	if err != nil {
		t.Fatal(err)
	}
	spans := fixtureSpans(td)
	if len(spans) != 2 {
		t.Fatalf("%d fixture spans", len(spans))
	}
	var exs []*fixture.Exchange
	for _, sp := range spans {
		ex, err := fixture.FromSpan(sp)
		if err != nil {
			t.Fatal(err)
		}
		exs = append(exs, ex)
	}
	a, b := exs[0], exs[1]
	start := time.Date(2024, 5, 1, 10, 0, 0, 250e6, time.UTC)
	switch {
	case a.Method != "POST" || a.URL != "https://api.example.com/v1/x?q=1" || a.Status != 201 || a.Protocol != "2":
		t.Errorf("first entry: %s %s %d HTTP/%s", a.Method, a.URL, a.Status, a.Protocol)
	case string(a.RequestBody) != "hello" || string(a.ResponseBody) != "world":
		t.Errorf("bodies %q %q, want the base64 decoded", a.RequestBody, a.ResponseBody)
	case a.RequestHeader.Get(":authority") != "" || a.RequestHeader.Get("Content-Type") != "application/octet-stream":
		t.Errorf("request headers %v", a.RequestHeader)
	case a.ResponseHeader.Get("Content-Type") != "text/plain":
		t.Errorf("response Content-Type %q, want content.mimeType", a.ResponseHeader.Get("Content-Type"))
	case !a.Start.Equal(start) || a.End.Sub(a.Start) != 1500500*time.Microsecond:
		t.Errorf("times %v %v", a.Start, a.End)
	case b.ResponseHeader.Get("Content-Type") != "application/json" || string(b.ResponseBody) != "{}" || !b.End.Equal(b.Start):
		t.Errorf("second entry: %v %q %v-%v", b.ResponseHeader, b.ResponseBody, b.Start, b.End)
	}
	for _, c := range []struct{ entry, want string }{
		{`{"request":{"method":"GET"},"response":{"status":200}}`, "log.entries[0].request: method and url are required"},
		{`{"request":{"method":"GET","url":"http://x/"},"response":{}}`, "log.entries[0].response.status: missing"},
		{`{"request":{"method":"GET","url":"http://x/"},"response":{"status":200,"content":{"text":"!","encoding":"base64"}}}`, "log.entries[0].response.content.text: invalid base64"},
		{`{"request":{"method":"POST","url":"http://x/","postData":{"text":"!","encoding":"base64"}},"response":{"status":200}}`, "log.entries[0].request.postData.text: invalid base64"},
		{`{"request":{"method":"GET","url":"http://x/"},"response":{"status":"200"}}`, "log.entries[0]: json: cannot unmarshal string"},
	} {
		_, err := HAR{}.Parse([]byte(`{"log":{"entries":[` + c.entry + `]}}`))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.entry, err, c.want)
		}
	}
}
