// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// openAIAgentsClient returns Node 22 (openai 7, which @openai/agents 0.20 needs, requires it) and
// the node_modules .ci/run installs test/clients/openai-agents into; skipped when either is
// missing, failed instead under RUNAGAIN_REQUIRE_NODE_CLIENTS=1 (.ci/run).
// openAIAgentsSpans is how many spans the agent exports: its root, the SDK trace, the task, 3
// turns, 2 agents, the guardrail, 3 generations, the handoff and the function.
const openAIAgentsSpans = 14

func openAIAgentsClient(t *testing.T) (node, modules string) {
	t.Helper()
	_, modules = nodePackages(t, "RUNAGAIN_OPENAI_AGENTS_MODULES", "runagain-openai-agents",
		"@openai/agents", "openai", "@opentelemetry/sdk-node", "@opentelemetry/exporter-trace-otlp-proto")
	node = node22()
	if node == "" {
		if os.Getenv("RUNAGAIN_REQUIRE_NODE_CLIENTS") != "" {
			t.Fatal("Node 22 not installed in RUNAGAIN_NODE22_DIR (.ci/run installs it)")
		}
		t.Skip("Node 22 not installed in RUNAGAIN_NODE22_DIR (.ci/run installs it)")
	}
	return node, modules
}

// openAIAgentsUpstream scripts the three chat completions of the support agent: the triage agent
// hands off (transfer_to_weather_agent), the weather agent calls get_weather, then answers.
func openAIAgentsUpstream() *loggingOpenAI {
	return &loggingOpenAI{responses: []string{
		`{"id":"chatcmpl-1","object":"chat.completion","created":1764500000,"model":"gpt-4o-mini-2024-07-18",
"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
"tool_calls":[{"id":"call_h1","type":"function","function":{"name":"transfer_to_weather_agent","arguments":"{}"}}]}}],
"usage":{"prompt_tokens":70,"completion_tokens":13,"total_tokens":83}}`,
		`{"id":"chatcmpl-2","object":"chat.completion","created":1764500001,"model":"gpt-4o-mini-2024-07-18",
"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
"tool_calls":[{"id":"call_w1","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Paris\"}"}}]}}],
"usage":{"prompt_tokens":120,"completion_tokens":17,"total_tokens":137}}`,
		`{"id":"chatcmpl-3","object":"chat.completion","created":1764500002,"model":"gpt-4o-mini-2024-07-18",
"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"It is rainy in Paris, 57°F."}}],
"usage":{"prompt_tokens":1500,"completion_tokens":12,"total_tokens":1512}}`,
	}}
}

// assertOpenAIAgentsRun checks the support agent's run: 3 LLM calls (the generation spans, plus
// the proxy's exchanges of the same calls when recorded through it; the task, turn and agent
// spans, which carry the SDK's sums of their calls' usage, are not more), 1 tool call, the
// handoff to the weather agent and the input guardrail that passed; 3 steps, each holding exactly
// the messages the upstream logged receiving and returning; the run's tokens and cost are the
// three calls', each priced once.
func assertOpenAIAgentsRun(t *testing.T, c *collectortest.Collector, trace string, upstream *loggingOpenAI, exchanges int) {
	t.Helper()
	kinds, spans := spanKinds(t, c, trace)
	assert.Equal(t, 3+exchanges, kinds["llm"], "LLM spans: the generation spans and %d exchanges (%+v)", exchanges, spans)
	assert.Equal(t, 1, kinds["tool"], "tool calls (%+v)", spans)
	assert.Equal(t, 1, kinds["handoff"], "handoffs (%+v)", spans)
	assert.Equal(t, 1, kinds["guardrail"], "guardrails (%+v)", spans)

	show := cli(t, c, "show", trace)
	assert.Contains(t, show, "triage_agent → weather_agent")
	assert.Contains(t, show, "no_secrets")

	assertStepsAreUpstreamLog(t, c, trace, upstream, true)
	assertRunTotals(t, c, 70+120+1500, 13+17+12)
}

// TestRealOpenAIAgentsClient runs a support agent on the OpenAI Agents SDK for JS
// (@openai/agents 0.20 from npm: a triage agent with an input guardrail handing off to a weather
// agent with a function tool, on OpenAIChatCompletionsModel), its traces turned into
// OpenTelemetry GenAI spans by a TracingProcessor and exported over OTLP/HTTP to the real
// collector, against a scripted local upstream (test/clients/openai-agents).
func TestRealOpenAIAgentsClient(t *testing.T) {
	node, modules := openAIAgentsClient(t)
	upstream := openAIAgentsUpstream()
	srv := httptest.NewServer(upstream)
	defer srv.Close()
	c := collectortest.Start(t, collectortest.Options{})

	trace := runNodeAgent(t, node, modules, "openai-agents", srv.URL, c)
	require.Len(t, upstream.received, 3)

	// support request, the SDK trace, task, 2 turns... (at least the 3 chats, 1 tool, handoff, guardrail)
	waitShow(t, c, trace, openAIAgentsSpans, 0)
	assertOpenAIAgentsRun(t, c, trace, upstream, 0)
}

// TestRealOpenAIAgentsClientUnderProxyRecord runs the same agent under `runagain proxy --record`:
// the proxy records the three chat completions as exchanges in the agent's own run (it joins the
// proxy's trace through TRACEPARENT), and each exchange is the generation span's call, not
// another: still 3 LLM calls, the same steps, tokens and cost counted once.
func TestRealOpenAIAgentsClientUnderProxyRecord(t *testing.T) {
	node, modules := openAIAgentsClient(t)
	upstream := openAIAgentsUpstream()
	srv := httptest.NewServer(upstream)
	defer srv.Close()
	c := collectortest.Start(t, collectortest.Options{})

	env := []string{"NODE_PATH=" + modules, "OTEL_EXPORTER_OTLP_ENDPOINT=http://" + c.HTTP, "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none"}
	out, errOut, err := cliEnv(t, c, env, "proxy", "--record", "--endpoint", c.GRPC, "--listen", "127.0.0.1:0",
		"--route", "openai="+srv.URL, "--", node, filepath.Join(collectortest.RepoRoot(t), "test", "clients", "openai-agents", "agent.js"))
	require.NoError(t, err, "%s\n%s", out, errOut)
	m := proxyTraceRE.FindStringSubmatch(errOut)
	require.NotNil(t, m, errOut)
	trace := m[1]
	assert.Equal(t, trace, strings.TrimSpace(out), "the agent's spans join the proxy's run (TRACEPARENT)")
	require.Len(t, upstream.received, 3)

	// The agent's spans, the proxy's root span and its 3 exchanges.
	waitShow(t, c, trace, openAIAgentsSpans+4, 0)
	var tree struct {
		Spans []struct {
			Attributes map[string]any `json:"attributes"`
		} `json:"spans"`
	}
	require.NoError(t, json.Unmarshal([]byte(cli(t, c, "show", "--json", trace)), &tree))
	exchanges := 0
	for _, s := range tree.Spans {
		if _, ok := s.Attributes["runagain.fixture.source"]; ok {
			exchanges++
		}
	}
	assert.Equal(t, 3, exchanges, "the proxy recorded the 3 chat completions in the run")
	assertOpenAIAgentsRun(t, c, trace, upstream, exchanges)
}
