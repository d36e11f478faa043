// SPDX-License-Identifier: Apache-2.0

package diff

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// slowRuns is Runs with every fast path off: each side listed, every step's messages read, every
// pair compared in full.
func slowRuns(t *testing.T, va, vb *runview.View, opts Options) *Result {
	t.Helper()
	fastPaths = false
	defer func() { fastPaths = true }()
	r, err := Runs(va, vb, opts)
	require.NoError(t, err)
	return r
}

// sameAsSlow diffs a with b (and the View of a with itself) with the fast paths and without,
// and requires the two results to be the same JSON.
func sameAsSlow(t *testing.T, a, b *store.Run) *Result {
	t.Helper()
	va, err := runview.Build(context.Background(), a, runview.Options{})
	require.NoError(t, err)
	vb, err := runview.Build(context.Background(), b, runview.Options{})
	require.NoError(t, err)
	for _, p := range [][2]*runview.View{{va, vb}, {vb, va}, {va, va}} {
		fast, err := Runs(p[0], p[1], Options{})
		require.NoError(t, err)
		jf, _ := json.Marshal(fast)
		js, _ := json.Marshal(slowRuns(t, p[0], p[1], Options{}))
		require.JSONEq(t, string(js), string(jf))
	}
	r, err := Runs(va, vb, Options{})
	require.NoError(t, err)
	return r
}

func copyRun(r *store.Run) *store.Run {
	td := ptrace.NewTraces()
	r.Traces.CopyTo(td)
	lg := plog.NewLogs()
	r.Logs.CopyTo(lg)
	return &store.Run{TraceID: r.TraceID, Traces: td, Logs: lg, Tier: r.Tier}
}

// llmRun is a run of one LLM call with system instructions, tool definitions, a tool call and a
// span event, then the tool it called.
func llmRun() *store.Run {
	r := newRun(0xa)
	c := call("Checking.", "get_weather", map[string]any{"city": "Paris"})
	r.llm("gpt-4.1", []Message{text("user", "Weather in Paris?")}, []Message{c}, "tool_calls", 40, 12, 800)
	a := r.ss.At(1).Attributes()
	a.PutStr("gen_ai.system_instructions", `[{"type":"text","content":"Be brief."}]`)
	a.PutStr("gen_ai.tool.definitions", `[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]`)
	ev := r.ss.At(1).Events().AppendEmpty()
	ev.SetName("app.note")
	ev.Attributes().PutStr("note", "first")
	r.tool("get_weather", `{"city":"Paris"}`, `{"temperature":21,"sky":"clear"}`, 300, "")
	return r.run()
}

