// SPDX-License-Identifier: Apache-2.0

package store

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
)

// agentNamer names the agent of each span of one batch as the run page does (genai.SpanAgent):
// gen_ai.agent.name, else the name of an agent invocation that is a root or whose parent is an
// agent invocation too. The parent is looked for among the batch's spans of the same trace (a
// request usually carries a whole run; a parent sent in another request is not found, and an
// invocation under it that names its agent only by its span name records none here, while the
// warm tier's run page still resolves it from the whole run: SummaryAttribute keeps the
// attributes that mark an invocation).
type agentNamer struct {
	td          ptrace.Traces
	invocations map[[24]byte]bool // trace id + span id of the batch's agent invocations; nil until needed
}

func newAgentNamer(td ptrace.Traces) *agentNamer { return &agentNamer{td: td} }

// name returns the agent span s (of resource res) belongs to or runs (genai.SpanAgent); ""
// for none. The batch's invocations are indexed the first time SpanAgent asks about a parent.
func (n *agentNamer) name(res pcommon.Resource, s ptrace.Span) string {
	return genai.SpanAgent(s, res.Attributes(), func() bool { return n.parentIsAgent(s) })
}

// parentIsAgent tells whether the parent of s is an agent invocation among the batch's spans.
func (n *agentNamer) parentIsAgent(s ptrace.Span) bool {
	if n.invocations == nil {
		n.invocations = map[[24]byte]bool{}
		eachSpan(n.td, func(_ pcommon.Resource, sp ptrace.Span) {
			if genai.IsAgentInvocation(sp.Attributes()) {
				n.invocations[spanKey(sp.TraceID(), sp.SpanID())] = true
			}
		})
	}
	return n.invocations[spanKey(s.TraceID(), s.ParentSpanID())]
}

func spanKey(t pcommon.TraceID, s pcommon.SpanID) (k [24]byte) {
	copy(k[:16], t[:])
	copy(k[16:], s[:])
	return k
}
