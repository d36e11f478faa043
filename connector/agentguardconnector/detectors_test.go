// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/genai"
)

// Focused tests of each detector's rule, on calls built directly (no pipeline): each feeds the
// calls just below and just at the rule's threshold.

var callN uint64

// newTestCall returns a call of s at t0+at (ends then, started a second before) with attrs.
func newTestCall(s *session, kind genai.Kind, at time.Duration, attrs map[string]any) *call {
	callN++
	m := pcommon.NewMap()
	if err := m.FromRaw(attrs); err != nil {
		panic(err)
	}
	end := t0.Add(at)
	c := &call{s: s, kind: kind, attrs: m, service: s.service, agent: s.agent,
		ref: spanRef{traceID(1), spanID(callN)}, start: pcommon.NewTimestampFromTime(end.Add(-time.Second)), end: end.UnixNano()}
	if v, ok := m.Get(genai.AttrErrorType); ok {
		c.errType = v.Str()
	}
	c.tool = genai.ToolName(m)
	c.reqModel = genai.RequestModel(m)
	return c
}

func toolCall(s *session, at time.Duration, tool, args string) *call {
	return newTestCall(s, genai.KindTool, at, map[string]any{"gen_ai.tool.name": tool, "gen_ai.tool.call.arguments": args})
}

func evidenceOf(a *alert) map[string]any {
	out := map[string]any{}
	for _, e := range a.evidence {
		out[e.key] = e.value
	}
	return out
}

func TestLoopDetectorRepeatedToolCall(t *testing.T) {
	cfg := LoopConfig{Enabled: true, Repeats: 3, Window: time.Minute, MaxFingerprints: 64}
	d := newLoopDetector(cfg)
	s := &session{id: "s", service: "svc", agent: "a"}

	// Identical arguments up to key order and spacing: the third call within the window alerts.
	require.Nil(t, d.observe(toolCall(s, 0, "search", `{"q":"x","n":1}`)))
	require.Nil(t, d.observe(toolCall(s, time.Second, "search", `{"q":"y","n":1}`)), "other arguments are another call")
	require.Nil(t, d.observe(toolCall(s, 2*time.Second, "search", `{ "n": 1, "q": "x" }`)))
	third := toolCall(s, 3*time.Second, "search", `{"n":1,"q":"x"}`)
	a := d.observe(third)
	require.NotNil(t, a, "the third identical call within loop.window")
	assert.Equal(t, KindLoop, a.kind)
	assert.Equal(t, RuleRepeatedToolCall, a.rule)
	assert.Equal(t, kv{genai.AttrToolName, "search"}, a.subject)
	assert.Equal(t, third.ref, a.at)
	assert.Len(t, a.spans, 3)
	assert.Equal(t, int64(3), evidenceOf(a)["runagain.alert.count"])

	// One loop alert per tool and session.
	assert.Nil(t, d.observe(toolCall(s, 4*time.Second, "search", `{"n":1,"q":"x"}`)))
	// Another session has its own count.
	s2 := &session{id: "s2", service: "svc"}
	for i := range 2 {
		assert.Nil(t, d.observe(toolCall(s2, time.Duration(i)*time.Second, "search", `{"n":1,"q":"x"}`)))
	}
}

func TestLoopDetectorRepeatsMustFallWithinWindow(t *testing.T) {
	cfg := LoopConfig{Enabled: true, Repeats: 3, Window: time.Minute, MaxFingerprints: 64}
	d := newLoopDetector(cfg)
	s := &session{id: "s"}
	// 31 s apart: never three in one minute.
	for i := range 6 {
		require.Nil(t, d.observe(toolCall(s, time.Duration(i)*31*time.Second, "t", `{}`)), "call %d", i)
	}
	// 30 s apart: the third is exactly one window after the first, still within it.
	s = &session{id: "s2"}
	require.Nil(t, d.observe(toolCall(s, 0, "t", `{}`)))
	require.Nil(t, d.observe(toolCall(s, 30*time.Second, "t", `{}`)))
	assert.NotNil(t, d.observe(toolCall(s, 60*time.Second, "t", `{}`)))
}

func TestLoopDetectorRepeatedLLMRequest(t *testing.T) {
	cfg := LoopConfig{Enabled: true, Repeats: 2, Window: time.Minute, MaxFingerprints: 64}
	d := newLoopDetector(cfg)
	s := &session{id: "s"}
	llm := func(at time.Duration, model, input string) *call {
		return newTestCall(s, genai.KindLLM, at, map[string]any{"gen_ai.request.model": model, "gen_ai.input.messages": input})
	}
	require.Nil(t, d.observe(llm(0, "m1", `[{"role":"user","parts":[{"type":"text","content":"hi"}]}]`)))
	require.Nil(t, d.observe(llm(time.Second, "m2", `[{"role":"user","parts":[{"type":"text","content":"hi"}]}]`)), "another model")
	require.Nil(t, d.observe(llm(2*time.Second, "m1", `[{"role":"user","parts":[{"type":"text","content":"bye"}]}]`)), "another request")
	a := d.observe(llm(3*time.Second, "m1", `[{"role":"user","parts":[{"type":"text","content":"hi"}]}]`))
	require.NotNil(t, a)
	assert.Equal(t, RuleRepeatedLLMRequest, a.rule)
	assert.Equal(t, kv{genai.AttrRequestModel, "m1"}, a.subject)
	// Without recorded input there is nothing to compare.
	assert.Nil(t, d.observe(newTestCall(s, genai.KindLLM, 4*time.Second, map[string]any{"gen_ai.request.model": "m3"})))
	assert.Nil(t, d.observe(newTestCall(s, genai.KindLLM, 5*time.Second, map[string]any{"gen_ai.request.model": "m3"})))
}

