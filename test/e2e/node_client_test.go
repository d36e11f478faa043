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

// nodeModules returns the node_modules directory .ci/run installs the real-client packages into
// (test/clients/openai-node/package.json): RUNAGAIN_NODE_MODULES, else
// ~/.cache/runagain-node-clients/node_modules. The test is skipped when node or the packages are
// missing, and fails instead under RUNAGAIN_REQUIRE_NODE_CLIENTS=1 (set by .ci/run).
func nodeModules(t *testing.T) (node, modules string) {
	t.Helper()
	return nodePackages(t, "RUNAGAIN_NODE_MODULES", "runagain-node-clients", "openai", "@opentelemetry/instrumentation-openai", "@opentelemetry/sdk-node")
}

// nodePackages returns node and the node_modules directory named by env, else
// ~/.cache/CACHE/node_modules, holding pkgs; skipped when missing, failed under
// RUNAGAIN_REQUIRE_NODE_CLIENTS=1.
func nodePackages(t *testing.T, env, cache string, pkgs ...string) (node, modules string) {
	t.Helper()
	missing := func(format string, args ...any) {
		if os.Getenv("RUNAGAIN_REQUIRE_NODE_CLIENTS") != "" {
			t.Fatalf(format+" (RUNAGAIN_REQUIRE_NODE_CLIENTS is set; .ci/run installs them)", args...)
		}
		t.Skipf(format+" (.ci/run installs them)", args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node not on PATH")
	}
	modules = os.Getenv(env)
	if modules == "" {
		home, _ := os.UserHomeDir()
		modules = filepath.Join(home, ".cache", cache, "node_modules")
	}
	for _, pkg := range pkgs {
		if _, err := os.Stat(filepath.Join(modules, pkg, "package.json")); err != nil {
			missing("node package %s not installed in %s", pkg, modules)
		}
	}
	return node, modules
}

// scriptedOpenAI is a local OpenAI API on 127.0.0.1 that answers the agent's three calls in
// order: a tool call, a streamed answer (SSE with a usage chunk), a Responses API answer.
type scriptedOpenAI struct {
	mu       sync.Mutex
	requests []string // "METHOD PATH" of each request, in order
	bodies   []map[string]any
}

func (s *scriptedOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	s.mu.Lock()
	s.requests = append(s.requests, r.Method+" "+r.URL.Path)
	s.bodies = append(s.bodies, body)
	n := len(s.requests)
	s.mu.Unlock()
	switch {
	case r.URL.Path == "/v1/chat/completions" && n == 1:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1764500000,"model":"gpt-4o-mini-2024-07-18",
"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Paris\"}"}}]}}],
"usage":{"prompt_tokens":52,"completion_tokens":17,"total_tokens":69}}`)
	case r.URL.Path == "/v1/chat/completions" && n == 2:
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish, usage string) {
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-2\",\"object\":\"chat.completion.chunk\",\"created\":1764500001,\"model\":\"gpt-4o-mini-2024-07-18\",\"choices\":[%s]%s}\n\n", delta+finish, usage)
		}
		chunk(`{"index":0,"delta":{"role":"assistant","content":"It is rainy "}`, `,"finish_reason":null}`, "")
		chunk(`{"index":0,"delta":{"content":"in Paris, 57°F."}`, `,"finish_reason":"stop"}`, "")
		fmt.Fprint(w, "data: {\"id\":\"chatcmpl-2\",\"object\":\"chat.completion.chunk\",\"created\":1764500001,\"model\":\"gpt-4o-mini-2024-07-18\",\"choices\":[],\"usage\":{\"prompt_tokens\":97,\"completion_tokens\":12,\"total_tokens\":109}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	case r.URL.Path == "/v1/responses":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"resp_1","object":"response","created_at":1764500002,"status":"completed","model":"gpt-4o-mini-2024-07-18",
"output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Rainy.","annotations":[]}]}],
"usage":{"input_tokens":30,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":32}}`)
	default:
		http.Error(w, "unexpected request "+r.Method+" "+r.URL.Path, http.StatusTeapot)
	}
}

