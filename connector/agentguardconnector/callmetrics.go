// SPDX-License-Identifier: Apache-2.0

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/genai"
)

// recordCall records one call's metrics at now: for LLM calls gen_ai.client.inference.duration (s)
// and the gen_ai.client.inference.usage.{input,output}_tokens counters (semantic-conventions-genai)
// and/or, as semconv <= 1.41 named them, gen_ai.client.operation.duration and the
// gen_ai.client.token.usage histogram by gen_ai.token.type (input, output), as configured;
// gen_ai.client.operation.duration for tool calls;
// and runagain.cost (USD) when c was priced or runagain.cost.unpriced when it has usage but no
// known price. Each point keeps the span as an exemplar.
func (a *aggregator) recordCall(c *call, now pcommon.Timestamp) {
	ex := exemplar{trace: c.ref.trace, span: c.ref.span, ts: pcommon.Timestamp(c.end)}
	dur := float64(c.end-int64(c.start)) / 1e9
	switch c.kind {
	case genai.KindLLM:
		base := [6]kv{{genai.AttrAgentName, c.agent}, {genai.AttrOperationName, c.op}, {genai.AttrProviderName, c.provider}, {genai.AttrRequestModel, c.reqModel}, {genai.AttrResponseModel, c.respModel}, {genai.AttrErrorType, c.errType}}
		if a.names.inference {
			a.record(a.get(mInferenceDuration, c.service, base[:], now), dur, ex)
			if c.usage.Input > 0 {
				a.record(a.get(mInferenceInput, c.service, base[:5], now), float64(c.usage.Input), ex)
			}
			if c.usage.Output > 0 {
				a.record(a.get(mInferenceOutput, c.service, base[:5], now), float64(c.usage.Output), ex)
			}
		}
		if a.names.legacy {
			a.record(a.get(mDuration, c.service, base[:], now), dur, ex)
			if c.usage.Input > 0 {
				base[5] = kv{"gen_ai.token.type", "input"}
				a.record(a.get(mTokenUsage, c.service, base[:], now), float64(c.usage.Input), ex)
			}
			if c.usage.Output > 0 {
				base[5] = kv{"gen_ai.token.type", "output"}
				a.record(a.get(mTokenUsage, c.service, base[:], now), float64(c.usage.Output), ex)
			}
		}
		if hasUsage(c.usage) {
			costAttrs := [3]kv{{genai.AttrAgentName, c.agent}, {genai.AttrProviderName, c.provider}, {genai.AttrRequestModel, c.reqModel}}
			if c.costed {
				a.record(a.get(mCost, c.service, costAttrs[:], now), c.cost, ex)
			} else {
				a.record(a.get(mUnpriced, c.service, costAttrs[:], now), 1, ex)
			}
		}
	case genai.KindTool:
		toolAttrs := [4]kv{{genai.AttrAgentName, c.agent}, {genai.AttrOperationName, c.op}, {genai.AttrToolName, c.tool}, {genai.AttrErrorType, c.errType}}
		a.record(a.get(mDuration, c.service, toolAttrs[:], now), dur, ex)
	}
}

// hasUsage reports whether a call reported any token count (then it is priced or counted as
// unpriced).
func hasUsage(u genai.Usage) bool {
	return u.Input > 0 || u.Output > 0 || u.CacheRead > 0 || u.CacheWrite > 0
}