func TestLoopDetectorConsecutiveTool(t *testing.T) {
	cfg := LoopConfig{Enabled: true, Repeats: 5, Window: time.Minute, ConsecutiveTool: 3, MaxFingerprints: 64}
	d := newLoopDetector(cfg)
	s := &session{id: "s"}
	// Alternating tools never make a run of three.
	for i := range 8 {
		require.Nil(t, d.observe(toolCall(s, time.Duration(i)*time.Second, []string{"a", "b"}[i%2], fmt.Sprintf(`{"i":%d}`, i))))
	}
	// b was last: two more b calls make three in a row, with other arguments each time.
	require.Nil(t, d.observe(toolCall(s, 10*time.Second, "b", `{"i":10}`)))
	a := d.observe(toolCall(s, 11*time.Second, "b", `{"i":11}`))
	require.NotNil(t, a)
	assert.Equal(t, RuleConsecutiveTool, a.rule)
	assert.Len(t, a.spans, 3)
	assert.Equal(t, int64(3), evidenceOf(a)["runagain.alert.count"])
	assert.Nil(t, d.observe(toolCall(s, 12*time.Second, "b", `{"i":12}`)), "once per tool and session")

	off := newLoopDetector(LoopConfig{Enabled: true, Repeats: 5, Window: time.Minute, MaxFingerprints: 64})
	s = &session{id: "s2"}
	for i := range 20 {
		require.Nil(t, off.observe(toolCall(s, time.Duration(i)*time.Second, "b", fmt.Sprintf(`{"i":%d}`, i))), "consecutive_tool 0 is off")
	}
}

func TestCostSpikeDetector(t *testing.T) {
	cfg := CostSpikeConfig{Enabled: true, Factor: 3, MinSessions: 4, MinCost: 0.01, BaselineSessions: 100, RelativeAccuracy: 0.01, MaxGroups: 10}
	d, err := newCostSpikeDetector(cfg)
	require.NoError(t, err)
	priced := func(s *session, cost float64) *call {
		s.cost += cost
		s.priced++
		c := newTestCall(s, genai.KindLLM, 0, map[string]any{})
		c.costed, c.cost = true, cost
		return c
	}
	ended := func(agent string, cost float64, n int) {
		for range n {
			d.sessionEnded(&session{agent: agent, service: "svc", cost: cost, priced: 1})
		}
	}
	ended("a", 0.01, 3)
	d.sessionEnded(&session{agent: "a", service: "svc", cost: 5}) // no priced call: not in the baseline
	ended("b", 0.01, 10)                                          // another agent's group

	s := &session{id: "s", agent: "a", service: "svc"}
	require.Nil(t, d.observe(priced(s, 1)), "three ended sessions: below min_sessions")
	ended("a", 0.01, 1)
	require.Nil(t, d.observe(priced(&session{id: "low", agent: "a", service: "svc"}, 0.029)), "below factor x median")
	require.Nil(t, d.observe(priced(&session{id: "tiny", agent: "a", service: "svc"}, 0.009)), "below min_cost")
	unpriced := newTestCall(&session{id: "u", agent: "a", service: "svc", cost: 1, priced: 1}, genai.KindLLM, 0, map[string]any{})
	require.Nil(t, d.observe(unpriced), "only a priced call can raise it")

	a := d.observe(priced(s, 0))
	require.NotNil(t, a, "cost 1 against a median of 0.01 with four ended sessions")
	assert.Equal(t, KindCostSpike, a.kind)
	assert.Equal(t, "s", a.session)
	ev := evidenceOf(a)
	assert.InEpsilon(t, 0.01, ev["runagain.alert.median_cost"], 0.02)
	assert.Equal(t, int64(4), ev["runagain.alert.baseline_sessions"])
	assert.Equal(t, 1.0, ev["runagain.alert.session_cost"])
	assert.Nil(t, d.observe(priced(s, 1)), "once per session")

	require.NotNil(t, d.observe(priced(&session{id: "high", agent: "a", service: "svc"}, 0.032)), "just above factor x median")
	require.Nil(t, d.observe(priced(&session{id: "other", agent: "c", service: "svc"}, 1)), "no baseline for agent c")
}