// TestFastPathsSameAsSlow: the diff with the fast paths (one reading of a pair recorded with the
// same content, messages not compared again, tool texts compared as bytes) is exactly the diff
// without them, for a copy of a run and for a copy changed in any one place the messages are
// read from; and every such change is reported, never "same".
func TestFastPathsSameAsSlow(t *testing.T) {
	a := llmRun()
	r := sameAsSlow(t, a, copyRun(a))
	assert.True(t, r.Identical, "an exact copy")
	assert.True(t, readOnce(t, a, copyRun(a)), "an exact copy is read once")

	llmAttrs := func(b *store.Run) ptrace.Span { return b.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(1) }
	toolAttrs := func(b *store.Run) ptrace.Span { return b.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(2) }
	for _, c := range []struct {
		name   string
		change func(b *store.Run)
		field  string
	}{
		{"one byte of the input", func(b *store.Run) {
			llmAttrs(b).Attributes().PutStr("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"Weather in Parix?"}]}]`)
		}, FieldInputMessages},
		{"output text", func(b *store.Run) {
			llmAttrs(b).Attributes().PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"Checking!"},{"type":"tool_call","id":"call_get_weather","name":"get_weather","arguments":{"city":"Paris"}}]}]`)
		}, FieldOutput},
		{"tool call arguments", func(b *store.Run) {
			llmAttrs(b).Attributes().PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"Checking."},{"type":"tool_call","id":"call_get_weather","name":"get_weather","arguments":{"city":"Lyon"}}]}]`)
		}, FieldToolArguments},
		{"system instructions", func(b *store.Run) {
			llmAttrs(b).Attributes().PutStr("gen_ai.system_instructions", `[{"type":"text","content":"Be brief!"}]`)
		}, FieldSystemInstructions},
		{"tool definitions", func(b *store.Run) {
			llmAttrs(b).Attributes().PutStr("gen_ai.tool.definitions", `[{"type":"function","name":"get_weather","parameters":{"type":"array"}}]`)
		}, FieldToolDefinitions},
		{"finish reasons", func(b *store.Run) {
			llmAttrs(b).Attributes().PutEmptySlice("gen_ai.response.finish_reasons").AppendEmpty().SetStr("stop")
		}, FieldFinishReason},
		{"the model answering, messages the same", func(b *store.Run) {
			llmAttrs(b).Attributes().PutStr("gen_ai.response.model", "gpt-4o")
		}, FieldModel},
		{"the model asked for, messages the same", func(b *store.Run) {
			llmAttrs(b).Attributes().PutStr("gen_ai.request.model", "gpt-4o")
		}, FieldRequestModel},
		{"a request parameter", func(b *store.Run) {
			llmAttrs(b).Attributes().PutDouble("gen_ai.request.temperature", 0.7)
		}, FieldRequestParameters},
		{"the tool result", func(b *store.Run) {
			toolAttrs(b).Attributes().PutStr("gen_ai.tool.call.result", `{"temperature":21,"sky":"rain"}`)
		}, FieldToolResult},
		{"the tool arguments", func(b *store.Run) {
			toolAttrs(b).Attributes().PutStr("gen_ai.tool.call.arguments", `{"city":"Lyon"}`)
		}, FieldToolArguments},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := copyRun(a)
			c.change(b)
			r := sameAsSlow(t, a, b)
			require.False(t, r.Identical)
			assert.Contains(t, r.First.Fields, c.field)
		})
	}
}

// readOnce reports whether the first LLM step of b shares the reading of a's (the fast path).
func readOnce(t *testing.T, a, b *store.Run) bool {
	t.Helper()
	va, err := runview.Build(context.Background(), a, runview.Options{})
	require.NoError(t, err)
	vb, err := runview.Build(context.Background(), b, runview.Options{})
	require.NoError(t, err)
	sa, _, err := runSteps(va)
	require.NoError(t, err)
	sb, _, err := runSteps(vb)
	require.NoError(t, err)
	ka, wa := keys(sa)
	kb, wb := keys(sb)
	readAll(sa, sb, align(ka, kb, wa, wb), callMessages)
	for i, s := range sa {
		if s.Kind == KindLLM {
			return s.calls == sb[i].calls
		}
	}
	return false
}

// TestReadOnceRequestDiffers: a --set model= rerun's LLM span is recorded exactly as the
// original's (the agent asked for the same model); only the exchange it sent differs. The pair
// is read once, and the model asked for is still the first difference.
func TestReadOnceRequestDiffers(t *testing.T) {
	a, b := rerunRuns(t)
	require.True(t, readOnce(t, a, b), "the LLM spans hold the same content")
	r := sameAsSlow(t, a, b)
	require.NotNil(t, r.First)
	assert.Equal(t, FieldRequestModel, r.First.Field)
}

// TestFastPathsCorpus: every pair of the framework corpus runs (and each with itself) diffs the
// same with the fast paths and without.
func TestFastPathsCorpus(t *testing.T) {
	runs := corpusRuns(t)
	for i := range runs {
		for j := i; j < len(runs); j++ {
			sameAsSlow(t, runs[i], runs[j])
		}
	}
}

