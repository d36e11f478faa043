package genai

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestSpanAgent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		span  string
		attrs map[string]any
		res   map[string]any
		want  string
	}{
		{"semconv attribute", "invoke_agent x", map[string]any{"gen_ai.agent.name": "triage"}, nil, "triage"},
		{"resource attribute", "step", nil, map[string]any{"gen_ai.agent.name": "billing"}, "billing"},
		{"semconv span name", "invoke_agent Weather Bot", map[string]any{"gen_ai.operation.name": "invoke_agent"}, nil, "Weather Bot"},
		{"create_agent span name", "create_agent planner", map[string]any{"gen_ai.operation.name": "create_agent"}, nil, "planner"},
		{"langfuse OpenAI Agents", "Hello world", map[string]any{"langfuse.observation.type": "AGENT"}, nil, "Hello world"},
		{"google ADK", "agent_run [hello_agent]", map[string]any{"langfuse.observation.type": "AGENT"}, nil, "hello_agent"},
		{"openinference agent", "Agent.run", map[string]any{"openinference.span.kind": "AGENT"}, nil, "Agent.run"},
		{"pydantic ai legacy", "agent run", map[string]any{"openinference.span.kind": "AGENT", "agent_name": "joke_agent"}, nil, "joke_agent"},
		{"traceloop agent", "researcher.agent", map[string]any{"traceloop.span.kind": "agent"}, nil, "researcher.agent"},
		{"chain is not an agent", "RunnableSequence", map[string]any{"openinference.span.kind": "CHAIN"}, nil, ""},
		{"llm call", "chat gpt-4o", map[string]any{"gen_ai.operation.name": "chat"}, nil, ""},
		{"langfuse generation", "OpenAI-generation", map[string]any{"langfuse.observation.type": "GENERATION"}, nil, ""},
		{"empty operation suffix", "invoke_agent ", map[string]any{"gen_ai.operation.name": "invoke_agent"}, nil, "invoke_agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ptrace.NewSpan()
			s.SetName(tc.span)
			assert.NoError(t, s.Attributes().FromRaw(tc.attrs))
			res := pcommon.NewMap()
			assert.NoError(t, res.FromRaw(tc.res))
			assert.Equal(t, tc.want, SpanAgent(s, res))
		})
	}
}