// TestRealOpenAINodeClient runs a small agent built on the official openai npm client (6.x),
// traced by @opentelemetry/instrumentation-openai with message content capture on and exporting
// OTLP/HTTP to the real collector, against a scripted upstream on 127.0.0.1. Its run must read
// back whole: every step's exact input and output messages (from the log records the
// instrumentation sends), token counts, and no Go map text anywhere.
func TestRealOpenAINodeClient(t *testing.T) {
	node, modules := nodeModules(t)
	upstream := &scriptedOpenAI{}
	srv := httptest.NewServer(upstream)
	defer srv.Close()
	c := collectortest.Start(t, collectortest.Options{})

	cmd := exec.Command(node, filepath.Join(collectortest.RepoRoot(t), "test", "clients", "openai-node", "agent.js"))
	cmd.Env = append(os.Environ(),
		"NODE_PATH="+modules,
		"OPENAI_BASE_URL="+srv.URL+"/v1",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://"+c.HTTP,
		"OTEL_METRICS_EXPORTER=none",
		"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true",
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "node agent: %s", stderr.String())
	trace := strings.TrimSpace(stdout.String())
	require.Len(t, trace, 32, "agent prints its trace id; stderr: %s", stderr.String())
	assert.Equal(t, []string{"POST /v1/chat/completions", "POST /v1/chat/completions", "POST /v1/responses"}, upstream.requests)

	// 5 spans (agent, 2 chats, tool, responses); records: call 1 sends 2 prompt + 1 choice, call 2
	// 4 prompt + 1 choice, the Responses call 1 input + 1 output record.
	waitShow(t, c, trace, 5, 10)

	step1 := cli(t, c, "show", trace, "--step", "1")
	assert.Contains(t, step1, `step 1 of 3: chat gpt-4o-mini (span `)
	assert.Contains(t, step1, `model gpt-4o-mini-2024-07-18)

=== input: 2 messages, reconstructed from log records (gen_ai.* events)

--- system
You are a weather bot.

--- user
Weather in Paris?

=== output: 1 message, reconstructed from log records (gen_ai.* events)

--- assistant (finish_reason tool_calls)
[tool_call get_weather id=call_1]
{"location":"Paris"}
`)

	step2 := cli(t, c, "show", trace, "--step", "2")
	assert.Contains(t, step2, `
=== input: 4 messages, reconstructed from log records (gen_ai.* events)

--- system
You are a weather bot.

--- user
Weather in Paris?

--- assistant
[tool_call get_weather id=call_1]
{"location":"Paris"}

--- tool
[tool_call_response id=call_1]
rainy, 57°F

=== output: 1 message, reconstructed from log records (gen_ai.* events)

--- assistant (finish_reason stop)
It is rainy in Paris, 57°F.
`)

	step3 := cli(t, c, "show", trace, "--step", "3")
	assert.Contains(t, step3, `
=== system instructions
Answer in one word.

=== input: 2 messages, reconstructed from log records (gen_ai.* events)

--- system
Answer in one word.

--- user
Summarise: It is rainy in Paris, 57°F.

=== output: 1 message, reconstructed from log records (gen_ai.* events)

--- assistant (finish_reason stop)
Rainy.
`)

	show := cli(t, c, "show", trace)
	for _, out := range []string{show, step1, step2, step3, cli(t, c, "show", "--json", trace), cli(t, c, "sessions")} {
		assert.NotContains(t, out, "map[")
	}
	assert.Contains(t, show, "tokens in 97 out 12", "usage of the streamed call (stream_options.include_usage)")

	var rows []store.RunSummary
	require.NoError(t, json.Unmarshal([]byte(cli(t, c, "sessions", "--json")), &rows))
	require.Len(t, rows, 1)
	assert.Equal(t, int64(52+97+30), rows[0].InputTokens)
	assert.Equal(t, int64(17+12+2), rows[0].OutputTokens)
	// Cost by hand from the genai-prices table: gpt-4o-mini $0.15 per million input tokens, $0.60
	// per million output tokens.
	assert.InDelta(t, (float64(52+97+30)*0.15+float64(17+12+2)*0.60)/1e6, rows[0].CostUSD, 1e-12)
	assert.Zero(t, rows[0].Unpriced)
}
