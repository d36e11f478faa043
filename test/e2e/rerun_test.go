// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

var updateGolden = flag.Bool("update", false, "rewrite golden files in testdata/")

const toolAgentEnv = "RUNAGAIN_E2E_TOOL_AGENT"

// TestHelperToolAgent is not a test: it is the agent the rerun tests run (the test binary
// re-executed). A tool-using agent with the official openai-go client, configured only from the
// environment (OPENAI_BASE_URL, OPENAI_API_KEY): it calls chat completions with three tools,
// calls each tool the model asks for over HTTP at $RUNAGAIN_PROXY/tools/NAME?ARGS, and prints
// the final answer.
func TestHelperToolAgent(t *testing.T) {
	if os.Getenv(toolAgentEnv) == "" {
		t.Skip("helper process for the rerun tests")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := openai.NewClient()
	prompt := "What is the weather in Paris, in Fahrenheit, and tomorrow?"
	if p := os.Getenv("RUNAGAIN_E2E_PROMPT"); p != "" {
		prompt = p // "a change the user made in their own code or prompt files"
	}
	tool := func(name, desc string, props map[string]any) openai.ChatCompletionToolUnionParam {
		return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: name, Description: openai.String(desc),
			Parameters: shared.FunctionParameters{"type": "object", "properties": props}})
	}
	params := openai.ChatCompletionNewParams{
		Model: "gpt-4.1",
		Messages: []openai.ChatCompletionMessageParamUnion{
			// Over payload_offload's 4 KiB threshold: request bodies are stored as blobs and
			// diff and rerun must rehydrate them.
			openai.SystemMessage("You are a travel assistant. Use the tools." + strings.Repeat(" Be precise.", 400)),
			openai.UserMessage(prompt),
		},
		Tools: []openai.ChatCompletionToolUnionParam{
			tool("weather", "current weather", map[string]any{"city": map[string]any{"type": "string"}}),
			tool("forecast", "forecast", map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}}),
			tool("convert", "Celsius to Fahrenheit", map[string]any{"celsius": map[string]any{"type": "number"}}),
		},
	}
	tools := os.Getenv("RUNAGAIN_PROXY") + "/tools/"
	for i := 0; i < 8; i++ {
		c, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(2)
		}
		msg := c.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			fmt.Println("ANSWER", msg.Content)
			os.Exit(0)
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			var args map[string]any
			_ = json.Unmarshal([]byte(tc.Function.Arguments), &args)
			q := make([]string, 0, len(args))
			for k, v := range args {
				q = append(q, fmt.Sprintf("%s=%v", k, v))
			}
			resp, err := http.Get(tools + tc.Function.Name + "?" + strings.Join(sortStrings(q), "&"))
			if err != nil {
				fmt.Println("ERROR tool", err)
				os.Exit(2)
			}
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				fmt.Println("ERROR tool", resp.StatusCode, b.String())
				os.Exit(2)
			}
			fmt.Println("TOOL", tc.Function.Name, b.String())
			params.Messages = append(params.Messages, openai.ToolMessage(b.String(), tc.ID))
		}
	}
	fmt.Println("ERROR no answer")
	os.Exit(2)
}

func sortStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

// scriptedLLM is an OpenAI chat completions upstream on 127.0.0.1 whose answer depends on the
// model name and the messages: the number of tool results so far picks the next tool call (the
// same for every model), the text names the model, usage counts the characters of the messages.
type scriptedLLM struct {
	srv      *httptest.Server
	requests atomic.Int64
	retries  atomic.Int64 // requests openai-go marked as a retry (X-Stainless-Retry-Count > 0)
	auth     atomic.Value
}

