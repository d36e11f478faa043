// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// vercelAIModules returns the node_modules .ci/run installs test/clients/vercel-ai into.
func vercelAIModules(t *testing.T) (node, modules string) {
	t.Helper()
	return npmClientModules(t, "RUNAGAIN_VERCEL_AI_MODULES", "runagain-vercel-ai", "ai", "@ai-sdk/openai", "@opentelemetry/sdk-node")
}

// npmClientModules returns node and the node_modules .ci/run installs one test/clients/NAME into:
// $env, else ~/.cache/cacheDir/node_modules. Skipped when node or any of pkgs is missing, failed
// instead under RUNAGAIN_REQUIRE_NODE_CLIENTS=1 (.ci/run).
func npmClientModules(t *testing.T, env, cacheDir string, pkgs ...string) (node, modules string) {
	t.Helper()
	node, _ = nodeModules(t) // node itself, and the same skip-or-fail rule
	modules = os.Getenv(env)
	if modules == "" {
		home, _ := os.UserHomeDir()
		modules = filepath.Join(home, ".cache", cacheDir, "node_modules")
	}
	for _, pkg := range pkgs {
		if _, err := os.Stat(filepath.Join(modules, pkg, "package.json")); err != nil {
			if os.Getenv("RUNAGAIN_REQUIRE_NODE_CLIENTS") != "" {
				t.Fatalf("node package %s not installed in %s (.ci/run installs it)", pkg, modules)
			}
			t.Skipf("node package %s not installed in %s (.ci/run installs it)", pkg, modules)
		}
	}
	return node, modules
}

// loggingOpenAI is a scripted OpenAI chat completions upstream that keeps its own log of the
// request bodies it received and the response bodies it returned, in order.
type loggingOpenAI struct {
	mu        sync.Mutex
	responses []string // the answers, in order
	// echoModel: each answer names the model the request asked for (as a real upstream does),
	// not the one in responses.
	echoModel bool
	received  []map[string]any
	returned  []map[string]any
}

func (s *loggingOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	s.mu.Lock()
	n := len(s.received)
	s.received = append(s.received, body)
	s.mu.Unlock()
	if r.URL.Path != "/v1/chat/completions" || n >= len(s.responses) {
		http.Error(w, "unexpected request "+r.Method+" "+r.URL.Path, http.StatusTeapot)
		return
	}
	var ret map[string]any
	_ = json.Unmarshal([]byte(s.responses[n]), &ret)
	answer := s.responses[n]
	if m, ok := body["model"].(string); ok && s.echoModel {
		ret["model"] = m
		b, _ := json.Marshal(ret)
		answer = string(b)
	}
	s.mu.Lock()
	s.returned = append(s.returned, ret)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, answer)
}

// stepJSON is the part of `runagain show TRACE --step N --json` compared with the upstream's log.
type stepJSON struct {
	Steps    int `json:"steps"`
	Messages struct {
		SystemInstructions []struct {
			Content string `json:"content"`
		} `json:"system_instructions"`
		Input  []stepMessage `json:"input"`
		Output []stepMessage `json:"output"`
	} `json:"messages"`
}

type stepMessage struct {
	Role  string `json:"role"`
	Parts []struct {
		Type      string `json:"type"`
		Content   string `json:"content"`
		ID        string `json:"id"`
		Name      string `json:"name"`
		Arguments any    `json:"arguments"`
		Response  any    `json:"response"`
	} `json:"parts"`
}

// texts flattens messages to "role: text" lines (tool calls as "role: tool_call NAME ARGS",
// results as "role: result ID TEXT"), the form both sides are compared in.
func (m stepMessage) lines() []string {
	var out []string
	for _, p := range m.Parts {
		switch p.Type {
		case "text":
			out = append(out, m.Role+": "+p.Content)
		case "tool_call":
			b, _ := json.Marshal(p.Arguments)
			out = append(out, m.Role+": tool_call "+p.Name+" "+string(b))
		case "tool_call_response":
			out = append(out, fmt.Sprintf("%s: result %s %v", m.Role, p.ID, p.Response))
		}
	}
	return out
}

// openAILines flattens OpenAI chat messages (request messages, or a response's choices' messages)
// to the same lines.
func openAILines(msgs []any) []string {
	var out []string
	for _, e := range msgs {
		m, _ := e.(map[string]any)
		role, _ := m["role"].(string)
		if role == "tool" {
			out = append(out, fmt.Sprintf("tool: result %v %v", m["tool_call_id"], m["content"]))
			continue
		}
		if s, ok := m["content"].(string); ok && s != "" {
			out = append(out, role+": "+s)
		}
		tcs, _ := m["tool_calls"].([]any)
		for _, tc := range tcs {
			fn, _ := tc.(map[string]any)["function"].(map[string]any)
			var args any
			_ = json.Unmarshal([]byte(fn["arguments"].(string)), &args)
			b, _ := json.Marshal(args)
			out = append(out, fmt.Sprintf("%s: tool_call %v %s", role, fn["name"], b))
		}
	}
	return out
}

// vercelAIResponses are the scripted upstream's answers to the Vercel AI agent: a get_weather
// tool call, then the answer.
var vercelAIResponses = []string{
	`{"id":"chatcmpl-1","object":"chat.completion","created":1764500000,"model":"gpt-4o-mini-2024-07-18",
"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Paris\"}"}}]}}],
"usage":{"prompt_tokens":52,"completion_tokens":17,"total_tokens":69}}`,
	`{"id":"chatcmpl-2","object":"chat.completion","created":1764500001,"model":"gpt-4o-mini-2024-07-18",
"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"It is rainy in Paris, 57°F."}}],
"usage":{"prompt_tokens":1100,"completion_tokens":12,"total_tokens":1112}}`,
}

