// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.yaml.in/yaml/v3"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/importer"
	"github.com/runagain/runagain/internal/pricing"
)

// yamlFlatPrice reads input_mtok and output_mtok of model id from the upstream genai-prices
// provider file (providers/<file>.yml), the human-edited source of the data, independent of
// the generated table and of the matching code.
func yamlFlatPrice(t *testing.T, file, id string) (in, out float64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpus.Dir(t), "prices", "providers", file+".yml"))
	require.NoError(t, err)
	var doc struct {
		Models []struct {
			ID     string             `yaml:"id"`
			Prices map[string]float64 `yaml:"prices"`
		} `yaml:"models"`
	}
	// Models with tiered or conditional prices fail to decode into map[string]float64; decode
	// model by model so only the one asked for must be flat.
	var raw struct {
		Models []yaml.Node `yaml:"models"`
	}
	require.NoError(t, yaml.Unmarshal(b, &raw))
	for _, n := range raw.Models {
		var m struct {
			ID string `yaml:"id"`
		}
		require.NoError(t, n.Decode(&m))
		if m.ID != id {
			continue
		}
		doc.Models = append(doc.Models, struct {
			ID     string             `yaml:"id"`
			Prices map[string]float64 `yaml:"prices"`
		}{})
		require.NoError(t, n.Decode(&doc.Models[0]), "%s/%s must have flat prices for this test", file, id)
		p := doc.Models[0].Prices
		return p["input_mtok"], p["output_mtok"]
	}
	t.Fatalf("model %s not in %s.yml", id, file)
	return 0, 0
}

// TestCostOnCorpusTraces runs real agent traces from several providers through the connector
// and compares runagain.cost with the cost computed from the genai-prices YAML for the same
// token usage, and with the cost the recording SDK itself attached where it did (Pydantic AI
// via Logfire's genai-prices: operation.cost; any-agent via LiteLLM: gen_ai.usage.*_cost).
func TestCostOnCorpusTraces(t *testing.T) {
	// Which upstream entry prices each recorded model name (read off the YAML by hand).
	priceOf := map[string][2]string{
		"gpt-4o-mini-2024-07-18":       {"openai", "gpt-4o-mini"},
		"gpt-4o-2024-08-06":            {"openai", "gpt-4o"},
		"gemini-2.0-flash":             {"google", "gemini-2.0-flash"},
		"mistral/mistral-small-latest": {"mistral", "mistral-small-latest"},
	}
	files := []struct {
		path      string
		provider  string // genai-prices provider the spans must be priced under
		llmSpans  int
		sdkCosted bool
	}{
		{"langfuse/worker/src/__tests__/chatml/framework-traces/pydantic-ai-tools-2025-12-04.trace.json", "openai", 4, true},
		{"langfuse/worker/src/__tests__/chatml/framework-traces/pydantic-ai-2025-06-06.trace.json", "openai", 1, false},
		{"langfuse/worker/src/__tests__/chatml/framework-traces/google-adk-2025-08-28.trace.json", "google", 2, false},
		{"any-agent/tests/assets/TINYAGENT_trace.json", "mistral", 4, true},
	}
	for _, f := range files {
		t.Run(filepath.Base(f.path), func(t *testing.T) {
			res, err := importer.ParseFile(filepath.Join(corpus.Dir(t), f.path))
			require.NoError(t, err)

			want, sdk, n := 0.0, 0.0, 0
			forEachSpanAttrs(res.Traces.ResourceSpans(), func(a pcommon.Map) {
				in, ok1 := a.Get("gen_ai.usage.input_tokens")
				out, ok2 := a.Get("gen_ai.usage.output_tokens")
				model := ""
				for _, k := range []string{"gen_ai.response.model", "gen_ai.request.model"} {
					if v, ok := a.Get(k); ok && model == "" {
						model = v.Str()
					}
				}
				if !ok1 || !ok2 || model == "" {
					return // agent-run spans repeat their children's usage without a model
				}
				n++
				pe, ok := priceOf[model]
				require.True(t, ok, "no expected price entry for model %q", model)
				pin, pout := yamlFlatPrice(t, pe[0], pe[1])
				want += (num(in)*pin + num(out)*pout) / 1e6
				if v, ok := a.Get("operation.cost"); ok {
					sdk += num(v)
				}
				if v, ok := a.Get("gen_ai.usage.input_cost"); ok {
					sdk += num(v)
				}
				if v, ok := a.Get("gen_ai.usage.output_cost"); ok {
					sdk += num(v)
				}
			})
			require.Equal(t, f.llmSpans, n)

			h := newHarness(t, createDefaultConfig())
			md, _ := h.feed(res.Traces)
			if testing.Verbose() {
				b, _ := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
				t.Log(string(b))
			}
			got, unpriced := 0.0, int64(0)
			sumPoints(md, MetricCost, func(_ pcommon.Map, dp pmetric.NumberDataPoint) { got += dp.DoubleValue() })
			sumPoints(md, MetricUnpriced, func(_ pcommon.Map, dp pmetric.NumberDataPoint) { unpriced += dp.IntValue() })
			assert.Zero(t, unpriced)
			assert.Greater(t, want, 0.0)
			assert.InDelta(t, want, got, 1e-12, "runagain.cost vs genai-prices YAML")
			if f.sdkCosted {
				require.Greater(t, sdk, 0.0, "the SDK recorded costs on these spans")
				assert.InDelta(t, sdk, got, 1e-9, "runagain.cost vs the cost the SDK recorded")
			}
		})
	}
}

