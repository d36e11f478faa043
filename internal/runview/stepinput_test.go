// SPDX-License-Identifier: Apache-2.0

package runview

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/store"
)

func TestStepInputIsWhatTheModelSaw(t *testing.T) {
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	mk := func(id byte, start uint64, op string) ptrace.Span {
		s := spans.AppendEmpty()
		s.SetTraceID(pcommon.TraceID{1})
		s.SetSpanID(pcommon.SpanID{id})
		s.SetStartTimestamp(pcommon.Timestamp(start))
		s.Attributes().PutStr("gen_ai.operation.name", op)
		return s
	}
	// Inserted out of order: steps follow start time, tools are not steps.
	second := mk(3, 300, "chat")
	second.Attributes().PutStr("gen_ai.input.messages", "[{\"role\":\"user\",\n \"parts\":[]}]")
	second.Attributes().PutStr("gen_ai.system_instructions", `[{"type":"text","content":"be brief"}]`)
	for i := 0; i <= 10; i++ {
		second.Attributes().PutStr("llm.input_messages."+strconv.Itoa(i)+".message.role", "user")
	}
	mk(2, 200, "execute_tool")
	first := mk(1, 100, "chat")
	first.Attributes().PutStr("gen_ai.input.messages", "[]")
	run := &store.Run{TraceID: "01000000000000000000000000000000", Traces: td, Logs: plog.NewLogs()}

	v, err := Build(context.Background(), run, Options{})
	require.NoError(t, err)
	in, err := v.StepInput(2)
	require.NoError(t, err)
	assert.Equal(t, 2, in.Steps)
	assert.Equal(t, pcommon.SpanID{3}.String(), in.SpanID)
	assert.Equal(t, "[{\"role\":\"user\",\n \"parts\":[]}]", in.Input["gen_ai.input.messages"], "byte for byte")
	assert.Equal(t, []string{"gen_ai.system_instructions", "gen_ai.input.messages"}, in.Keys[:2])
	assert.Equal(t, "llm.input_messages.9.message.role", in.Keys[len(in.Keys)-2])
	assert.Equal(t, "llm.input_messages.10.message.role", in.Keys[len(in.Keys)-1])
	assert.Equal(t, genai.SourceAttributes, in.Messages.InputSource, "the semconv attribute wins over OpenInference")
	assert.Equal(t, []genai.Part{{Type: "text", Content: "be brief"}}, in.Messages.SystemInstructions)
	assert.Empty(t, in.MessagesError)

	_, err = v.StepInput(3)
	assert.ErrorContains(t, err, "1..2")
	_, err = v.StepInput(0)
	assert.Error(t, err)
}
