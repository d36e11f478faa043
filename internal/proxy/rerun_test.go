// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/runagain/runagain/internal/fixture"
)

// TestParseEdit: VALUE is JSON when it parses, else a string; @FILE is a file's text; paths
// use [N] for array elements; malformed specs are errors naming them.
func TestParseEdit(t *testing.T) {
	f := filepath.Join(t.TempDir(), "prompt.txt")
	if err := os.WriteFile(f, []byte("Be brief.\n\"quoted\""), 0o600); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"model":"gpt-4.1","temperature":1,"messages":[{"role":"system","content":"Be long."},{"role":"user","content":"hi"}],"a.b":{"c":1}}`)
	for _, c := range []struct{ spec, path, want string }{
		{"model=gpt-4.1-mini", "model", `"gpt-4.1-mini"`},
		{"temperature=0", "temperature", `0`},
		{`model="0"`, "model", `"0"`},
		{"messages[0].content=@" + f, "messages.0.content", `"Be brief.\n\"quoted\""`},
	} {
		e, err := ParseEdit(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		if string(e.Value) != c.want || !e.exists(body) {
			t.Errorf("%s: value %s exists %v", c.spec, e.Value, e.exists(body))
		}
		out, err := e.apply(body)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("%s: edited body is not JSON: %s", c.spec, out)
		}
	}
	for _, spec := range []string{"model", "=x", "messages[*].content=x", "a..b=1", "messages[x]=1"} {
		if _, err := ParseEdit(spec); err == nil || !strings.Contains(err.Error(), "--set") {
			t.Errorf("%q: %v", spec, err)
		}
	}
	for _, spec := range []string{"messages[2].content=x", "messages.0.content=x", "response_format.type=x", "model[0]=x"} {
		e, err := ParseEdit(spec)
		if err != nil {
			t.Fatal(err)
		}
		if e.exists(body) {
			t.Errorf("%s: reported present", spec)
		}
	}
}

// TestRerunFromStepAndSet: with --from-step 1 the first LLM call is served from the recording
// unedited, every later one goes live with the edit applied; the tool request is served from the
// recording; an unmatched non-LLM request is refused; every exchange is recorded under the new
// root with its source; a --set path absent from a recorded body is an error naming it.
func TestRerunFromStepAndSet(t *testing.T) {
	var live atomic.Int64
	var lastBody atomic.Value
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		live.Add(1)
		b, _ := io.ReadAll(r.Body)
		lastBody.Store(string(b))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"live"}}]}`)
	}))
	defer llm.Close()
	req := func(n int) string {
		return `{"model":"m1","temperature":1,"messages":[{"role":"user","content":"q` + string(rune('0'+n)) + `"}]}`
	}
	td, tid := recorded(
		&fixture.Exchange{Method: "POST", URL: llm.URL + "/v1/chat/completions", RequestBody: []byte(req(1)), ResponseBody: []byte(`{"n":1}`)},
		&fixture.Exchange{Method: "GET", URL: "http://tools.example/weather?city=Paris", ResponseBody: []byte(`{"temp":21}`)},
		&fixture.Exchange{Method: "POST", URL: llm.URL + "/v1/chat/completions", RequestBody: []byte(req(2)), ResponseBody: []byte(`{"n":2}`)},
		&fixture.Exchange{Method: "POST", URL: llm.URL + "/v1/chat/completions", RequestBody: []byte(req(3)), ResponseBody: []byte(`{"n":3}`)},
	)
	routes, err := NewRoutes([]string{"openai=" + llm.URL})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := ParseEdit("temperature=0.5")
	root := Root{TraceID: NewTraceID(), SpanID: NewSpanID()}
	sink := &captureSink{}
	cfg := Config{Routes: routes, Redactor: newRedactor(t), Sink: sink, Logger: quietLogger()}

	bad, _ := ParseEdit("response_format.type=json_object") // a top-level member would be added (TestSetAddsAMissingTopLevelParameter)
	if _, err := NewReplayer(cfg, td, tid, ReplayOptions{Rerun: &RerunOptions{Edits: []Edit{bad}, Root: root}}); err == nil || !strings.Contains(err.Error(), "response_format.type") {
		t.Fatalf("absent path: %v", err)
	}

	// --from-step at or past the run's 3 LLM calls would send nothing live: refused, naming the count.
	if _, err := NewReplayer(cfg, td, tid, ReplayOptions{Rerun: &RerunOptions{FromStep: 9, Root: root}}); err == nil || !strings.Contains(err.Error(), "--from-step 9: the run has 3 recorded LLM call(s)") {
		t.Fatalf("--from-step past the calls: %v", err)
	}

	rp, err := NewReplayer(cfg, td, tid, ReplayOptions{Rerun: &RerunOptions{Edits: []Edit{set}, FromStep: 1, Root: root}})
	if err != nil {
		t.Fatal(err)
	}
	purl := serve(t, rp, nil)
	c := proxyClient(purl, nil)
	post := func(n int) string {
		resp, b := do(t, http.DefaultClient, mustReq(t, "POST", purl+"/openai/v1/chat/completions", req(n)))
		if resp.StatusCode != 200 {
			t.Fatalf("LLM call %d: %d %s", n, resp.StatusCode, b)
		}
		return string(b)
	}
	if b := post(1); b != `{"n":1}` || live.Load() != 0 {
		t.Fatalf("LLM call 1 (before --from-step): %s, %d live", b, live.Load())
	}
	if resp, b := do(t, c, mustReq(t, "GET", "http://tools.example/weather?city=Paris", "")); resp.StatusCode != 200 || string(b) != `{"temp":21}` {
		t.Fatalf("tool: %d %s", resp.StatusCode, b)
	}
	if b := post(2); !strings.Contains(b, "live") || live.Load() != 1 || !strings.Contains(lastBody.Load().(string), `"temperature":0.5`) {
		t.Fatalf("LLM call 2: %s, %d live, upstream got %v", b, live.Load(), lastBody.Load())
	}
	post(3)
	if resp, _ := do(t, c, mustReq(t, "GET", "http://tools.example/weather?city=Rome", "")); resp.StatusCode != http.StatusBadRequest || resp.Header.Get(HeaderDivergence) != "query.city" {
		t.Fatalf("unmatched tool request: %d %s", resp.StatusCode, resp.Header.Get(HeaderDivergence))
	}
	r := rp.RerunResult()
	if r.LLMCalls != 3 || r.Live != 2 || r.Served != 2 || r.Refused != 1 || r.First == nil || r.First.LLMCall != 2 || r.First.Reason != "from-step" {
		t.Fatalf("result %+v first %+v", r, r.First)
	}
	if err := rp.Close(); err != nil {
		t.Fatal(err)
	}
	sources := map[string]int{}
	for _, sp := range onlyFixture(t, sink.all()) {
		if sp.TraceID() != root.TraceID {
			t.Errorf("exchange recorded in trace %s, want the new run %s", sp.TraceID(), root.TraceID)
		}
		v, _ := sp.Attributes().Get(AttrRerunSource)
		sources[v.Str()]++
	}
	if sources["recording"] != 2 || sources["live"] != 2 || sources["refused"] != 1 {
		t.Errorf("recorded sources %v", sources)
	}
}