// TestRealVercelAIClient runs a weather agent on the Vercel AI SDK (ai 5, @ai-sdk/openai) with
// its OpenTelemetry telemetry, exporting OTLP/HTTP to the real collector, against a scripted
// local upstream. The run has 2 LLM calls (the ai.generateText.doGenerate spans; the outer
// ai.generateText reports their sum and is not a third) and 1 tool call; its tokens are the two
// calls' (ai 5 records them as ai.usage.promptTokens / completionTokens beside gen_ai.usage.*),
// each priced once; and
// `show --step N` holds exactly the messages the upstream logged receiving and returning.
func TestRealVercelAIClient(t *testing.T) {
	node, modules := vercelAIModules(t)
	upstream := &loggingOpenAI{responses: vercelAIResponses}
	srv := httptest.NewServer(upstream)
	defer srv.Close()
	c := collectortest.Start(t, collectortest.Options{})

	trace := runNodeAgent(t, node, modules, "vercel-ai", srv.URL, c)
	require.Len(t, upstream.received, 2)

	// root, ai.generateText, 2 doGenerate, 1 ai.toolCall.
	waitShow(t, c, trace, 5, 0)
	kinds, spans := spanKinds(t, c, trace)
	assert.Equal(t, 2, kinds["llm"], "LLM calls: the doGenerate spans only (%+v)", spans)
	assert.Equal(t, 1, kinds["tool"], "tool calls (%+v)", spans)

	assertStepsAreUpstreamLog(t, c, trace, upstream, true)

	// The two calls, not the outer span's sum again.
	assertRunTotals(t, c, 52+1100, 17+12)
}

// assertStepsAreUpstreamLog checks that `show TRACE --step N --json` holds, for every call the
// upstream logged, exactly the messages it received (system instructions first) and returned.
// withIDs false compares tool results without their tool_call_id, for an instrumentation that
// records none.
func assertStepsAreUpstreamLog(t *testing.T, c *collectortest.Collector, trace string, upstream *loggingOpenAI, withIDs bool) {
	t.Helper()
	steps := len(upstream.received)
	for n := 1; n <= steps; n++ {
		var st stepJSON
		require.NoError(t, json.Unmarshal([]byte(cli(t, c, "show", trace, "--step", fmt.Sprint(n), "--json")), &st))
		assert.Equal(t, steps, st.Steps)
		var in []string
		for _, p := range st.Messages.SystemInstructions {
			in = append(in, "system: "+p.Content)
		}
		for _, m := range st.Messages.Input {
			in = append(in, m.lines()...)
		}
		var out []string
		for _, m := range st.Messages.Output {
			out = append(out, m.lines()...)
		}
		sent, _ := upstream.received[n-1]["messages"].([]any)
		want := openAILines(sent)
		for i, l := range want {
			if f := strings.SplitN(l, " ", 4); !withIDs && len(f) == 4 && f[0] == "tool:" && f[1] == "result" {
				want[i] = "tool: result  " + f[3]
			}
		}
		assert.Equal(t, want, in, "step %d input = what the upstream received", n)
		var returned []any
		for _, ch := range upstream.returned[n-1]["choices"].([]any) {
			returned = append(returned, ch.(map[string]any)["message"])
		}
		assert.Equal(t, openAILines(returned), out, "step %d output = what the upstream returned", n)
	}

}

// runNodeAgent runs test/clients/CLIENT/agent.js against the upstream at upstreamURL, exporting
// OTLP/HTTP to c, and returns the trace id it prints.
func runNodeAgent(t *testing.T, node, modules, client, upstreamURL string, c *collectortest.Collector) string {
	t.Helper()
	cmd := exec.Command(node, filepath.Join(collectortest.RepoRoot(t), "test", "clients", client, "agent.js"))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "OPENAI_BASE_URL="+upstreamURL+"/v1",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://"+c.HTTP, "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "node agent: %s", stderr.String())
	trace := strings.TrimSpace(stdout.String())
	require.Len(t, trace, 32, "agent prints its trace id; stderr: %s", stderr.String())
	return trace
}

// spanKinds returns how many spans of the run have each genai_kind, and the spans (for messages).
func spanKinds(t *testing.T, c *collectortest.Collector, trace string) (map[string]int, []struct{ Name, GenAIKind string }) {
	t.Helper()
	var tree struct {
		Spans []struct {
			Name      string `json:"name"`
			GenAIKind string `json:"genai_kind"`
		} `json:"spans"`
	}
	require.NoError(t, json.Unmarshal([]byte(cli(t, c, "show", "--json", trace)), &tree))
	kinds := map[string]int{}
	var spans []struct{ Name, GenAIKind string }
	for _, s := range tree.Spans {
		kinds[s.GenAIKind]++
		spans = append(spans, struct{ Name, GenAIKind string }{s.Name, s.GenAIKind})
	}
	return kinds, spans
}

// assertRunTotals checks the only run's tokens and its cost at genai-prices' gpt-4o-mini rates
// ($0.15 per million input tokens, $0.60 output), every call priced once.
func assertRunTotals(t *testing.T, c *collectortest.Collector, in, out int64) {
	t.Helper()
	var rows []store.RunSummary
	require.NoError(t, json.Unmarshal([]byte(cli(t, c, "sessions", "--json")), &rows))
	require.Len(t, rows, 1)
	assert.Equal(t, in, rows[0].InputTokens)
	assert.Equal(t, out, rows[0].OutputTokens)
	assert.InDelta(t, (float64(in)*0.15+float64(out)*0.60)/1e6, rows[0].CostUSD, 1e-12)
	assert.Zero(t, rows[0].Unpriced)
}
