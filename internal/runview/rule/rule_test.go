// SPDX-License-Identifier: Apache-2.0

package rule

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/genai"
)

func id(b byte) pcommon.SpanID { return pcommon.SpanID{b} }

func steps(vs []Verdict) []StepKind {
	out := make([]StepKind, len(vs))
	for i, v := range vs {
		out[i] = v.Step
	}
	return out
}

// An instrumented agent's LLM calls with the proxy's exchanges joined by traceparent: each call
// counts once, on the instrumented span, whether the exchange is its child or only overlaps it.
func TestExchangeCoveredByInstrumentedCall(t *testing.T) {
	spans := []Span{
		{ID: id(1), Kind: genai.KindAgent, Start: 0, End: 100, HasUsage: true},                                             // aggregate usage
		{ID: id(2), Parent: id(1), Kind: genai.KindLLM, Start: 10, End: 20, Model: "gpt-4o-mini", HasUsage: true},          // call 1
		{ID: id(3), Parent: id(2), Kind: genai.KindLLM, Exchange: true, Derived: true, Start: 11, End: 19, HasUsage: true}, // its exchange (child)
		{ID: id(4), Parent: id(1), Kind: genai.KindLLM, Start: 30, End: 40, Model: "gpt-4o-mini", HasUsage: true},          // call 2
		// its exchange, joined under the agent span (the HTTP client's context), overlapping call 2
		{ID: id(5), Parent: id(1), Kind: genai.KindLLM, Exchange: true, Derived: true, Start: 31, End: 39, Model: "gpt-4o-mini-2024-07-18", HasUsage: true},
		{ID: id(6), Parent: id(1), Kind: genai.KindTool, Start: 21, End: 29, Tool: "get_weather"},
		// a later exchange no instrumented span covers (an uninstrumented client): counted
		{ID: id(7), Parent: id(1), Kind: genai.KindLLM, Exchange: true, Derived: true, Start: 50, End: 60, Model: "gpt-4o-mini", HasUsage: true},
		// a tool API exchange under the tool span: its transport; one outside any step: an HTTP step
		{ID: id(8), Parent: id(6), Kind: genai.KindOther, Exchange: true, Start: 22, End: 28},
		{ID: id(9), Parent: id(1), Kind: genai.KindOther, Exchange: true, Start: 70, End: 80},
	}
	v := Apply(spans)
	assert.Equal(t, []StepKind{StepNone, StepLLM, StepNone, StepLLM, StepNone, StepTool, StepLLM, StepNone, StepHTTP}, steps(v))
	assert.Equal(t, 1, v[2].CoveredBy, "the child exchange is covered by its instrumented parent")
	assert.Equal(t, 3, v[4].CoveredBy, "the overlapping exchange of the same request is covered")
	assert.Equal(t, -1, v[6].CoveredBy)
	counted := 0
	for _, x := range v {
		if x.CountUsage {
			counted++
		}
	}
	assert.Equal(t, 3, counted, "usage of calls 1, 2 and the uncovered exchange; never the agent's aggregate")
	assert.False(t, v[0].CountUsage)
}

// One instrumented call covers one overlapping exchange: two concurrent exchanges beside one
// instrumented call count one of them; a model that differs is another request.
func TestOverlapIsOneToOneAndSameRequest(t *testing.T) {
	spans := []Span{
		{ID: id(1), Kind: genai.KindLLM, Start: 10, End: 20, Model: "claude-sonnet-4", HasUsage: true},
		{ID: id(2), Kind: genai.KindLLM, Exchange: true, Derived: true, Start: 11, End: 19, Model: "claude-sonnet-4", HasUsage: true},
		{ID: id(3), Kind: genai.KindLLM, Exchange: true, Derived: true, Start: 12, End: 18, Model: "claude-sonnet-4", HasUsage: true},
		{ID: id(4), Kind: genai.KindLLM, Exchange: true, Derived: true, Start: 12, End: 18, Model: "gpt-4o", HasUsage: true},
	}
	v := Apply(spans)
	assert.Equal(t, []StepKind{StepLLM, StepNone, StepLLM, StepLLM}, steps(v))
	assert.Equal(t, 0, v[1].CoveredBy)
}

