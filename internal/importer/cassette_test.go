package importer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

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
// one trace with one fixture span per recorded interaction.
func TestCorpusCassettesImport(t *testing.T) {
	files := CorpusCassettes(t)
	if len(files) < 900 {
		t.Fatalf("found %d cassettes in the corpus, want the ~970 listed in its README", len(files))
	}
	byFormat := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		res, err := ParseBytes(f, data)
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
	t.Logf("cassettes by format: %v", byFormat)
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
