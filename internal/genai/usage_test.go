// SPDX-License-Identifier: Apache-2.0

package genai

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func attrsOf(t *testing.T, raw map[string]any) pcommon.Map {
	t.Helper()
	m := pcommon.NewMap()
	require.NoError(t, m.FromRaw(raw))
	return m
}

// TestRunTotalsAreTheLeafCalls: a run's usage is the sum of its LLM calls, each once. The spans
// that report their children's sum (an agent invocation, an "orchestrate tools" span, the Vercel
// AI SDK's outer ai.generateText over its ai.generateText.doGenerate calls) add nothing.
func TestRunTotalsAreTheLeafCalls(t *testing.T) {
	run := []map[string]any{
		// Agent invocation carrying the sum of the two calls below it.
		{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner",
			"gen_ai.usage.input_tokens": 300, "gen_ai.usage.output_tokens": 30},
		// A framework's tool orchestration span with the same sum and no model: not a call.
		{"gen_ai.usage.input_tokens": 300, "gen_ai.usage.output_tokens": 30},
		{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
			"gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 10},
		{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
			"gen_ai.usage.input_tokens": 200, "gen_ai.usage.output_tokens": 20},
		// Vercel AI SDK v5: the outer span's sum, and its one doGenerate call.
		{"ai.operationId": "ai.generateText", "ai.model.id": "gpt-4o-mini", "gen_ai.request.model": "gpt-4o-mini",
			"ai.usage.inputTokens": 50, "ai.usage.outputTokens": 5, "ai.usage.cachedInputTokens": 40},
		{"ai.operationId": "ai.generateText.doGenerate", "ai.model.id": "gpt-4o-mini", "gen_ai.request.model": "gpt-4o-mini",
			"gen_ai.usage.input_tokens": 50, "gen_ai.usage.output_tokens": 5,
			"ai.usage.inputTokens": 50, "ai.usage.outputTokens": 5, "ai.usage.cachedInputTokens": 40},
	}
	var total Usage
	calls := 0
	for _, raw := range run {
		a := attrsOf(t, raw)
		k := Classify(a)
		if k == KindLLM {
			calls++
		}
		u := RunUsage(k, a)
		total.Input += u.Input
		total.Output += u.Output
		total.CacheRead += u.CacheRead
	}
	assert.Equal(t, 3, calls, "LLM calls: the two chat spans and the doGenerate")
	assert.Equal(t, Usage{Input: 350, Output: 35, CacheRead: 40}, total)
	assert.Equal(t, KindAgent, Classify(attrsOf(t, run[4])), "Vercel outer ai.generateText")
	assert.Equal(t, KindLLM, Classify(attrsOf(t, map[string]any{"ai.operationId": "ai.streamText.doStream"})))
	assert.Equal(t, KindTool, Classify(attrsOf(t, map[string]any{"ai.operationId": "ai.toolCall"})))
}

// TestTokenUsageSpellings: every usage spelling clients emit is read into the same fields.
func TestTokenUsageSpellings(t *testing.T) {
	for _, c := range []struct {
		name string
		raw  map[string]any
		want Usage
	}{
		{"semconv-genai cache_write", map[string]any{"gen_ai.usage.input_tokens": 10, "gen_ai.usage.cache_write.input_tokens": 7}, Usage{Input: 10, CacheWrite: 7}},
		{"core semconv cache_creation", map[string]any{"gen_ai.usage.input_tokens": 10, "gen_ai.usage.cache_creation.input_tokens": 7}, Usage{Input: 10, CacheWrite: 7}},
		{"new name wins over old", map[string]any{"gen_ai.usage.cache_write.input_tokens": 7, "gen_ai.usage.cache_creation.input_tokens": 9}, Usage{CacheWrite: 7}},
		{"Anthropic flat", map[string]any{"gen_ai.usage.input_tokens": 3, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}, Usage{Input: 3, CacheRead: 100, CacheWrite: 20}},
		{"OpenLLMetry Anthropic", map[string]any{"gen_ai.usage.input_tokens": 3, "gen_ai.usage.cache_read_input_tokens": "100", "gen_ai.usage.cache_creation_input_tokens": 20}, Usage{Input: 3, CacheRead: 100, CacheWrite: 20}},
		{"Vercel v5", map[string]any{"ai.usage.inputTokens": 50, "ai.usage.outputTokens": 5, "ai.usage.cachedInputTokens": 40, "ai.usage.reasoningTokens": 2}, Usage{Input: 50, Output: 5, CacheRead: 40, Reasoning: 2}},
		{"Vercel v4", map[string]any{"ai.usage.promptTokens": 14, "ai.usage.completionTokens": 20}, Usage{Input: 14, Output: 20}},
		{"OpenInference", map[string]any{"llm.token_count.prompt": 9, "llm.token_count.completion": 1, "llm.token_count.prompt_details.cache_read": 4}, Usage{Input: 9, Output: 1, CacheRead: 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, TokenUsage(attrsOf(t, c.raw)))
		})
	}
}