// A proxy-only run: every derived exchange is a call; an MCP tools/call exchange is a tool step.
func TestProxyOnlyRun(t *testing.T) {
	spans := []Span{
		{ID: id(1), Kind: genai.KindOther, Start: 0, End: 100},
		{ID: id(2), Parent: id(1), Kind: genai.KindLLM, Exchange: true, Derived: true, Start: 1, End: 2, HasUsage: true},
		{ID: id(3), Parent: id(1), Kind: genai.KindTool, Exchange: true, Derived: true, Start: 3, End: 4, Tool: "search"},
		{ID: id(4), Parent: id(1), Kind: genai.KindLLM, Exchange: true, Derived: true, Start: 5, End: 6, HasUsage: true},
	}
	v := Apply(spans)
	assert.Equal(t, []StepKind{StepNone, StepLLM, StepTool, StepLLM}, steps(v))
	assert.True(t, v[1].CountUsage && v[3].CountUsage)
}

// A framework's LLM span over the client library's (Vercel ai.generateText over
// ai.generateText.doGenerate): the inner calls are the steps; the outer's usage (their sum) is
// not added, unless no inner call records usage.
func TestAggregateLLMSpan(t *testing.T) {
	v := Apply([]Span{
		{ID: id(1), Kind: genai.KindLLM, Start: 0, End: 100, HasUsage: true},
		{ID: id(2), Parent: id(1), Kind: genai.KindLLM, Start: 1, End: 40, HasUsage: true},
		{ID: id(3), Parent: id(1), Kind: genai.KindLLM, Start: 50, End: 90, HasUsage: true},
	})
	assert.Equal(t, []StepKind{StepNone, StepLLM, StepLLM}, steps(v))
	assert.True(t, v[0].Aggregate)
	assert.False(t, v[0].CountUsage)

	v = Apply([]Span{
		{ID: id(1), Kind: genai.KindLLM, Start: 0, End: 100, HasUsage: true},
		{ID: id(2), Parent: id(1), Kind: genai.KindLLM, Start: 1, End: 40},
	})
	assert.True(t, v[0].CountUsage, "the tokens recorded only on the outer span still count")
	assert.False(t, v[1].CountUsage)
}

// A rerun's --set changed the requests after the agent's spans recorded them: each edited
// exchange is the step and counts (what was sent and priced), its covering call neither; an
// edited exchange without usage leaves the call's usage counted; an unedited one is covered.
func TestEditedExchangeCountsInPlaceOfItsCall(t *testing.T) {
	spans := []Span{
		{ID: id(1), Kind: genai.KindAgent, Start: 0, End: 100},
		{ID: id(2), Parent: id(1), Kind: genai.KindLLM, Start: 10, End: 20, Model: "gpt-4o-mini", HasUsage: true},
		{ID: id(3), Parent: id(2), Kind: genai.KindLLM, Exchange: true, Derived: true, Edited: true, Start: 11, End: 19, Model: "gpt-4.1", HasUsage: true},
		{ID: id(4), Parent: id(1), Kind: genai.KindLLM, Start: 30, End: 40, Model: "gpt-4o-mini", HasUsage: true},
		{ID: id(5), Parent: id(4), Kind: genai.KindLLM, Exchange: true, Derived: true, Edited: true, Start: 31, End: 39, Model: "gpt-4.1"},
		{ID: id(6), Parent: id(1), Kind: genai.KindLLM, Start: 50, End: 60, Model: "gpt-4o-mini", HasUsage: true},
		{ID: id(7), Parent: id(6), Kind: genai.KindLLM, Exchange: true, Derived: true, Start: 51, End: 59, Model: "gpt-4o-mini", HasUsage: true},
	}
	v := Apply(spans)
	assert.Equal(t, []StepKind{StepNone, StepNone, StepLLM, StepNone, StepLLM, StepLLM, StepNone}, steps(v))
	assert.True(t, v[2].InPlace && v[2].CountUsage, "the edited exchange counts")
	assert.Equal(t, 1, v[2].CoveredBy, "and stays placed under its call")
	assert.False(t, v[1].CountUsage, "its call does not")
	assert.True(t, v[4].InPlace && !v[4].CountUsage, "an edited exchange without usage is the step")
	assert.True(t, v[3].CountUsage, "its call's usage still counts")
	assert.False(t, v[6].InPlace || v[6].CountUsage, "an unedited exchange stays covered")
	assert.True(t, v[5].CountUsage)

	// Without a covering call an edited exchange is an ordinary call.
	v = Apply([]Span{{ID: id(1), Kind: genai.KindLLM, Exchange: true, Derived: true, Edited: true, HasUsage: true}})
	assert.Equal(t, []StepKind{StepLLM}, steps(v))
	assert.False(t, v[0].InPlace)
	assert.True(t, v[0].CountUsage)
}
