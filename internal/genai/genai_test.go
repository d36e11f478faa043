// SPDX-License-Identifier: Apache-2.0

package genai

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestTokenUsageDialects(t *testing.T) {
	semconv := pcommon.NewMap()
	semconv.PutInt(AttrUsageInputTokens, 55)
	semconv.PutDouble(AttrUsageOutputTokens, 15)
	semconv.PutInt(AttrUsageCacheRead, 7)
	assert.Equal(t, Usage{Input: 55, Output: 15, CacheRead: 7}, TokenUsage(semconv))

	openinference := pcommon.NewMap() // as Langfuse exports it: stringified counts
	openinference.PutStr(AttrOpenInferencePrompt, "55")
	openinference.PutStr(AttrOpenInferenceCompl, " 15 ")
	openinference.PutStr("llm.token_count.completion_details.reasoning", "not a number")
	assert.Equal(t, Usage{Input: 55, Output: 15}, TokenUsage(openinference))
	assert.EqualValues(t, 70, TokenUsage(openinference).Total())
}

func TestClassifyAndModel(t *testing.T) {
	m := pcommon.NewMap()
	m.PutStr(AttrOperationName, "execute_tool")
	assert.Equal(t, KindTool, Classify(m))
	m = pcommon.NewMap()
	m.PutStr(AttrOpenInferenceKind, "LLM")
	m.PutStr(AttrOpenInferenceModel, "gpt-4.1")
	assert.Equal(t, KindLLM, Classify(m))
	assert.Equal(t, "gpt-4.1", Model(m))
	m.PutStr(AttrResponseModel, "gpt-4.1-2025-04-14")
	assert.Equal(t, "gpt-4.1-2025-04-14", Model(m))
	assert.Equal(t, KindOther, Classify(pcommon.NewMap()))
}

func TestSessionIDSpanBeforeResource(t *testing.T) {
	span, res := pcommon.NewMap(), pcommon.NewMap()
	_, ok := SessionID(span, res, DefaultSessionKeys)
	assert.False(t, ok)
	res.PutStr(AttrSessionID, "res-session")
	id, _ := SessionID(span, res, DefaultSessionKeys)
	assert.Equal(t, "res-session", id)
	span.PutStr(AttrConversationID, "conv-1")
	id, _ = SessionID(span, res, DefaultSessionKeys)
	assert.Equal(t, "conv-1", id)
}

func TestTokenUsageRejectsAbsurdCounts(t *testing.T) {
	m := pcommon.NewMap()
	m.PutInt(AttrUsageInputTokens, 5_000_000_000_000_000_000)
	m.PutInt(AttrLegacyPromptTokens, 40) // the next dialect still counts
	m.PutInt(AttrUsageOutputTokens, -3)
	m.PutDouble(AttrUsageCacheRead, 1e300)
	m.PutStr(AttrUsageReasoning, "99999999999999999999")
	assert.Equal(t, Usage{Input: 40}, TokenUsage(m))
}

func TestAgentInvocationByNameAddsNoRunUsage(t *testing.T) {
	for _, key := range []string{AttrAgentName, "agent_name"} { // Pydantic AI's "<agent> run" spans
		m := pcommon.NewMap()
		m.PutStr(key, "joke_agent")
		m.PutInt(AttrUsageInputTokens, 682)
		m.PutInt(AttrUsageOutputTokens, 126)
		assert.Equal(t, KindAgent, Classify(m), key)
		assert.True(t, IsAgentInvocation(m), key)
		assert.Equal(t, Usage{}, RunUsage(Classify(m), m), "an invocation's usage is its calls'")
		assert.Equal(t, Usage{Input: 682, Output: 126}, TokenUsage(m), "still shown on the span")
	}
	llm := pcommon.NewMap()
	llm.PutStr(AttrOperationName, "chat")
	llm.PutStr(AttrAgentName, "joke_agent") // a call made by the agent stays a call
	llm.PutInt(AttrUsageInputTokens, 265)
	assert.Equal(t, KindLLM, Classify(llm))
	assert.False(t, IsAgentInvocation(llm))
	assert.Equal(t, Usage{Input: 265}, RunUsage(Classify(llm), llm))
}
