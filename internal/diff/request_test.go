// SPDX-License-Identifier: Apache-2.0

package diff

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/store"
)

// rerunRuns are an instrumented agent's run (its SDK span says gpt-4o-mini, temperature 0.2,
// and so does the body it sent) and a rerun of it with --set model=gpt-4.1: the SDK span still
// says what the agent asked for, the recorded exchange under it carries the edited body, and the
// upstream answered as gpt-4o-mini both times.
func rerunRuns(t *testing.T) (*store.Run, *store.Run) {
	t.Helper()
	build := func(tid byte, bodyModel string) *runBuilder {
		b := newRun(tid)
		b.llm("gpt-4o-mini", []Message{text("user", "Weather in Paris?")}, []Message{text("assistant", "Sunny.")}, "stop", 10, 2, 100)
		llm := b.ss.At(b.ss.Len() - 1)
		llm.Attributes().PutStr("gen_ai.response.model", "gpt-4o-mini")
		llm.Attributes().PutDouble("gen_ai.request.temperature", 0.2)
		ex := &fixture.Exchange{Method: http.MethodPost, URL: "https://api.openai.com/v1/chat/completions", Status: 200,
			RequestHeader: http.Header{"Content-Type": {"application/json"}}, ResponseHeader: http.Header{"Content-Type": {"application/json"}},
			RequestBody:  []byte(`{"model":"` + bodyModel + `","temperature":0.2,"tool_choice":"auto","tools":[{"type":"function","function":{"name":"weather"}}],"messages":[]}`),
			ResponseBody: []byte(`{"model":"gpt-4o-mini","choices":[]}`), Source: "recorded",
			Start: llm.StartTimestamp().AsTime(), End: llm.EndTimestamp().AsTime()}
		sp := b.ss.AppendEmpty()
		fixture.ToSpan(ex, sp)
		sp.SetTraceID(b.tid)
		sp.SetSpanID([8]byte{tid, 0xee})
		sp.SetParentSpanID(llm.SpanID())
		return b
	}
	a := build(0xa, "gpt-4o-mini").run()
	rb := build(0xb, "gpt-4.1")
	root := rb.ss.At(0).Attributes()
	root.PutStr(attrRerunOriginal, a.TraceID)
	root.PutEmptySlice(attrRerunChanges).AppendEmpty().SetStr("model=gpt-4.1")
	return a, rb.run()
}

// TestRerunRequestModel: the diff of a --set model= rerun names the changes first and the model
// asked for on both sides (the body sent, over the SDK's attribute), as request_model.
func TestRerunRequestModel(t *testing.T) {
	a, b := rerunRuns(t)
	r, err := runsOf(a, b, Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"model=gpt-4.1"}, r.Changes)
	require.NotNil(t, r.B.Rerun)
	assert.Equal(t, a.TraceID, r.B.Rerun.OriginalTraceID)
	assert.Nil(t, r.A.Rerun)
	require.Len(t, r.Pairs, 1)
	p := r.Pairs[0]
	assert.Equal(t, "gpt-4o-mini", p.A.Request[ReqModel])
	assert.Equal(t, "gpt-4.1", p.B.Request[ReqModel], "the body sent wins over the SDK span")
	assert.Equal(t, "0.2", p.B.Request[ReqTemperature])
	assert.Equal(t, "auto", p.B.Request[ReqToolChoice])
	assert.Equal(t, "weather", p.B.Request[ReqTools])
	assert.Equal(t, OpChanged, p.Op)
	require.NotEmpty(t, p.Differences)
	assert.Equal(t, Difference{Field: FieldRequestModel, Summary: "request model gpt-4o-mini -> gpt-4.1", A: "gpt-4o-mini", B: "gpt-4.1"}, p.Differences[0])
	assert.Equal(t, FieldRequestModel, r.First.Field)
	assert.Equal(t, "step 1 (llm call 1 chat gpt-4o-mini): request model gpt-4o-mini -> gpt-4.1", r.First.Text)

	var txt bytes.Buffer
	require.NoError(t, WriteText(&txt, r, false))
	lines := bytes.Split(txt.Bytes(), []byte("\n"))
	assert.Equal(t, "b is a rerun of a with: model=gpt-4.1", string(lines[2]), "the changes come right after the header")
	assert.Contains(t, txt.String(), "  request a: model gpt-4o-mini · temperature 0.2 · tool choice auto · tools weather\n")
	assert.Contains(t, txt.String(), "  request b: model gpt-4.1 · temperature 0.2 · tool choice auto · tools weather\n")

	// A temperature changed on the span only (no exchange recorded) is a request parameter.
	a2, b2 := newRun(1), newRun(2)
	a2.llm("m", nil, nil, "stop", 1, 1, 10)
	b2.llm("m", nil, nil, "stop", 1, 1, 10)
	a2.ss.At(1).Attributes().PutDouble("gen_ai.request.top_p", 1)
	b2.ss.At(1).Attributes().PutDouble("gen_ai.request.top_p", 0.5)
	r, err = runsOf(a2.run(), b2.run(), Options{})
	require.NoError(t, err)
	assert.Nil(t, r.Changes)
	assert.Equal(t, []string{FieldRequestParameters}, r.First.Fields)
	assert.Equal(t, "request parameters differ: top_p 1 -> 0.5", r.Pairs[0].Differences[0].Summary)
}