func newScriptedLLM(t *testing.T) *scriptedLLM {
	s := &scriptedLLM{}
	t.Cleanup(func() {
		if n := s.retries.Load(); n > 0 {
			t.Errorf("the agent retried %d LLM call(s): an attempt failed on its way back (the proxy or the sandbox's relay lost a response), and the upstream saw the call twice", n)
		}
	})
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if n := r.Header.Get("X-Stainless-Retry-Count"); n != "" && n != "0" {
			s.retries.Add(1) // openai-go retrying: it saw an attempt fail that may have reached here
		}
		s.auth.Store(r.Header.Get("Authorization"))
		var req struct {
			Model    string           `json:"model"`
			Messages []map[string]any `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, `{"error":{"message":"bad request"}}`, 400)
			return
		}
		chars, results, city := 0, []string{}, "Paris"
		for _, m := range req.Messages {
			c, _ := m["content"].(string)
			chars += len(c)
			if m["role"] == "tool" {
				results = append(results, c)
			}
			if m["role"] == "user" && strings.Contains(c, "Rome") {
				city = "Rome"
			}
		}
		msg := map[string]any{"role": "assistant"}
		finish := "tool_calls"
		callTool := func(id, name, args string) {
			msg["tool_calls"] = []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": args}}}
		}
		switch len(results) {
		case 0:
			msg["content"] = "[" + req.Model + "] Checking the weather in " + city + "."
			callTool("call_1", "weather", `{"city":"`+city+`"}`)
		case 1:
			msg["content"] = "[" + req.Model + "] Now the forecast."
			callTool("call_2", "forecast", `{"city":"Paris","days":2}`)
		case 2:
			var wx struct {
				TempC float64 `json:"temp_c"`
			}
			_ = json.Unmarshal([]byte(results[0]), &wx)
			msg["content"] = "[" + req.Model + "] Converting."
			callTool("call_3", "convert", fmt.Sprintf(`{"celsius":%g}`, wx.TempC))
		default:
			msg["content"] = fmt.Sprintf("[%s] Paris: %s; %s; %s.", req.Model, results[0], results[2], results[1])
			finish = "stop"
		}
		out := map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1764500000, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": chars / 4, "completion_tokens": len(msg["content"].(string)) / 4, "total_tokens": chars/4 + len(msg["content"].(string))/4}}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// newToolAPI serves /weather, /forecast and /convert and counts requests.
func newToolAPI(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		q := r.URL.Query()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/weather":
			fmt.Fprintf(w, `{"city":%q,"temp_c":21,"sky":"clear"}`, q.Get("city"))
		case "/forecast":
			fmt.Fprintf(w, `{"city":%q,"days":%s,"tomorrow":"rain"}`, q.Get("city"), q.Get("days"))
		case "/convert":
			fmt.Fprintf(w, `{"celsius":%s,"fahrenheit":69.8}`, q.Get("celsius"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// runagain runs bin/runagain against the collector with extra environment.
// waitSpans polls the hot tier until the run has n spans (30 s at most) and returns it.
func waitRunSpans(t *testing.T, dataDir, traceID string, n int) *store.Run {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		db, err := sqlitestore.Open(filepath.Join(dataDir, "hot.db"), sqlitestore.Options{ReadOnly: true})
		if err == nil {
			run, err := db.Run(context.Background(), traceID)
			db.Close()
			if err == nil && run.Traces.SpanCount() >= n {
				return run
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s did not reach %d spans in the store in 30s", traceID, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func spansOf(td ptrace.Traces) []ptrace.Span {
	var out []ptrace.Span
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		sss := td.ResourceSpans().At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			for k := 0; k < sss.At(j).Spans().Len(); k++ {
				out = append(out, sss.At(j).Spans().At(k))
			}
		}
	}
	return out
}

// normalizeDiff blanks what differs between any two executions of the same runs (trace and span
// ids, durations), so the diff JSON can be compared with a golden file.
func normalizeDiff(t *testing.T, data []byte) []byte {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("diff --json: %v\n%s", err, data)
	}
	var walk func(x any)
	walk = func(x any) {
		switch m := x.(type) {
		case map[string]any:
			for k, c := range m {
				switch k {
				case "trace_id", "span_id", "original_trace_id":
					m[k] = "<id>"
				case "messages_source":
					// where the messages were read (derived at record time, or by the diff from the bodies of
					// an older recording): the same messages either way.
					m[k] = "<source>"
				case "duration_ms":
					if dm, ok := c.(map[string]any); ok {
						for kk := range dm {
							dm[kk] = 0
						}
					} else {
						m[k] = 0
					}
				default:
					walk(c)
				}
			}
		case []any:
			for _, c := range m {
				walk(c)
			}
		}
	}
	walk(v)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
	return buf.Bytes()
}

var reNewRun = regexp.MustCompile(`new run ([0-9a-f]{32}) \(rerun of`)

// TestRerunSetModelAndDiff: a 4-step tool-using agent (openai-go, a scripted LLM upstream and a
// tool API on 127.0.0.1) is recorded through `runagain proxy --record`; `runagain rerun
// --set model=other-model` runs it again: every tool response comes from the recording (the tool
// API gets 0 requests), every LLM call goes live (4 upstream requests, with the caller's
// credential) and the new run is stored as its own trace linked to the original and naming the
// change. `runagain diff` names step 1's output as the first difference and its JSON matches
// testdata/rerun.diff.json; a run diffed with itself has no difference; a --set path absent from
// the recorded bodies fails before the agent runs; a changed prompt (no --set) departs at step 1's
// input; a tool request that matches nothing is refused loudly; --from-step 2 serves the first two
// LLM calls from the recording.
func TestRerunSetModelAndDiff(t *testing.T) {
	col := collectortest.Start(t, collectortest.Options{})
	llm := newScriptedLLM(t)
	tools, toolCount := newToolAPI(t)
	key := "sk-test-rerun-0123456789"
	agent := []string{"--", os.Args[0], "-test.run=^TestHelperToolAgent$", "-test.count=1"}
	env := []string{toolAgentEnv + "=1", "OPENAI_API_KEY=" + key}
	routes := []string{"--listen", "127.0.0.1:0", "--route", "openai=" + llm.srv.URL, "--route", "tools=" + tools.URL}

	// Record.
	out, errOut, err := cliEnv(t, col, env, append(append([]string{"proxy", "--record"}, routes...), agent...)...)
	if err != nil {
		t.Fatalf("record: %v\n%s\n%s", err, out, errOut)
	}
	if llm.requests.Load() != 4 || toolCount.Load() != 3 {
		t.Fatalf("recording: %d LLM and %d tool requests, want 4 and 3\n%s", llm.requests.Load(), toolCount.Load(), out)
	}
	if !strings.Contains(out, "ANSWER [gpt-4.1] Paris:") {
		t.Fatalf("agent output:\n%s", out)
	}
	m := regexp.MustCompile(`run trace ([0-9a-f]{32})`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no run trace printed:\n%s", errOut)
	}
	orig := m[1]
	stored := waitRunSpans(t, col.DataDir, orig, 8) // root + 4 LLM + 3 tool exchanges
	refs := 0
	for _, sp := range spansOf(stored.Traces) {
		if _, ok := sp.Attributes().Get("http.request.body_ref"); ok {
			refs++
		}
	}
	if refs != 4 {
		t.Errorf("%d stored exchanges have http.request.body_ref, want the 4 LLM requests offloaded", refs)
	}

	// A --set path that no recorded request body has: an error naming it, nothing runs. (A path
	// that only some bodies have applies where it exists.)
	out, errOut, err = cliEnv(t, col, env, append(append([]string{"rerun", orig, "--set", "messages[70].content=hi"}, routes...), agent...)...)
	if err == nil || !strings.Contains(errOut, "messages[70].content") || out != "" {
		t.Fatalf("absent --set path: err=%v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if llm.requests.Load() != 4 || toolCount.Load() != 3 {
		t.Fatal("a rejected --set still sent requests")
	}

	// Rerun with another model.
	out, errOut, err = cliEnv(t, col, env, append(append([]string{"rerun", orig, "--set", "model=other-model"}, routes...), agent...)...)
	if err != nil {
		t.Fatalf("rerun: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	t.Logf("rerun stderr:\n%s", errOut)
	if n := toolCount.Load() - 3; n != 0 {
		t.Errorf("the tool API got %d requests during the rerun, want 0 (served from the recording)", n)
	}
	if n := llm.requests.Load() - 4; n != 4 {
		t.Errorf("the LLM upstream got %d requests during the rerun, want 4 (every call went live)", n)
	}
	if a, _ := llm.auth.Load().(string); a != "Bearer "+key {
		t.Errorf("live LLM call carried Authorization %q, want the caller's", a)
	}
	if !strings.Contains(out, "ANSWER [other-model] Paris:") || !strings.Contains(out, "TOOL weather {\"city\":\"Paris\",\"temp_c\":21") {
		t.Errorf("agent output during the rerun:\n%s", out)
	}
	m = reNewRun.FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no new run printed:\n%s", errOut)
	}
	rerun := m[1]
	for _, want := range []string{"first departed at LLM call 1", "runagain diff " + orig + " " + rerun, "changes: model=other-model"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("rerun output lacks %q:\n%s", want, errOut)
		}
	}

	// The new run: its own trace, root linked to the original and naming the change; tool
	// exchanges served from the recording, LLM calls live.
	run := waitRunSpans(t, col.DataDir, rerun, 8)
	sources := map[string]int{}
	var root ptrace.Span
	for _, sp := range spansOf(run.Traces) {
		if v, ok := sp.Attributes().Get("runagain.rerun.source"); ok {
			sources[v.Str()]++
		}
		if strings.HasPrefix(sp.Name(), "runagain rerun") {
			root = sp
		}
	}
	if sources["recording"] != 3 || sources["live"] != 4 {
		t.Errorf("exchange sources %v, want 3 recording and 4 live", sources)
	}
	if root == (ptrace.Span{}) {
		t.Fatal("no root span runagain rerun in the new run")
	}
	if v, _ := root.Attributes().Get("runagain.rerun.original_trace_id"); v.Str() != orig {
		t.Errorf("root original_trace_id %q", v.Str())
	}
	if v, _ := root.Attributes().Get("runagain.rerun.changes"); v.AsString() != `["model=other-model"]` {
		t.Errorf("root changes %s", v.AsString())
	}
	if root.Links().Len() != 1 || root.Links().At(0).TraceID().String() != orig {
		t.Errorf("root span links %d, want one to %s", root.Links().Len(), orig)
	}

	// diff: step 1's output is the first difference; JSON matches the golden file.
	js, errOut, err := cliEnv(t, col, nil, "diff", orig, rerun, "--json")
	if err != nil {
		t.Fatalf("diff: %v\n%s", err, errOut)
	}
	var res struct {
		First struct {
			StepA int    `json:"step_a"`
			StepB int    `json:"step_b"`
			Field string `json:"field"`
		} `json:"first_difference"`
	}
	if err := json.Unmarshal([]byte(js), &res); err != nil {
		t.Fatal(err)
	}
	if res.First.StepA != 1 || res.First.StepB != 1 || res.First.Field != "output" {
		t.Errorf("first difference %+v, want step 1 output", res.First)
	}
	got := normalizeDiff(t, []byte(js))
	golden := filepath.Join("testdata", "rerun.diff.json")
	if *updateGolden {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("diff --json differs from %s (rerun with -update to accept):\n%s", golden, got)
	}
	txt, _, err := cliEnv(t, col, nil, "diff", orig, rerun)
	if err != nil || !strings.Contains(txt, "first difference: step 1 (llm call 1 chat gpt-4.1): output differs") || strings.Contains(txt, "\x1b[") {
		t.Errorf("diff text (err %v):\n%s", err, txt)
	}
	t.Logf("runagain diff %s %s:\n%s", orig, rerun, txt)

	// --step 2: what the model saw at LLM call 2 in both runs, every input message listed.
	js, _, err = cliEnv(t, col, nil, "diff", orig, rerun, "--step", "2", "--json")
	var step struct {
		Pairs []struct {
			A struct {
				LLMStep int `json:"llm_step"`
			} `json:"a"`
			Input []struct{ Op string } `json:"input_messages"`
		}
	}
	if err != nil || json.Unmarshal([]byte(js), &step) != nil || len(step.Pairs) != 1 || step.Pairs[0].A.LLMStep != 2 || len(step.Pairs[0].Input) != 4 || step.Pairs[0].Input[2].Op != "changed" {
		t.Errorf("diff --step 2 (err %v):\n%s", err, js)
	}

	// A run with itself: no difference.
	txt, _, err = cliEnv(t, col, nil, "diff", orig, orig, "--exit-code")
	if err != nil || !strings.Contains(txt, "no difference") {
		t.Errorf("diff of a run with itself (err %v):\n%s", err, txt)
	}
	if _, _, err := cliEnv(t, col, nil, "diff", orig, rerun, "--exit-code"); err == nil {
		t.Error("--exit-code: differing runs exited 0")
	}

	// A change in the agent's own prompt, no --set: the LLM calls go live, the tools stay
	// recorded, and the diff names step 1's input messages.
	llmBefore := llm.requests.Load()
	out, errOut, err = cliEnv(t, col, append(env, "RUNAGAIN_E2E_PROMPT=Weather in Paris please"),
		append(append([]string{"rerun", orig}, routes...), agent...)...)
	if err != nil || toolCount.Load() != 3 || llm.requests.Load()-llmBefore != 4 {
		t.Fatalf("rerun with a changed prompt: %v; tool requests %d, LLM %d\n%s\n%s", err, toolCount.Load()-3, llm.requests.Load()-llmBefore, out, errOut)
	}
	m = reNewRun.FindStringSubmatch(errOut)
	waitRunSpans(t, col.DataDir, m[1], 8)
	js, _, err = cliEnv(t, col, nil, "diff", orig, m[1], "--json")
	if err != nil || json.Unmarshal([]byte(js), &res) != nil || res.First.StepA != 1 || res.First.Field != "input_messages" {
		t.Errorf("diff after a prompt change: %v %+v", err, res.First)
	}

	// A prompt that makes the model call the tool with another city: the tool request matches
	// nothing recorded and is not an LLM call, so it fails loudly as in replay (the tool API is
	// never reached) and rerun exits non-zero naming the differing field.
	out, errOut, err = cliEnv(t, col, append(env, "RUNAGAIN_E2E_PROMPT=Weather in Rome please"),
		append(append([]string{"rerun", orig}, routes...), agent...)...)
	if err == nil || toolCount.Load() != 3 || !strings.Contains(errOut, "query.city") || !strings.Contains(out, "ERROR tool 400") {
		t.Fatalf("rerun with a tool request that matches nothing: err %v, tool requests %d\nstdout:\n%s\nstderr:\n%s", err, toolCount.Load()-3, out, errOut)
	}
	t.Logf("rerun refusing an unrecorded tool request (%v):\n%s", err, errOut)

	// --from-step 2: the first two LLM calls come from the recording, the last two go live
	// (same model, so the same answers): no difference.
	llmBefore = llm.requests.Load()
	_, errOut, err = cliEnv(t, col, env, append(append([]string{"rerun", orig, "--from-step", "2"}, routes...), agent...)...)
	if err != nil || toolCount.Load() != 3 || llm.requests.Load()-llmBefore != 2 || !strings.Contains(errOut, "first departed at LLM call 3") {
		t.Fatalf("rerun --from-step 2: %v; tool requests %d, LLM %d\n%s", err, toolCount.Load()-3, llm.requests.Load()-llmBefore, errOut)
	}
	m = reNewRun.FindStringSubmatch(errOut)
	waitRunSpans(t, col.DataDir, m[1], 8)
	if txt, _, err := cliEnv(t, col, nil, "diff", orig, m[1], "--exit-code"); err != nil || !strings.Contains(txt, "no difference") {
		t.Errorf("diff after --from-step 2 (err %v):\n%s", err, txt)
	}
}

// TestDiffImportedCorpusRuns: two corpus runs of different frameworks (OpenAI Agents SDK and
// CrewAI, Langfuse exports) imported through the collector: `runagain diff` completes, aligns
// their LLM calls and lists every step of both.
func TestDiffImportedCorpusRuns(t *testing.T) {
	col := collectortest.Start(t, collectortest.Options{})
	dir := filepath.Join(corpus.Dir(t), "langfuse/worker/src/__tests__/chatml/framework-traces")
	ids := map[string]int{"fee618f96dc31e0ca38b2f7b26eb8b29": 5}
	files := []string{"openai-agents-2025-09-30.trace.json", "crewai-2025-07-11.trace.json"}
	for _, f := range files {
		if out, errOut, err := cliEnv(t, col, nil, "import", filepath.Join(dir, f)); err != nil {
			t.Fatalf("import %s: %v\n%s%s", f, err, out, errOut)
		}
	}
	spans := langfuseSpans(t, filepath.Join(dir, files[1]))
	crew := spans[0].TraceID
	ids[crew] = len(spans)
	for id, n := range ids {
		waitRunSpans(t, col.DataDir, id, n)
	}
	js, errOut, err := cliEnv(t, col, nil, "diff", "fee618f96dc31e0ca38b2f7b26eb8b29", crew, "--json")
	if err != nil {
		t.Fatalf("diff: %v\n%s", err, errOut)
	}
	var res struct {
		A, B  struct{ Steps int }
		Pairs []struct {
			Op   string
			A, B *struct{ Kind string }
		}
	}
	if err := json.Unmarshal([]byte(js), &res); err != nil {
		t.Fatal(err)
	}
	na, nb, llmPairs := 0, 0, 0
	for _, p := range res.Pairs {
		if p.A != nil {
			na++
		}
		if p.B != nil {
			nb++
		}
		if p.A != nil && p.B != nil && p.A.Kind == "llm" {
			llmPairs++
		}
	}
	if res.A.Steps != 3 || na != res.A.Steps || nb != res.B.Steps || res.B.Steps == 0 || llmPairs == 0 {
		t.Errorf("alignment: a %d steps (%d listed), b %d (%d listed), %d LLM pairs\n%s", res.A.Steps, na, res.B.Steps, nb, llmPairs, js)
	}
	txt, _, err := cliEnv(t, col, nil, "diff", "fee618f96dc31e0ca38b2f7b26eb8b29", crew)
	if err != nil || !strings.Contains(txt, "first difference: step 1") {
		t.Errorf("diff text (err %v):\n%s", err, txt)
	}
}
