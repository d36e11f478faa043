// SPDX-License-Identifier: Apache-2.0

package genai

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestHandoffAndGuardrailShapes(t *testing.T) {
	for _, c := range []struct {
		name    string
		attrs   map[string]any
		kind    Kind
		from    string
		to      string
		gname   string
		verdict string
	}{
		{"Triage → Billing.handoff", map[string]any{"traceloop.span.kind": "handoff", "gen_ai.handoff.from_agent": "Triage", "gen_ai.handoff.to_agent": "Billing"},
			KindHandoff, "Triage", "Billing", "", ""},
		{"Handoff: Triage → Refunds", map[string]any{"logfire.msg_template": "Handoff: {from_agent} → {to_agent}"}, KindHandoff, "Triage", "Refunds", "", ""},
		{"handoff to Spanish agent", map[string]any{"openinference.span.kind": "TOOL"}, KindHandoff, "", "Spanish agent", "", ""},
		{"math_guardrail", map[string]any{"openinference.span.kind": "GUARDRAIL", "guardrail.triggered": true}, KindGuardrail, "", "", "math_guardrail", VerdictTriggered},
		{"Guardrail 'homework' triggered=False", map[string]any{"name": "homework"}, KindGuardrail, "", "", "homework", VerdictPassed},
		{"check", map[string]any{"gen_ai.operation.name": "apply_guardrail", "triggered": "true"}, KindGuardrail, "", "", "check", VerdictTriggered},
		{"guardrail", map[string]any{"openai.agents.span_data.type": "guardrail"}, KindGuardrail, "", "", "guardrail", ""},
		{"transfer_to_billing", map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "transfer_to_billing"}, KindTool, "", "", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := ptrace.NewSpan()
			sp.SetName(c.name)
			require.NoError(t, sp.Attributes().FromRaw(c.attrs))
			assert.Equal(t, c.kind, ClassifySpan(sp))
			switch c.kind {
			case KindHandoff:
				from, to := Handoff(sp)
				assert.Equal(t, c.from, from)
				assert.Equal(t, c.to, to)
			case KindGuardrail:
				name, verdict := Guardrail(sp)
				assert.Equal(t, c.gname, name)
				assert.Equal(t, c.verdict, verdict)
			}
		})
	}
}
