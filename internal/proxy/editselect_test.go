// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/fixture"
)

// TestSetSelectorsOnMixedAPIs: an agent mixing Chat Completions and Responses. A messages path
// (absent from Responses bodies) applies where it exists and says which calls it skips; api=
// and step= aim an edit at one API or one call; the result names the calls each edit changed;
// an edit that names a value in none of the calls it selects is an error.
func TestSetSelectorsOnMixedAPIs(t *testing.T) {
	var mu sync.Mutex
	var got []string
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.URL.Path+" "+string(b))
		mu.Unlock()
		_, _ = io.WriteString(w, `{"live":true}`)
	}))
	defer llm.Close()
	chat := func(q string) string { return `{"model":"m","messages":[{"role":"user","content":"` + q + `"}]}` }
	resp := func(q string) string { return `{"model":"m","instructions":"Be long.","input":"` + q + `"}` }
	td, tid := recorded(
		&fixture.Exchange{Method: "POST", URL: llm.URL + "/v1/chat/completions", RequestBody: []byte(chat("a")), ResponseBody: []byte(`{"n":1}`)},
		&fixture.Exchange{Method: "POST", URL: llm.URL + "/v1/responses", RequestBody: []byte(resp("b")), ResponseBody: []byte(`{"n":2}`)},
		&fixture.Exchange{Method: "POST", URL: llm.URL + "/v1/chat/completions", RequestBody: []byte(chat("c")), ResponseBody: []byte(`{"n":3}`)},
	)
	routes, err := NewRoutes([]string{"openai=" + llm.URL})
	require.NoError(t, err)
	var logs bytes.Buffer
	cfg := Config{Routes: routes, Redactor: newRedactor(t), Sink: &captureSink{}, Logger: log.New(&logs, "", 0)}
	edit := func(s string) Edit {
		e, err := ParseEdit(s)
		require.NoError(t, err, s)
		return e
	}
	for _, bad := range []string{"step=0:model=x", "api=foo:model=x"} {
		_, err := ParseEdit(bad)
		assert.Error(t, err, bad)
	}
	_, err = NewReplayer(cfg, td, tid, ReplayOptions{Rerun: &RerunOptions{Edits: []Edit{edit("api=responses:messages[0].content=x")}, Root: Root{TraceID: NewTraceID(), SpanID: NewSpanID()}}})
	require.ErrorContains(t, err, "no value at path messages[0].content in any LLM request it selects: 2 (POST /v1/responses)")

	edits := []Edit{edit("messages[0].content=changed"), edit("api=responses:instructions=Be brief."), edit("step=3:model=m2")}
	assert.Equal(t, 3, edits[2].Step)
	rp, err := NewReplayer(cfg, td, tid, ReplayOptions{Rerun: &RerunOptions{Edits: edits, Root: Root{TraceID: NewTraceID(), SpanID: NewSpanID()}}})
	require.NoError(t, err)
	assert.Contains(t, logs.String(), "--set messages[0].content=changed applies to recorded LLM call(s) 1, 3; 2 (POST /v1/responses) have no value at messages[0].content and are sent unchanged")
	assert.Contains(t, logs.String(), "--set step=3:model=m2 applies to recorded LLM call(s) 3")
	purl := serve(t, rp, nil)
	for _, r := range []struct{ path, body string }{{"/openai/v1/chat/completions", chat("a")}, {"/openai/v1/responses", resp("b")}, {"/openai/v1/chat/completions", chat("c")}} {
		res, b := do(t, http.DefaultClient, mustReq(t, "POST", purl+r.path, r.body))
		require.Equal(t, 200, res.StatusCode, string(b))
	}
	res := rp.RerunResult()
	require.NoError(t, rp.Close())
	assert.Equal(t, map[string][]int{"messages[0].content=changed": {1, 3}, "api=responses:instructions=Be brief.": {2}, "step=3:model=m2": {3}}, res.Changed)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 3)
	assert.Contains(t, got[0], `"content":"changed"`)
	assert.Contains(t, got[1], `"instructions":"Be brief."`)
	assert.NotContains(t, got[1], "changed")
	assert.True(t, strings.Contains(got[2], `"model":"m2"`) && strings.Contains(got[2], `"content":"changed"`), got[2])
	assert.NotContains(t, got[0], "m2")
}

// TestSetAddsAMissingTopLevelParameter: `--set temperature=0` on a run whose agent never sent a
// temperature adds it to each selected request (the log names the calls); a deeper path that
// names no value stays an error.
func TestSetAddsAMissingTopLevelParameter(t *testing.T) {
	var mu sync.Mutex
	var got []string
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
		_, _ = io.WriteString(w, `{"live":true}`)
	}))
	defer llm.Close()
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	td, tid := recorded(&fixture.Exchange{Method: "POST", URL: llm.URL + "/v1/chat/completions", RequestBody: []byte(body), ResponseBody: []byte(`{"n":1}`)})
	routes, err := NewRoutes([]string{"openai=" + llm.URL})
	require.NoError(t, err)
	var logs bytes.Buffer
	cfg := Config{Routes: routes, Redactor: newRedactor(t), Sink: &captureSink{}, Logger: log.New(&logs, "", 0)}
	deep, err := ParseEdit("response_format.type=json_object")
	require.NoError(t, err)
	_, err = NewReplayer(cfg, td, tid, ReplayOptions{Rerun: &RerunOptions{Edits: []Edit{deep}, Root: Root{TraceID: NewTraceID(), SpanID: NewSpanID()}}})
	require.ErrorContains(t, err, "no value at path response_format.type")

	for _, spec := range []string{"temperature=0", "$.top_p=0.5"} {
		e, err := ParseEdit(spec)
		require.NoError(t, err)
		rp, err := NewReplayer(cfg, td, tid, ReplayOptions{Rerun: &RerunOptions{Edits: []Edit{e}, Root: Root{TraceID: NewTraceID(), SpanID: NewSpanID()}}})
		require.NoError(t, err, spec)
		purl := serve(t, rp, nil)
		res, b := do(t, http.DefaultClient, mustReq(t, "POST", purl+"/openai/v1/chat/completions", body))
		require.Equal(t, 200, res.StatusCode, string(b))
		assert.Equal(t, map[string][]int{spec: {1}}, rp.RerunResult().Changed)
		require.NoError(t, rp.Close())
	}
	assert.Contains(t, logs.String(), "--set temperature=0 adds temperature to recorded LLM call(s) 1, which did not send it")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 2)
	assert.Contains(t, got[0], `"temperature":0`)
	assert.Contains(t, got[1], `"top_p":0.5`)
}