// TestUnknownModelIsCountedNotZero checks that an LLM span of an unknown model adds nothing to
// runagain.cost and one to runagain.cost.unpriced.
func TestUnknownModelIsCountedNotZero(t *testing.T) {
	b := newTraceBuilder()
	b.span("svc", 1, 1, t0, time.Second, map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "acme", "gen_ai.request.model": "acme-large-9",
		"gen_ai.usage.input_tokens": int64(1000), "gen_ai.usage.output_tokens": int64(10),
	})
	h := newHarness(t, createDefaultConfig())
	md, _ := h.feed(b.td)
	costs, unpriced := 0, int64(0)
	sumPoints(md, MetricCost, func(pcommon.Map, pmetric.NumberDataPoint) { costs++ })
	sumPoints(md, MetricUnpriced, func(_ pcommon.Map, dp pmetric.NumberDataPoint) {
		unpriced += dp.IntValue()
		assert.Equal(t, "acme-large-9", attrStr(dp.Attributes(), "gen_ai.request.model"))
	})
	assert.Zero(t, costs, "no runagain.cost data point for an unknown model")
	assert.Equal(t, int64(1), unpriced)

	// The same model priced through configuration (the runagain_storage extension's pricing).
	h2 := newHarnessOn(t, createDefaultConfig(), withPrices(t, pricing.Config{Models: []pricing.Override{overrideFor("acme", "acme-large-9", 2, 8)}}))
	md, _ = h2.feed(b.td)
	got := 0.0
	sumPoints(md, MetricCost, func(_ pcommon.Map, dp pmetric.NumberDataPoint) { got += dp.DoubleValue() })
	assert.InDelta(t, (1000*2+10*8)/1e6, got, 1e-15)
}

func forEachSpanAttrs(rss ptrace.ResourceSpansSlice, fn func(pcommon.Map)) {
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			for k := 0; k < sss.At(j).Spans().Len(); k++ {
				fn(sss.At(j).Spans().At(k).Attributes())
			}
		}
	}
}

// num reads a recorded number whatever its JSON type became (Int, Double or a numeric string).
func num(v pcommon.Value) float64 {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		return float64(v.Int())
	case pcommon.ValueTypeDouble:
		return v.Double()
	}
	f, _ := strconv.ParseFloat(v.AsString(), 64)
	return f
}

func overrideFor(provider, model string, in, out float64) pricing.Override {
	return pricing.Override{Provider: provider, Model: model, InputMTok: in, OutputMTok: out}
}
