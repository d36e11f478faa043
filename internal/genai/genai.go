// SPDX-License-Identifier: Apache-2.0

// Package genai is runagain's model of the OpenTelemetry GenAI semantic conventions
// (https://opentelemetry.io/docs/specs/semconv/gen-ai/, v1.37+) and the older dialects agents
// still emit (OpenLLMetry gen_ai.prompt.N.*, OpenInference llm.*, Vercel AI SDK ai.*).
//
// It answers the questions every runagain part asks of a span: which session and run it belongs
// to, whether it is an LLM call, a tool call or an agent step, which model, and how many tokens.
// Functions read pcommon.Map values and never modify them.
package genai

import (
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// Attribute keys from the GenAI semantic conventions: from go.opentelemetry.io/otel/semconv
// (v1.41.0) where it defines them; the deprecated and other-dialect names it does not define are
// written out.
const (
	AttrOperationName       = string(semconv.GenAIOperationNameKey)
	AttrProviderName        = string(semconv.GenAIProviderNameKey)
	AttrSystem              = "gen_ai.system" // deprecated in favour of gen_ai.provider.name
	AttrRequestModel        = string(semconv.GenAIRequestModelKey)
	AttrResponseModel       = string(semconv.GenAIResponseModelKey)
	AttrAgentName           = string(semconv.GenAIAgentNameKey)
	AttrConversationID      = string(semconv.GenAIConversationIDKey)
	AttrToolName            = string(semconv.GenAIToolNameKey)
	AttrToolCallArguments   = string(semconv.GenAIToolCallArgumentsKey)
	AttrToolCallResult      = string(semconv.GenAIToolCallResultKey)
	AttrInputMessages       = string(semconv.GenAIInputMessagesKey)
	AttrOutputMessages      = string(semconv.GenAIOutputMessagesKey)
	AttrSystemInstructions  = string(semconv.GenAISystemInstructionsKey)
	AttrToolDefinitions     = string(semconv.GenAIToolDefinitionsKey)
	AttrFinishReasons       = string(semconv.GenAIResponseFinishReasonsKey)
	AttrUsageInputTokens    = string(semconv.GenAIUsageInputTokensKey)
	AttrUsageOutputTokens   = string(semconv.GenAIUsageOutputTokensKey)
	AttrUsageCacheRead      = string(semconv.GenAIUsageCacheReadInputTokensKey)
	AttrUsageCacheWrite     = "gen_ai.usage.cache_write.input_tokens"               // semantic-conventions-genai v0.1.0
	AttrUsageCacheCreation  = string(semconv.GenAIUsageCacheCreationInputTokensKey) // core semconv <= v1.41, renamed cache_write
	AttrUsageReasoning      = string(semconv.GenAIUsageReasoningOutputTokensKey)
	AttrSessionID           = string(semconv.SessionIDKey)
	AttrServiceName         = string(semconv.ServiceNameKey)
	AttrOpenInferenceKind   = "openinference.span.kind"
	AttrOpenInferenceModel  = "llm.model_name"
	AttrOpenInferencePrompt = "llm.token_count.prompt"
	AttrOpenInferenceCompl  = "llm.token_count.completion"
	AttrLegacyPromptTokens  = "gen_ai.usage.prompt_tokens"
	AttrLegacyComplTokens   = "gen_ai.usage.completion_tokens"
)

// DefaultSessionKeys is the default ordered list of attributes that name a session
// (docs/architecture.md "Run and session"): the first one present wins.
var DefaultSessionKeys = []string{AttrConversationID, AttrSessionID}

// SessionID returns the first of keys present (as a non-empty string) on the span attributes,
// then on the resource attributes; ok is false when none is present, in which case the run
// is its own session and callers use the trace id.
func SessionID(spanAttrs, resourceAttrs pcommon.Map, keys []string) (id string, ok bool) {
	for _, m := range []pcommon.Map{spanAttrs, resourceAttrs} {
		for _, k := range keys {
			if v, found := m.Get(k); found {
				if s := v.AsString(); s != "" {
					return s, true
				}
			}
		}
	}
	return "", false
}

// Kind is what a span is to an agent run.
type Kind string

// Span kinds, derived from gen_ai.operation.name (semconv), openinference.span.kind, or the
// presence of model and tool attributes.
const (
	KindLLM   Kind = "llm"
	KindTool  Kind = "tool"
	KindAgent Kind = "agent"
	KindOther Kind = "other"
)

// AttrVercelOperationID names a Vercel AI SDK span's operation: "ai.generateText" (the call
// the application made, over one "ai.generateText.doGenerate" per model call), "ai.streamText",
// "ai.generateObject", "ai.streamObject", "ai.embed", "ai.embedMany", and their ".do*" children.
const AttrVercelOperationID = "ai.operationId"

// Classify tells whether the span is an LLM call, a tool execution, an agent step, an agent
// handoff or a guardrail (agentkinds.go), or other.
//
// A Vercel AI SDK outer span (ai.operationId "ai.generateText" and the like, without ".do") is
// an agent step however it is labelled: it reports the sum of the model calls under it
// (ai.generateText.doGenerate), which are the LLM calls.
func Classify(attrs pcommon.Map) Kind {
	if k := agentKind(attrs); k != "" {
		return k
	}
	if v, ok := attrs.Get(AttrVercelOperationID); ok {
		op := v.AsString()
		switch {
		case strings.HasPrefix(op, "ai.") && strings.Contains(op, ".do"):
			return KindLLM // ai.generateText.doGenerate, ai.streamText.doStream, ai.embed.doEmbed
		case op == "ai.toolCall":
			return KindTool
		case strings.HasPrefix(op, "ai."):
			return KindAgent
		}
	}
	if v, ok := attrs.Get(AttrOperationName); ok {
		switch v.AsString() {
		case "chat", "text_completion", "generate_content", "embeddings", "call_llm", "completion", "responses":
			return KindLLM
		case "execute_tool":
			return KindTool
		case "invoke_agent", "create_agent", "invoke_workflow":
			return KindAgent
		}
	}
	if v, ok := attrs.Get(AttrOpenInferenceKind); ok {
		switch v.AsString() {
		case "LLM", "EMBEDDING":
			return KindLLM
		case "TOOL":
			return KindTool
		case "AGENT", "CHAIN":
			return KindAgent
		}
	}
	if v, ok := attrs.Get(AttrTraceloopSpanKind); ok { // OpenLLMetry (Traceloop) span kinds
		switch v.AsString() {
		case "agent", "workflow":
			return KindAgent
		case "tool":
			return KindTool
		}
	}
	if _, ok := attrs.Get(AttrToolName); ok {
		return KindTool
	}
	if Model(attrs) != "" {
		return KindLLM
	}
	if namedInvocation(attrs) {
		return KindAgent
	}
	return KindOther
}

// RunUsage is the usage a span of kind k adds to its run's totals, in tokens: TokenUsage for an
// LLM call (KindLLM), none for any other kind. A run's tokens and cost are the sum of its LLM
// calls, each counted once: a span that is not itself a model call and records usage (an agent
// invocation such as Pydantic AI's "<agent> run" spans, semconv's gen_ai.usage.* on
// invoke_agent; a framework's "orchestrate tools" or workflow span; the Vercel AI SDK's outer
// ai.generateText) reports the sum of the calls under it, which are counted on the calls
// themselves. agent_guard counts usage on LLM calls only, for the same reason.
func RunUsage(k Kind, attrs pcommon.Map) Usage {
	if k != KindLLM {
		return Usage{}
	}
	return TokenUsage(attrs)
}

// Model returns the response model if recorded, else the request model, else the
// OpenInference model name; "" if none.
func Model(attrs pcommon.Map) string {
	for _, k := range []string{AttrResponseModel, AttrRequestModel, AttrOpenInferenceModel} {
		if v, ok := attrs.Get(k); ok && v.AsString() != "" {
			return v.AsString()
		}
	}
	return ""
}

// Provider returns gen_ai.provider.name, falling back to the deprecated gen_ai.system and
// OpenInference llm.provider / llm.system; "" if none.
func Provider(attrs pcommon.Map) string {
	for _, k := range []string{AttrProviderName, AttrSystem, "llm.provider", "llm.system"} {
		if v, ok := attrs.Get(k); ok && v.AsString() != "" {
			return v.AsString()
		}
	}
	return ""
}

// Usage is the token usage recorded on one LLM span, in tokens. Zero means not recorded.
type Usage struct {
	Input, Output, CacheRead, CacheWrite, Reasoning int64
}

// Total is input plus output tokens.
func (u Usage) Total() int64 { return u.Input + u.Output }

// Usage spellings TokenUsage reads after the semconv ones, per field, first present wins.
var (
	inputKeys = []string{AttrUsageInputTokens, AttrLegacyPromptTokens, AttrOpenInferencePrompt,
		"ai.usage.inputTokens", "ai.usage.promptTokens"} // Vercel AI SDK v5+, v4
	outputKeys = []string{AttrUsageOutputTokens, AttrLegacyComplTokens, AttrOpenInferenceCompl,
		"ai.usage.outputTokens", "ai.usage.completionTokens"}
	cacheReadKeys = []string{AttrUsageCacheRead, "llm.token_count.prompt_details.cache_read",
		"gen_ai.usage.cache_read_input_tokens", "cache_read_input_tokens", // OpenLLMetry, Anthropic's flat usage fields
		"ai.usage.cachedInputTokens"} // Vercel AI SDK v5+ (a part of ai.usage.inputTokens)
	cacheWriteKeys = []string{AttrUsageCacheWrite, AttrUsageCacheCreation, "llm.token_count.prompt_details.cache_write",
		"gen_ai.usage.cache_creation_input_tokens", "cache_creation_input_tokens"}
	reasoningKeys = []string{AttrUsageReasoning, "llm.token_count.completion_details.reasoning", "ai.usage.reasoningTokens"}
)

// UsageKeys returns every attribute TokenUsage reads, in the order it tries them (input, output,
// cache read, cache write, reasoning). Writers that keep a span's usage while dropping other
// attributes (the warm tier's summaries, trimmed spans) keep these keys, so a span reads the same
// usage afterwards.
func UsageKeys() []string {
	return slices.Concat(inputKeys, outputKeys, cacheReadKeys, cacheWriteKeys, reasoningKeys)
}

// TokenUsage reads the usage attributes: semconv gen_ai.usage.* (cache writes under
// semantic-conventions-genai's cache_write.input_tokens or core semconv's earlier
// cache_creation.input_tokens), falling back to the deprecated gen_ai.usage.prompt_tokens /
// completion_tokens, OpenInference llm.token_count.*, the Vercel AI SDK's ai.usage.* (v4
// promptTokens/completionTokens; v5+ inputTokens, outputTokens, cachedInputTokens,
// reasoningTokens) and Anthropic's flat cache_read_input_tokens / cache_creation_input_tokens
// (bare or under gen_ai.usage.). Counts recorded as decimal strings ("55") are read as numbers.
func TokenUsage(attrs pcommon.Map) Usage {
	return Usage{
		Input:      firstInt(attrs, inputKeys...),
		Output:     firstInt(attrs, outputKeys...),
		CacheRead:  firstInt(attrs, cacheReadKeys...),
		CacheWrite: firstInt(attrs, cacheWriteKeys...),
		Reasoning:  firstInt(attrs, reasoningKeys...),
	}
}

// MaxTokens bounds a token count read from one span. The largest context windows offered are
// around 10^7 tokens (2025); a count above 10^10 (or below zero) is malformed input and is read
// as absent, so one bad span cannot overflow sums or costs downstream (it stays recorded as is).
const MaxTokens = 10_000_000_000

func firstInt(attrs pcommon.Map, keys ...string) int64 {
	for _, k := range keys {
		v, ok := attrs.Get(k)
		if !ok {
			continue
		}
		var n int64
		switch v.Type() {
		case pcommon.ValueTypeInt:
			n = v.Int()
		case pcommon.ValueTypeDouble:
			f := v.Double()
			if !(f >= 0 && f <= MaxTokens) { // also rejects NaN
				continue
			}
			n = int64(f)
		case pcommon.ValueTypeStr:
			// Some exporters (Langfuse, Pydantic AI via logfire) stringify counts: "55".
			p, err := strconv.ParseInt(strings.TrimSpace(v.Str()), 10, 64)
			if err != nil {
				continue
			}
			n = p
		default:
			continue
		}
		if n < 0 || n > MaxTokens {
			continue
		}
		return n
	}
	return 0
}
