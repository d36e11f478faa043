// SPDX-License-Identifier: Apache-2.0

package genai

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Attributes that mark a span as an agent invocation when gen_ai.operation.name does not, and
// that name its agent when gen_ai.agent.name does not.
const (
	AttrLangfuseObservationType = "langfuse.observation.type" // the importer's copy of a Langfuse observation's type
	attrAgentNameLegacy         = "agent_name"                // Pydantic AI before gen_ai.agent.name
)

// SpanAgent names the agent a span belongs to or runs, for a run's agent list: gen_ai.agent.name
// on the span, then on the resource (AgentName). Failing that, when the span is an agent
// invocation — gen_ai.operation.name invoke_agent or create_agent, openinference.span.kind
// AGENT, traceloop.span.kind agent, or langfuse.observation.type AGENT (Langfuse's export of
// OpenAI Agents, Google ADK, Koog, Agno and others, whose spans carry no gen_ai.agent.name) —
// it is the attribute agent_name (Pydantic AI), else the span name without the operation the
// instrumentation put in front of the agent's name: "invoke_agent X" and "create_agent X" (the
// GenAI semantic conventions' span name, "{gen_ai.operation.name} {gen_ai.agent.name}"; any-agent
// writes "invoke_agent [X]") give X,
// and "agent_run [X]" (Google ADK, whose agent names are Python identifiers) gives X, the first
// bracketed name ("agent_run [a] [b]" gives a). These forms with no name ("invoke_agent",
// "create_agent", "agent_run []") name no agent. Any other name is the agent's as it is ("Agent
// workflow"), read only from a root span or one whose parent is an agent invocation too
// (parentIsAgent, called only then): BeeAI marks each of its ReAct agent's events AGENT
// ("agent.react.update-13", under an "iteration-1" span), and those names are events, not
// agents. The forms above name their agent anywhere (Google ADK's "agent_run [X]" runs under its
// "invocation [app]" CHAIN span).
// "" for a span that is neither.
func SpanAgent(span ptrace.Span, resourceAttrs pcommon.Map, parentIsAgent func() bool) string {
	attrs := span.Attributes()
	if a := AgentName(attrs, resourceAttrs); a != "" {
		return a
	}
	if !IsAgentInvocation(attrs) {
		return ""
	}
	if v, ok := attrs.Get(attrAgentNameLegacy); ok && v.AsString() != "" {
		return v.AsString()
	}
	name := strings.TrimSpace(span.Name())
	if x, ok := operationAgent(name); ok {
		return x
	}
	if !span.ParentSpanID().IsEmpty() && !parentIsAgent() {
		return ""
	}
	return name
}

// operationAgent reads the agent's name out of a span name (trimmed) of the forms
// "invoke_agent X", "create_agent X" (X in brackets too: any-agent's "invoke_agent [any_agent]")
// and "agent_run [X]" (ok true; the name "" when the form holds none), or reports that name has
// none of these forms (ok false).
func operationAgent(name string) (agent string, ok bool) {
	for _, op := range []string{"invoke_agent", "create_agent"} {
		if rest, found := strings.CutPrefix(name, op); found && (rest == "" || rest[0] == ' ') {
			rest = strings.TrimSpace(rest)
			if len(rest) >= 2 && rest[0] == '[' && rest[len(rest)-1] == ']' {
				rest = strings.TrimSpace(rest[1 : len(rest)-1])
			}
			return rest, true
		}
	}
	if name == "agent_run" {
		return "", true
	}
	if rest, found := strings.CutPrefix(name, "agent_run ["); found {
		if x, _, closed := strings.Cut(rest, "]"); closed {
			return strings.TrimSpace(x), true
		}
	}
	return "", false
}

// AgentAttribute reports whether SpanAgent reads span attribute k (besides gen_ai.agent.name and
// gen_ai.operation.name): a record that keeps these, the span's name, parent and the resource's
// gen_ai.agent.name names the same agent as the span.
func AgentAttribute(k string) bool {
	switch k {
	case AttrOpenInferenceKind, AttrTraceloopSpanKind, AttrLangfuseObservationType, attrAgentNameLegacy:
		return true
	}
	return false
}

// IsAgentInvocation tells whether attrs mark an agent's run (not a chain or a workflow: their
// names are steps, not agents). Classify calls such a span KindAgent.
func IsAgentInvocation(attrs pcommon.Map) bool {
	for _, kv := range [][2]string{
		{AttrOperationName, "invoke_agent"}, {AttrOperationName, "create_agent"},
		{AttrOpenInferenceKind, "AGENT"}, {AttrTraceloopSpanKind, "agent"}, {AttrLangfuseObservationType, "AGENT"},
	} {
		if v, ok := attrs.Get(kv[0]); ok && v.AsString() == kv[1] {
			return true
		}
	}
	return namedInvocation(attrs)
}

// namedInvocation tells whether attrs name an agent (gen_ai.agent.name, or agent_name before it)
// and say nothing else about the span: no operation, no OpenInference or Traceloop kind, no tool,
// no model. Pydantic AI records its "<agent> run" spans so (semconv names gen_ai.agent.name on
// invoke_agent and create_agent spans); a call or tool that names the agent it serves says so.
func namedInvocation(attrs pcommon.Map) bool {
	named := false
	for _, k := range []string{AttrAgentName, attrAgentNameLegacy} {
		if v, ok := attrs.Get(k); ok && v.AsString() != "" {
			named = true
		}
	}
	if !named || Model(attrs) != "" {
		return false
	}
	for _, k := range []string{AttrOperationName, AttrOpenInferenceKind, AttrTraceloopSpanKind, AttrToolName} {
		if _, ok := attrs.Get(k); ok {
			return false
		}
	}
	return true
}
