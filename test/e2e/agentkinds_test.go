// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestHandoffAndGuardrailKinds: an OpenAI Agents SDK run as its instrumentations export it (an
// input guardrail that passed and one that triggered as OpenInference and Logfire send them, a
// handoff as OpenLLMetry sends it) shows those spans as their own kinds with the guardrail's
// verdict and the handoff's target, not as "other".
func TestHandoffAndGuardrailKinds(t *testing.T) {
	c := collectortest.Start(t, collectortest.Options{})
	r := newRun(6, "triage-agent")
	r.span(1, 0, "Triage.agent", 0, 3000, map[string]any{"traceloop.span.kind": "agent", "gen_ai.agent.name": "Triage"})
	r.span(2, 1, "homework_guardrail", 10, 50, map[string]any{"openinference.span.kind": "GUARDRAIL", "guardrail.triggered": false})
	r.span(3, 1, "Guardrail 'pii_guardrail' triggered=True", 20, 50, map[string]any{"name": "pii_guardrail", "triggered": true})
	r.span(4, 1, "Triage → Billing.handoff", 100, 5, map[string]any{"traceloop.span.kind": "handoff",
		"gen_ai.handoff.from_agent": "Triage", "gen_ai.handoff.to_agent": "Billing", "gen_ai.system": "openai_agents"})
	sendOTLP(t, c, r.td, plog.NewLogs())
	waitShow(t, c, r.id(), 4, 0)

	show := cli(t, c, "show", r.id())
	assert.Contains(t, show, "▸ [guardrail] homework_guardrail  +10ms  50ms  Unset  span "+r.spanID(2)+"\n      guardrail homework_guardrail: passed\n")
	assert.Contains(t, show, "▸ [guardrail] Guardrail 'pii_guardrail' triggered=True  +20ms  50ms  Unset  span "+r.spanID(3)+"\n      guardrail pii_guardrail: triggered\n")
	assert.Contains(t, show, "▸ [handoff] Triage → Billing.handoff  +100ms  5ms  Unset  span "+r.spanID(4)+"\n      handoff Triage → Billing\n")
	assert.NotContains(t, show, "[other]")

	var view struct {
		Spans []struct {
			GenAIKind string `json:"genai_kind"`
			HandoffTo string `json:"handoff_to"`
			Verdict   string `json:"guardrail_verdict"`
		} `json:"spans"`
	}
	require.NoError(t, json.Unmarshal([]byte(cli(t, c, "show", "--json", r.id())), &view))
	require.Len(t, view.Spans, 4)
	assert.Equal(t, "guardrail", view.Spans[1].GenAIKind)
	assert.Equal(t, "passed", view.Spans[1].Verdict)
	assert.Equal(t, "triggered", view.Spans[2].Verdict)
	assert.Equal(t, "handoff", view.Spans[3].GenAIKind)
	assert.Equal(t, "Billing", view.Spans[3].HandoffTo)
}
