// SPDX-License-Identifier: Apache-2.0

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
		child int // 0: a root span; 1: under an agent invocation; 2: under another span
	}{
		{"semconv attribute", "invoke_agent x", map[string]any{"gen_ai.agent.name": "triage"}, nil, "triage", 0},
		{"resource attribute", "step", nil, map[string]any{"gen_ai.agent.name": "billing"}, "billing", 0},
		{"semconv span name", "invoke_agent Weather Bot", map[string]any{"gen_ai.operation.name": "invoke_agent"}, nil, "Weather Bot", 0},
		{"create_agent span name", "create_agent planner", map[string]any{"gen_ai.operation.name": "create_agent"}, nil, "planner", 0},
		{"langfuse OpenAI Agents", "Hello world", map[string]any{"langfuse.observation.type": "AGENT"}, nil, "Hello world", 0},
		{"google ADK", "agent_run [hello_agent]", map[string]any{"langfuse.observation.type": "AGENT"}, nil, "hello_agent", 0},
		{"openinference agent", "Agent.run", map[string]any{"openinference.span.kind": "AGENT"}, nil, "Agent.run", 0},
		{"pydantic ai legacy", "agent run", map[string]any{"openinference.span.kind": "AGENT", "agent_name": "joke_agent"}, nil, "joke_agent", 0},
		{"traceloop agent", "researcher.agent", map[string]any{"traceloop.span.kind": "agent"}, nil, "researcher.agent", 0},
		{"chain is not an agent", "RunnableSequence", map[string]any{"openinference.span.kind": "CHAIN"}, nil, "", 0},
		{"llm call", "chat gpt-4o", map[string]any{"gen_ai.operation.name": "chat"}, nil, "", 0},
		{"langfuse generation", "OpenAI-generation", map[string]any{"langfuse.observation.type": "GENERATION"}, nil, "", 0},
		// the operation alone names no agent (before, a root "invoke_agent " was the agent "invoke_agent")
		{"empty operation suffix", "invoke_agent ", map[string]any{"gen_ai.operation.name": "invoke_agent"}, nil, "", 0},
		{"operation only, create_agent", "create_agent", map[string]any{"gen_ai.operation.name": "create_agent"}, nil, "", 0},
		{"empty operation suffix with the attribute", "invoke_agent ", map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "triage"}, nil, "triage", 0},
		{"empty operation suffix with a resource agent", "invoke_agent ", map[string]any{"gen_ai.operation.name": "invoke_agent"}, map[string]any{"gen_ai.agent.name": "billing"}, "billing", 0},
		{"any-agent bracketed name", "invoke_agent [any_agent]", map[string]any{"gen_ai.operation.name": "invoke_agent"}, nil, "any_agent", 2},
		{"operation glued to a word is a name", "invoke_agents", map[string]any{"gen_ai.operation.name": "invoke_agent"}, nil, "invoke_agents", 0},
		{"agent under an agent", "Hello world", map[string]any{"openinference.span.kind": "AGENT"}, nil, "Hello world", 1},
		{"beeai event under an iteration", "agent.react.update-13", map[string]any{"openinference.span.kind": "AGENT"}, nil, "", 2},
		{"attribute under any span", "step", map[string]any{"gen_ai.agent.name": "triage"}, nil, "triage", 2},
		{"google ADK under its invocation chain", "agent_run [hello_agent]", map[string]any{"openinference.span.kind": "AGENT"}, nil, "hello_agent", 2},
		{"semconv span name under any span", "invoke_agent planner", map[string]any{"gen_ai.operation.name": "invoke_agent"}, nil, "planner", 2},
		// the bracketed form names an agent only when the brackets hold one (trimmed as "invoke_agent X" is)
		{"google ADK blank name under a chain", "agent_run [ ]", map[string]any{"openinference.span.kind": "AGENT"}, nil, "", 2},
		{"google ADK padded name", "agent_run [ hello_agent ]", map[string]any{"openinference.span.kind": "AGENT"}, nil, "hello_agent", 2},
		// ADK names are Python identifiers: the first bracket closes the name (before, "a] [b")
		{"google ADK two brackets", "agent_run [a] [b]", map[string]any{"langfuse.observation.type": "AGENT"}, nil, "a", 0},
		{"google ADK blank root", "agent_run []", map[string]any{"langfuse.observation.type": "AGENT"}, nil, "", 0},
		{"google ADK unclosed is a name", "agent_run [a", map[string]any{"langfuse.observation.type": "AGENT"}, nil, "agent_run [a", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ptrace.NewSpan()
			s.SetName(tc.span)
			if tc.child > 0 {
				s.SetParentSpanID(pcommon.SpanID{1})
			}
			assert.NoError(t, s.Attributes().FromRaw(tc.attrs))
			res := pcommon.NewMap()
			assert.NoError(t, res.FromRaw(tc.res))
			asked := false
			assert.Equal(t, tc.want, SpanAgent(s, res, func() bool { asked = true; return tc.child == 1 }))
			if tc.child == 0 {
				assert.False(t, asked, "a root's parent is not looked for")
			}
		})
	}
}