// TestRerunGETOnLLMHostIsNoLLMCall: an SDK's GET /v1/models (no body) on the LLM route's host is
// not an LLM call: --set does not look for its path in it, and it is served from the recording.
func TestRerunGETOnLLMHostIsNoLLMCall(t *testing.T) {
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("nothing may go live: %s %s", r.Method, r.URL)
	}))
	defer llm.Close()
	body := `{"model":"m1","messages":[{"role":"user","content":"q"}]}`
	td, tid := recorded(
		&fixture.Exchange{Method: "GET", URL: llm.URL + "/v1/models", ResponseBody: []byte(`{"data":[]}`)},
		&fixture.Exchange{Method: "POST", URL: llm.URL + "/v1/chat/completions", RequestBody: []byte(body), ResponseBody: []byte(`{"n":1}`)},
	)
	routes, err := NewRoutes([]string{"openai=" + llm.URL})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := ParseEdit("model=m1")
	cfg := Config{Routes: routes, Redactor: newRedactor(t), Sink: &captureSink{}, Logger: quietLogger()}
	rp, err := NewReplayer(cfg, td, tid, ReplayOptions{Rerun: &RerunOptions{Edits: []Edit{set}, Root: Root{TraceID: NewTraceID(), SpanID: NewSpanID()}}})
	if err != nil {
		t.Fatalf("a bodiless GET on the LLM host stopped the rerun: %v", err)
	}
	defer rp.Close()
	purl := serve(t, rp, nil)
	if resp, b := do(t, http.DefaultClient, mustReq(t, "GET", purl+"/openai/v1/models", "")); resp.StatusCode != 200 || string(b) != `{"data":[]}` {
		t.Fatalf("GET /v1/models: %d %s", resp.StatusCode, b)
	}
	if resp, b := do(t, http.DefaultClient, mustReq(t, "POST", purl+"/openai/v1/chat/completions", body)); resp.StatusCode != 200 || string(b) != `{"n":1}` {
		t.Fatalf("unchanged LLM call: %d %s", resp.StatusCode, b)
	}
	if r := rp.RerunResult(); r.LLMCalls != 1 || r.Live != 0 {
		t.Fatalf("result %+v", r)
	}
}
