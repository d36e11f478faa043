// SPDX-License-Identifier: Apache-2.0

package genai

import (
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Agent SDK span kinds beyond the GenAI operations: an agent handing the conversation to another
// agent, and a guardrail checking an input or output (OpenAI Agents SDK HandoffSpanData and
// GuardrailSpanData, as its instrumentations export them).
const (
	KindHandoff   Kind = "handoff"
	KindGuardrail Kind = "guardrail"
)

// Attributes read for handoffs and guardrails (the instrumentations' own names).
const (
	AttrTraceloopSpanKind  = "traceloop.span.kind"     // OpenLLMetry: "handoff", "guardrail"
	AttrHandoffToAgent     = "gen_ai.handoff.to_agent" // OpenLLMetry openai-agents
	AttrHandoffFromAgent   = "gen_ai.handoff.from_agent"
	AttrGuardrailTriggered = "guardrail.triggered"
)

// Guardrail verdicts returned by Guardrail.
const (
	VerdictTriggered = "triggered" // the tripwire fired: the input or output was refused
	VerdictPassed    = "passed"
)

// agentKind returns KindHandoff or KindGuardrail from the span attributes, "" otherwise:
//   - traceloop.span.kind "handoff" / "guardrail" (OpenLLMetry), or gen_ai.handoff.to_agent present;
//   - openinference.span.kind "GUARDRAIL" (OpenInference);
//   - gen_ai.operation.name "handoff" / "guardrail" / "apply_guardrail";
//   - the OpenAI Agents SDK span data type (openai.agents.span_data.type, span_data.type) as
//     exported by processors that copy it (Logfire, Langfuse).
func agentKind(attrs pcommon.Map) Kind {
	for _, k := range []string{AttrTraceloopSpanKind, AttrOperationName, AttrOpenInferenceKind, "openai.agents.span_data.type", "span_data.type"} {
		v, ok := attrs.Get(k)
		if !ok {
			continue
		}
		switch strings.ToLower(v.AsString()) {
		case "handoff":
			return KindHandoff
		case "guardrail", "apply_guardrail":
			return KindGuardrail
		}
	}
	if _, ok := attrs.Get(AttrHandoffToAgent); ok {
		return KindHandoff
	}
	return ""
}

// ClassifySpan is Classify plus the span-name shapes of agent SDK instrumentations that carry no
// attribute saying what the span is: "A → B.handoff" (OpenLLMetry), "Handoff: A → B" (Logfire),
// "handoff to B" (OpenInference), "Guardrail NAME triggered=..." (Logfire).
func ClassifySpan(span ptrace.Span) Kind {
	k := Classify(span.Attributes())
	if k != KindOther && k != KindTool {
		return k
	}
	name := span.Name()
	switch {
	case strings.HasSuffix(name, ".handoff") && strings.Contains(name, "→"),
		strings.HasPrefix(name, "Handoff: "), strings.HasPrefix(name, "handoff to "):
		return KindHandoff
	case strings.HasPrefix(name, "Guardrail ") && strings.Contains(name, "triggered="):
		return KindGuardrail
	}
	return k
}

// Handoff returns the agent a handoff span hands over to and the one handing over ("" when not
// recorded): gen_ai.handoff.to_agent / from_agent, to_agent / from_agent, else read from the
// span name shapes ClassifySpan knows.
func Handoff(span ptrace.Span) (from, to string) {
	a := span.Attributes()
	to = firstStrAttr(a, AttrHandoffToAgent, "to_agent", "handoff.to_agent")
	from = firstStrAttr(a, AttrHandoffFromAgent, "from_agent", "handoff.from_agent")
	name := span.Name()
	if to == "" || from == "" {
		var f, t string
		switch {
		case strings.HasPrefix(name, "Handoff: "):
			f, t, _ = strings.Cut(strings.TrimPrefix(name, "Handoff: "), " → ")
		case strings.HasSuffix(name, ".handoff"):
			f, t, _ = strings.Cut(strings.TrimSuffix(name, ".handoff"), " → ")
		case strings.HasPrefix(name, "handoff to "):
			t = strings.TrimPrefix(name, "handoff to ")
		}
		if to == "" && t != "unknown" {
			to = strings.TrimSpace(t)
		}
		if from == "" && f != "unknown" {
			from = strings.TrimSpace(f)
		}
	}
	return from, to
}

// Guardrail returns a guardrail span's name and verdict (VerdictTriggered, VerdictPassed, or ""
// when not recorded): guardrail.triggered / triggered / gen_ai.guardrail.triggered (bool or
// "true"/"false"), else "triggered=True|False" in the span name (Logfire); the name from
// guardrail.name / name / gen_ai.guardrail.name, else the span name.
func Guardrail(span ptrace.Span) (name, verdict string) {
	a := span.Attributes()
	name = firstStrAttr(a, "guardrail.name", "gen_ai.guardrail.name", "name")
	if name == "" {
		name = span.Name()
	}
	for _, k := range []string{AttrGuardrailTriggered, "gen_ai.guardrail.triggered", "triggered"} {
		v, ok := a.Get(k)
		if !ok {
			continue
		}
		var b bool
		var err error
		if v.Type() == pcommon.ValueTypeBool {
			b = v.Bool()
		} else if b, err = strconv.ParseBool(strings.ToLower(v.AsString())); err != nil {
			continue
		}
		return name, verdictOf(b)
	}
	if i := strings.Index(span.Name(), "triggered="); i >= 0 {
		if b, err := strconv.ParseBool(strings.ToLower(strings.Fields(span.Name()[i+len("triggered="):] + " ")[0])); err == nil {
			return name, verdictOf(b)
		}
	}
	return name, ""
}

func verdictOf(triggered bool) string {
	if triggered {
		return VerdictTriggered
	}
	return VerdictPassed
}

func firstStrAttr(a pcommon.Map, keys ...string) string {
	for _, k := range keys {
		if v, ok := a.Get(k); ok && v.AsString() != "" {
			return v.AsString()
		}
	}
	return ""
}
