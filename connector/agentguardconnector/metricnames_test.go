// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

import (
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/genai"
)

// TestMetricConventions: the default emits the semantic-conventions-genai v0.1.0 names for LLM
// calls; also_emit_previous adds the semconv 1.41 ones (dashboards on the old names keep
// working); release semconv-1.41 emits only those. Tool durations keep
// gen_ai.client.operation.duration in every release.
func TestMetricConventions(t *testing.T) {
	emitted := func(mc MetricConventionsConfig) []string {
		a := newAggregator(100, 0, mc.names())
		llm := &call{kind: genai.KindLLM, op: "chat", reqModel: "gpt-4o-mini", start: 1, end: 2e9,
			usage: genai.Usage{Input: 10, Output: 3}}
		a.recordCall(llm, 1)
		a.recordCall(&call{kind: genai.KindTool, op: "execute_tool", tool: "search", start: 1, end: 1e9}, 1)
		var names []string
		seen := map[string]bool{}
		for _, s := range a.series {
			if n := metricDefs[s.metric].name; !seen[n] && !strings.HasPrefix(n, "runagain.") {
				seen[n] = true
				names = append(names, n)
			}
		}
		sort.Strings(names)
		return names
	}
	assert.Equal(t, []string{MetricInferenceDuration, MetricInferenceInput, MetricInferenceOutput, MetricDuration},
		emitted(createDefaultConfig().MetricConventions), "default: genai-0.1 (tool duration on operation.duration)")
	assert.Equal(t, []string{MetricInferenceDuration, MetricInferenceInput, MetricInferenceOutput, MetricDuration, MetricTokenUsage},
		emitted(MetricConventionsConfig{Release: ConventionsGenAI01, AlsoEmitPrevious: true}))
	assert.Equal(t, []string{MetricDuration, MetricTokenUsage}, emitted(MetricConventionsConfig{Release: ConventionsSemconv141}))

	cfg := createDefaultConfig()
	cfg.MetricConventions.Release = "v1.42"
	err := cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "metric_conventions.release")
	cfg.MetricConventions = MetricConventionsConfig{Release: ConventionsSemconv141, AlsoEmitPrevious: true}
	err = cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "metric_conventions.also_emit_previous")
}