// TestSameMessagesOtherBytes: what the diff compares is the messages, not their encoding. Two
// calls recorded with other bytes that read as the same messages (keys in another order, other
// spacing), and tool results that are the same JSON written differently, are the same step;
// an event no reader of messages knows (its bytes differ) makes no difference either.
func TestSameMessagesOtherBytes(t *testing.T) {
	a := llmRun()
	b := copyRun(a)
	spans := b.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	la := spans.At(1).Attributes()
	la.PutStr("gen_ai.input.messages", `[ {"parts":[{"content":"Weather in Paris?","type":"text"}], "role":"user"} ]`)
	la.PutStr("gen_ai.system_instructions", `[{"content":"Be brief.","type":"text"}]`)
	spans.At(1).Events().At(0).Attributes().PutStr("note", "second")
	spans.At(2).Attributes().PutStr("gen_ai.tool.call.result", `{"sky": "clear", "temperature": 21}`)
	vb, err := runview.Build(context.Background(), b, runview.Options{})
	require.NoError(t, err)
	va, err := runview.Build(context.Background(), a, runview.Options{})
	require.NoError(t, err)
	assert.False(t, sameRecord(va.Nodes[va.Steps[0].Node].Effective, vb.Nodes[vb.Steps[0].Node].Effective, nil, nil), "other bytes: read on both sides")
	r := sameAsSlow(t, a, b)
	assert.True(t, r.Identical, "%+v", r.First)
}

// TestSameRecord: the content compared before the messages are read: span attributes in order,
// span events' names and attributes, log records' event names, attributes and bodies; not the
// span's name, ids or times.
func TestSameRecord(t *testing.T) {
	base := func() (ptrace.Span, []plog.LogRecord) {
		sp := ptrace.NewSpan()
		sp.SetName("chat")
		sp.Attributes().PutStr("gen_ai.input.messages", `[]`)
		sp.Attributes().PutInt("n", 1)
		sp.Events().AppendEmpty().SetName("e")
		lr := plog.NewLogRecord()
		lr.SetEventName("gen_ai.user.message")
		lr.Body().SetStr(`{"content":"hi"}`)
		return sp, []plog.LogRecord{lr}
	}
	x, lx := base()
	for _, c := range []struct {
		name   string
		change func(ptrace.Span, []plog.LogRecord) []plog.LogRecord
		same   bool
	}{
		{"a copy", func(ptrace.Span, []plog.LogRecord) []plog.LogRecord { return nil }, true},
		{"another name and time", func(s ptrace.Span, _ []plog.LogRecord) []plog.LogRecord {
			s.SetName("other")
			s.SetStartTimestamp(5)
			return nil
		}, true},
		{"an attribute's value", func(s ptrace.Span, _ []plog.LogRecord) []plog.LogRecord {
			s.Attributes().PutStr("gen_ai.input.messages", `[ ]`)
			return nil
		}, false},
		{"an attribute's type", func(s ptrace.Span, _ []plog.LogRecord) []plog.LogRecord {
			s.Attributes().PutStr("n", "1")
			return nil
		}, false},
		{"attributes in another order", func(s ptrace.Span, _ []plog.LogRecord) []plog.LogRecord {
			s.Attributes().Remove("gen_ai.input.messages")
			s.Attributes().PutStr("gen_ai.input.messages", `[]`)
			return nil
		}, false},
		{"one more attribute", func(s ptrace.Span, _ []plog.LogRecord) []plog.LogRecord {
			s.Attributes().PutStr("x", "")
			return nil
		}, false},
		{"an event's name", func(s ptrace.Span, _ []plog.LogRecord) []plog.LogRecord {
			s.Events().At(0).SetName("f")
			return nil
		}, false},
		{"an event's attribute", func(s ptrace.Span, _ []plog.LogRecord) []plog.LogRecord {
			s.Events().At(0).Attributes().PutStr("k", "v")
			return nil
		}, false},
		{"a log body", func(_ ptrace.Span, l []plog.LogRecord) []plog.LogRecord {
			l[0].Body().SetStr(`{"content":"ho"}`)
			return nil
		}, false},
		{"a log's event name", func(_ ptrace.Span, l []plog.LogRecord) []plog.LogRecord {
			l[0].SetEventName("gen_ai.system.message")
			return nil
		}, false},
		{"a log attribute", func(_ ptrace.Span, l []plog.LogRecord) []plog.LogRecord {
			l[0].Attributes().PutStr("k", "v")
			return nil
		}, false},
		{"no logs", func(ptrace.Span, []plog.LogRecord) []plog.LogRecord { return []plog.LogRecord{} }, false},
	} {
		y, ly := base()
		if l := c.change(y, ly); l != nil {
			ly = l
		}
		assert.Equal(t, c.same, sameRecord(x, y, lx, ly), c.name)
	}
}