func TestToolErrorDetector(t *testing.T) {
	cfg := ToolErrorsConfig{Enabled: true, Window: time.Minute, MinCalls: 4, Threshold: 0.5, BaselineFactor: 2, BaselineHalfLife: time.Hour, MaxTools: 10}
	s := &session{id: "s", service: "svc", agent: "a"}
	tool := func(at time.Duration, name string, fail bool) *call {
		attrs := map[string]any{"gen_ai.tool.name": name}
		if fail {
			attrs["error.type"] = "timeout"
		}
		return newTestCall(s, genai.KindTool, at, attrs)
	}
	d, err := newToolErrorDetector(cfg)
	require.NoError(t, err)
	// One failure in four calls: 25 %, below the threshold.
	for i, fail := range []bool{false, false, false, true} {
		require.Nil(t, d.observe(tool(time.Duration(i)*time.Second, "t", fail)))
	}
	// Then another failure: 2 of 5 (40 %), still below; a third: 3 of 6 (50 %) alerts.
	require.Nil(t, d.observe(tool(4*time.Second, "t", true)))
	a := d.observe(tool(5*time.Second, "t", true))
	require.NotNil(t, a)
	assert.Equal(t, KindToolErrorSpike, a.kind)
	assert.Equal(t, kv{genai.AttrToolName, "t"}, a.subject)
	assert.Len(t, a.hits, 3, "the failed calls in the window")
	ev := evidenceOf(a)
	assert.Equal(t, int64(6), ev["runagain.alert.calls"])
	assert.Equal(t, int64(3), ev["runagain.alert.errors"])
	assert.Nil(t, d.observe(tool(6*time.Second, "t", true)), "at most one alert per window")
	assert.Nil(t, d.observe(tool(7*time.Second, "u", true)), "each tool counts apart")

	// Too few calls: three failures of three.
	d, err = newToolErrorDetector(cfg)
	require.NoError(t, err)
	for i := range 3 {
		require.Nil(t, d.observe(tool(time.Duration(i)*time.Second, "t", true)), "below min_calls")
	}
	require.NotNil(t, d.observe(tool(3*time.Second, "t", true)), "the fourth call reaches min_calls")

	// A tool that always failed: its baseline rate (1.0) times baseline_factor is above any
	// window rate, so a window of failures is its normal state, not a spike.
	d, err = newToolErrorDetector(cfg)
	require.NoError(t, err)
	for i := range 60 { // one failure per second for a minute: at most one alert in that minute
		d.observe(tool(time.Duration(i)*time.Second, "flaky", true))
	}
	for i := range 20 { // later, after the window has folded into the baseline
		assert.Nil(t, d.observe(tool(10*time.Minute+time.Duration(i)*time.Second, "flaky", true)), "call %d", i)
	}
}

func TestContextPressureDetector(t *testing.T) {
	cfg := ContextPressureConfig{Enabled: true, Window: time.Minute, MinResponses: 4, Threshold: 0.5, FinishReasons: []string{"length"}, MaxModels: 10}
	d, err := newContextPressureDetector(cfg)
	require.NoError(t, err)
	s := &session{id: "s", service: "svc"}
	resp := func(at time.Duration, reason string) *call {
		attrs := map[string]any{"gen_ai.request.model": "m"}
		if reason != "" {
			attrs["gen_ai.response.finish_reasons"] = []any{reason}
		}
		return newTestCall(s, genai.KindLLM, at, attrs)
	}
	// Without finish reasons a response does not count at all.
	for i := range 10 {
		require.Nil(t, d.observe(resp(time.Duration(i)*time.Millisecond, "")))
	}
	// Two truncated of four: a share of 0.5 is not above the threshold.
	for i, r := range []string{"stop", "length", "stop", "length"} {
		require.Nil(t, d.observe(resp(time.Duration(i+1)*time.Second, r)), "response %d", i)
	}
	require.Nil(t, d.observe(newTestCall(s, genai.KindTool, 5*time.Second, map[string]any{"gen_ai.tool.name": "x", "gen_ai.response.finish_reasons": []any{"length"}})), "a tool call is not a response")
	// A third: 3 of 5.
	a := d.observe(resp(6*time.Second, "length"))
	require.NotNil(t, a)
	assert.Equal(t, KindContextPressure, a.kind)
	assert.Equal(t, kv{genai.AttrRequestModel, "m"}, a.subject)
	assert.Len(t, a.hits, 3)
	assert.Equal(t, int64(5), evidenceOf(a)["runagain.alert.responses"])
	assert.Nil(t, d.observe(resp(7*time.Second, "length")), "at most one alert per window")
	// Once the window has passed, it can alert again.
	for i := range 4 {
		d.observe(resp(3*time.Minute+time.Duration(i)*time.Second, "length"))
	}
	var again *alert
	for i := range 4 {
		if a := d.observe(resp(5*time.Minute+time.Duration(i)*time.Second, "length")); a != nil {
			again = a
		}
	}
	assert.NotNil(t, again)
}
