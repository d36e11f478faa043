// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/runview"
)

// TestPrintStepNamesUnreadAttribute: a side held in a form no dialect reads is never printed as
// "0 messages": the step names the attribute and the reason, and prints the attribute as recorded.
func TestPrintStepNamesUnreadAttribute(t *testing.T) {
	in := &runview.StepInput{Step: 1, Steps: 1, SpanID: "0102030405060708", Name: "chat",
		Messages: genai.CallMessages{Input: []genai.Message{}, Output: []genai.Message{},
			Unread: []genai.Unread{
				{Side: "input", Attribute: "gen_ai.input.messages", Reason: "attribute gen_ai.input.messages: invalid JSON: unexpected EOF"},
				{Side: "output", Attribute: "traceloop.entity.output", Reason: "no known message form"},
			}},
		Keys: []string{"gen_ai.input.messages"}, Raw: map[string]string{"gen_ai.input.messages": `[{"role": "user",`},
		Unread: map[string]string{"gen_ai.input.messages": `[{"role": "user",`, "traceloop.entity.output": `{"answer": 42}`}}
	var b bytes.Buffer
	require.NoError(t, printStep(&b, in, false))
	out := b.String()
	assert.NotContains(t, out, "0 messages")
	assert.Contains(t, out, "=== input: not read: attribute gen_ai.input.messages holds it in a form runagain does not read (attribute gen_ai.input.messages: invalid JSON: unexpected EOF)")
	assert.Contains(t, out, "=== output: not read: attribute traceloop.entity.output holds it in a form runagain does not read (no known message form)")
	assert.Contains(t, out, "=== traceloop.entity.output (as recorded)\n{\"answer\": 42}")
	assert.Contains(t, out, "=== gen_ai.input.messages\n[{\"role\": \"user\",")
}
