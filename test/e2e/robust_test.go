// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestClockSkewAndUnfinishedSpansClamped: a span whose end is 0 (never ended) and one whose end
// is before its start show a duration of 0 flagged with the reason, never -2562047h; the run's
// duration stays that of its sane spans, in `show` and in `sessions`.
func TestClockSkewAndUnfinishedSpansClamped(t *testing.T) {
	c := collectortest.Start(t, collectortest.Options{})
	r := newRun(2, "skewed-agent")
	r.span(1, 0, "invoke_agent", 0, 1000, map[string]any{"gen_ai.operation.name": "invoke_agent"})
	r.span(2, 1, "chat unfinished", 100, 0, chatAttrs(10, 0, "stop")).SetEndTimestamp(0)
	skew := r.span(3, 1, "execute_tool skewed", 200, 0, map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"})
	skew.SetEndTimestamp(skew.StartTimestamp() - 5_000_000) // 5 ms before its start
	sendOTLP(t, c, r.td, plog.NewLogs())
	waitShow(t, c, r.id(), 3, 0)

	show := cli(t, c, "show", r.id())
	assert.NotContains(t, show, "-2562047h")
	assert.NotContains(t, show, "-5ms")
	assert.Contains(t, show, "duration 1s  spans 3")
	assert.Contains(t, show, "▸ [llm] chat unfinished  +100ms  0s  Unset  [duration clamped to 0: unfinished]")
	assert.Contains(t, show, "▸ [tool] execute_tool skewed  +200ms  0s  Unset  [duration clamped to 0: clock skew]")

	var view struct {
		Spans []struct {
			Name         string  `json:"name"`
			DurationMS   float64 `json:"duration_ms"`
			DurationNote string  `json:"duration_note"`
		} `json:"spans"`
	}
	require.NoError(t, json.Unmarshal([]byte(cli(t, c, "show", "--json", r.id())), &view))
	require.Len(t, view.Spans, 3)
	for _, s := range view.Spans[1:] {
		assert.Zero(t, s.DurationMS, s.Name)
		assert.NotEmpty(t, s.DurationNote, s.Name)
	}

	var rows []store.RunSummary
	require.NoError(t, json.Unmarshal([]byte(cli(t, c, "sessions", "--json")), &rows))
	require.Len(t, rows, 1)
	assert.Equal(t, time.Second, rows[0].Duration())
	assert.Contains(t, cli(t, c, "sessions"), " 1s ")
}

// TestRedeliveredSpanCountedOnce: the same span delivered twice (an OTLP client retrying after a
// lost acknowledgement) is stored once and agent_guard counts its cost and tokens once: 1,000,000
// input tokens of gpt-4o-mini at $0.15 per million (genai-prices) is $0.15, not $0.30.
func TestRedeliveredSpanCountedOnce(t *testing.T) {
	promPort := collectortest.FreePort(t)
	c := collectortest.Start(t, collectortest.Options{Env: []string{"RUNAGAIN_PROMETHEUS_ENDPOINT=127.0.0.1:" + itoa(promPort)}})
	r := newRun(3, "retrying-agent")
	r.span(1, 0, "chat gpt-4o-mini", 0, 500, map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
		"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 1_000_000, "gen_ai.usage.output_tokens": 0})
	again := ptrace.NewTraces()
	r.td.CopyTo(again)
	sendOTLP(t, c, r.td, plog.NewLogs())
	sendOTLP(t, c, again, plog.NewLogs())
	// A later span proves both deliveries were processed before the metric is read.
	marker := newRun(4, "retrying-agent")
	marker.span(1, 0, "chat gpt-4o-mini", 0, 500, map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
		"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 2_000_000, "gen_ai.usage.output_tokens": 0})
	sendOTLP(t, c, marker.td, plog.NewLogs())

	var cost float64
	var metrics string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		cost, metrics = promValue(t, promPort, "runagain_cost_USD_total")
		if cost >= 0.45-1e-9 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	assert.InDelta(t, 0.15+0.30, cost, 1e-9, "the redelivered span is counted once:\n%s", metrics)
	tokens, _ := promValue(t, promPort, "gen_ai_client_inference_usage_input_tokens_total")
	assert.InDelta(t, 3_000_000.0, tokens, 0.5, "input tokens counted once per span")

	rows := waitForSpans(t, c, 2)
	assert.Len(t, rows, 2, "each run stored once")
}

// TestNamesRedacted: a span named after a person's e-mail address, its event name, and a Map log
// body holding the address are stored redacted, like its attributes.
func TestNamesRedacted(t *testing.T) {
	const email = "jane.doe@example.com"
	c := collectortest.Start(t, collectortest.Options{})
	r := newRun(5, "support-agent")
	s := r.span(1, 0, "chat for "+email, 0, 500, chatAttrs(5, 5, "stop"))
	s.Events().AppendEmpty().SetName("escalated " + email)
	s.Status().SetMessage("refused for " + email)
	r.log(1, 0, "gen_ai.user.message", map[string]any{"content": "I am " + email})
	sendOTLP(t, c, r.td, r.ld)
	waitShow(t, c, r.id(), 1, 1)

	for _, out := range []string{cli(t, c, "show", r.id()), cli(t, c, "show", "--json", r.id()), cli(t, c, "show", r.id(), "--step", "1")} {
		assert.NotContains(t, out, email)
	}
	show := cli(t, c, "show", r.id())
	assert.Contains(t, show, "▸ [llm] chat for ")
	assert.Contains(t, show, "event escalated ")
	assert.Regexp(t, `runagain\.redaction\.count: 3\b`, show, "name, event name and status message")
	step := cli(t, c, "show", r.id(), "--step", "1")
	assert.Contains(t, step, "--- user\nI am ")
	assert.False(t, strings.Contains(step, "map["))
}
