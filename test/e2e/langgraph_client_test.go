// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// langGraphResponses are the scripted upstream's answers to the LangGraph agent: a get_weather
// tool call, then the answer.
var langGraphResponses = []string{
	`{"id":"chatcmpl-1","object":"chat.completion","created":1764500000,"model":"gpt-4o-mini-2024-07-18",
"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Paris\"}"}}]}}],
"usage":{"prompt_tokens":61,"completion_tokens":15,"total_tokens":76}}`,
	`{"id":"chatcmpl-2","object":"chat.completion","created":1764500001,"model":"gpt-4o-mini-2024-07-18",
"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"It is rainy in Paris, 57°F."}}],
"usage":{"prompt_tokens":1300,"completion_tokens":11,"total_tokens":1311}}`,
}

// TestRealLangGraphClient runs a weather agent on LangGraph JS (@langchain/langgraph 1.7, a
// StateGraph with a ChatOpenAI node, a ToolNode and toolsCondition) traced by OpenInference's
// LangChain instrumentation, exporting OTLP/HTTP to the real collector, against a scripted local
// upstream (test/clients/langgraph). The run has 2 LLM calls (the ChatOpenAI spans, kind LLM;
// the graph and node spans are CHAIN) and 1 tool call; its tokens are the two calls'
// (llm.token_count.*), each priced once; and `show --step N` holds exactly the messages the
// upstream logged receiving and returning (tool results without the tool_call_id the
// instrumentation does not record).
func TestRealLangGraphClient(t *testing.T) {
	node, modules := npmClientModules(t, "RUNAGAIN_LANGGRAPH_MODULES", "runagain-langgraph",
		"@langchain/langgraph", "@langchain/openai", "@arizeai/openinference-instrumentation-langchain")
	upstream := &loggingOpenAI{responses: langGraphResponses}
	srv := httptest.NewServer(upstream)
	defer srv.Close()
	c := collectortest.Start(t, collectortest.Options{})

	trace := runNodeAgent(t, node, modules, "langgraph", srv.URL, c)
	require.Len(t, upstream.received, 2)

	// root, LangGraph, __start__, 2 agent nodes (each a ChatOpenAI and a toolsCondition RunnableLambda),
	// the tools node and its get_weather.
	waitShow(t, c, trace, 11, 0)
	kinds, spans := spanKinds(t, c, trace)
	assert.Equal(t, 2, kinds["llm"], "LLM calls: the ChatOpenAI spans only (%+v)", spans)
	assert.Equal(t, 1, kinds["tool"], "tool calls (%+v)", spans)

	// The instrumentation (4.1.1) records no tool_call_id on tool messages, nor ids on tool calls:
	// tool results are compared by text.
	assertStepsAreUpstreamLog(t, c, trace, upstream, false)

	assertRunTotals(t, c, 61+1300, 15+11)
}
