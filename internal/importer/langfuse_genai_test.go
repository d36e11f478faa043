// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/genai"
)

func generations(td ptrace.Traces) []ptrace.Span {
	var out []ptrace.Span
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		ss := td.ResourceSpans().At(i).ScopeSpans()
		for j := 0; j < ss.Len(); j++ {
			for k := 0; k < ss.At(j).Spans().Len(); k++ {
				s := ss.At(j).Spans().At(k)
				if v, ok := s.Attributes().Get("langfuse.observation.type"); ok && v.Str() == "GENERATION" {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// TestLangfuseUsageOnlyInLangfuseFields: a LangGraph run exported by Langfuse whose observations
// carry no OpenTelemetry attributes gets its model, tokens and reported cost as GenAI attributes.
func TestLangfuseUsageOnlyInLangfuseFields(t *testing.T) {
	path := filepath.Join(corpus.Dir(t), "langfuse/packages/shared/scripts/seeder/utils/framework-traces/langgraph-2025-08-22.json")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	res, err := ParseBytes(path, data)
	require.NoError(t, err)
	gens := generations(res.Traces)
	require.Len(t, gens, 2)
	a := gens[0].Attributes()
	assert.Equal(t, genai.KindLLM, genai.Classify(a))
	assert.Equal(t, "gpt-4o-2024-08-06", genai.Model(a))
	assert.Equal(t, genai.Usage{Input: 60, Output: 15}, genai.TokenUsage(a))
	cost, ok := a.Get(AttrReportedCost)
	require.True(t, ok)
	assert.InDelta(t, 7.5e-05, cost.Double(), 1e-15)
}

// TestLangfuseUsageArithmetic: Langfuse prices input, cache reads and writes separately, so the
// semconv input is their sum; a total equal to input+output means they already include them;
// a recorded OpenTelemetry usage attribute is never replaced.
func TestLangfuseUsageArithmetic(t *testing.T) {
	doc := func(usage, attrs string) string {
		return `{"trace":{"id":"0123456789abcdef0123456789abcdef","timestamp":"2025-01-01T00:00:00Z"},"observations":[{"id":"0123456789abcdef","type":"GENERATION","name":"claude","startTime":"2025-01-01T00:00:00Z","endTime":"2025-01-01T00:00:01Z","model":"claude-sonnet-4-5","usageDetails":` + usage + `,"costDetails":{"total":0.5},"metadata":` + attrs + `}]}`
	}
	for _, c := range []struct {
		name, usage, attrs string
		want               genai.Usage
	}{
		{"separate cache counts (Claude Agent SDK)", `{"input":10,"input_cache_read":100,"input_cache_creation":20,"output":5,"output_reasoning":3}`, `null`,
			genai.Usage{Input: 130, Output: 8, CacheRead: 100, CacheWrite: 20, Reasoning: 3}},
		{"total shows input includes cache", `{"input":110,"input_cache_read":100,"output":5,"total":115}`, `null`,
			genai.Usage{Input: 110, Output: 5, CacheRead: 100}},
		{"recorded usage wins", `{"input":10,"output":5}`, `{"attributes":{"gen_ai.usage.input_tokens":7}}`,
			genai.Usage{Input: 7}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := ParseBytes("x.json", []byte(doc(c.usage, c.attrs)))
			require.NoError(t, err)
			gens := generations(res.Traces)
			require.Len(t, gens, 1)
			assert.Equal(t, c.want, genai.TokenUsage(gens[0].Attributes()))
			assert.Equal(t, "claude-sonnet-4-5", genai.Model(gens[0].Attributes()))
		})
	}
}

// TestLangfuseMessagesMovedOutOfAttributes: Langfuse keeps Pydantic AI's gen_ai.input.messages /
// gen_ai.output.messages (semconv 1.37) in the observation's input and output fields, not in its
// attributes; imported, each LLM call of the run has its messages again (before, `show --step`
// and the UI said "input: not recorded" for every call of pydantic-ai-tools-2025-12-04).
func TestLangfuseMessagesMovedOutOfAttributes(t *testing.T) {
	res, err := ParseFile(filepath.Join(corpus.Dir(t), "langfuse/worker/src/__tests__/chatml/framework-traces/pydantic-ai-tools-2025-12-04.trace.json"))
	require.NoError(t, err)
	gens := generations(res.Traces)
	require.Len(t, gens, 4)
	for _, s := range gens {
		cm, err := genai.LLMCallMessages(s, nil)
		require.NoError(t, err, s.SpanID())
		require.NotEmpty(t, cm.Input, s.SpanID())
		require.NotEmpty(t, cm.Output, s.SpanID())
		assert.Equal(t, genai.SourceAttributes, cm.InputSource)
		assert.Equal(t, "system", cm.Input[0].Role)
		assert.Equal(t, "assistant", cm.Output[0].Role)
	}

	// A span that records the attribute keeps it; a non-conventional input is left alone.
	span := ptrace.NewSpan()
	attrs := span.Attributes()
	attrs.PutStr(genai.AttrInputMessages, "recorded")
	lfMessages(map[string]field{"input": {raw: []byte(`[{"role":"user","parts":[]}]`)}, "output": {raw: []byte(`[{"role":"assistant","content":"hi"}]`)}}, span)
	v, _ := attrs.Get(genai.AttrInputMessages)
	assert.Equal(t, "recorded", v.Str())
	_, ok := attrs.Get(genai.AttrOutputMessages)
	assert.False(t, ok)
	_, ok = attrs.Get(genai.AttrLangfuseInput)
	assert.False(t, ok, "the span records gen_ai.input.messages: Langfuse's copy is not added")
	// The other output is kept in Langfuse's own attribute, and read from there.
	v, _ = attrs.Get(genai.AttrLangfuseOutput)
	assert.Equal(t, `[{"role":"assistant","content":"hi"}]`, v.Str())
	cm, _ := genai.LLMCallMessages(span, nil)
	assert.Equal(t, genai.SourceLangfuse, cm.OutputSource)
	require.Len(t, cm.Output, 1)
	assert.Equal(t, "hi", cm.Output[0].Parts[0].Content)
}

// TestLfMessagesOnlyConventionalAndUnrecorded runs without the corpus: a message list in the
// GenAI form becomes the attribute as compact JSON; a span that records the attribute or its
// offloaded reference (RefSuffix) keeps what it has; an input that is not such a list (no parts,
// parts not an array, empty, not JSON) adds nothing.
func TestLfMessagesOnlyConventionalAndUnrecorded(t *testing.T) {
	conv := []byte(`[ {"role":"user", "parts":[{"type":"text","content":"hi"}]} ]`)
	for _, tc := range []struct {
		name  string
		input []byte
		have  string // attribute the span already records
		want  string // gen_ai.input.messages afterwards ("" absent)
	}{
		{"conventional", conv, "", `[{"role":"user","parts":[{"type":"text","content":"hi"}]}]`},
		{"recorded", conv, genai.AttrInputMessages, "recorded"},
		{"offloaded", conv, genai.AttrInputMessages + genai.RefSuffix, ""},
		{"no parts", []byte(`[{"role":"user","content":"hi"}]`), "", ""},
		{"parts not an array", []byte(`[{"role":"user","parts":{}}]`), "", ""},
		{"empty list", []byte(`[]`), "", ""},
		{"not JSON", []byte(`[{"role":`), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			span := ptrace.NewSpan()
			attrs := span.Attributes()
			if tc.have != "" {
				attrs.PutStr(tc.have, "recorded")
			}
			lfMessages(map[string]field{"input": {raw: tc.input}}, span)
			v, ok := attrs.Get(genai.AttrInputMessages)
			assert.Equal(t, tc.want != "", ok)
			if ok {
				assert.Equal(t, tc.want, v.Str())
			}
			_, out := attrs.Get(genai.AttrOutputMessages)
			assert.False(t, out, "no output field, no output attribute")
		})
	}
}
