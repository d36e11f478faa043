// SPDX-License-Identifier: Apache-2.0

package genai

import (
	"encoding/json"
	"fmt"
)

// fromAnyAgent reads the output of an LLM call as any-agent (mozilla-ai/any-agent) records it:
// gen_ai.output holds the answer and gen_ai.output.type says its format (the corpus' any-agent
// traces, tests/assets/*_trace.json; the input is gen_ai.input.messages, read by fromSpanAttrs):
//   - "json" and a list of {"tool.name", "tool.args"} objects: the tool calls the model asked for,
//     one tool_call part each (tool.args a JSON string or a JSON value);
//   - "json" with any other JSON (a structured final answer): one text part, the recorded text;
//   - "text", or no type: one text part.
//
// Only the output side: any-agent records no other form of it. A "json" value that is not JSON
// is an error naming the attribute, and the text is still shown as recorded.
func fromAnyAgent(c *call) (in, out []Message, err error) {
	v, ok := c.attrs.Get(AttrAnyAgentOutput)
	if !ok {
		return nil, nil, nil
	}
	text := v.AsString()
	msg := Message{Role: "assistant", Parts: []Part{{Type: "text", Content: text}}}
	kind := ""
	if t, ok := c.attrs.Get(AttrAnyAgentOutputType); ok {
		kind = t.AsString()
	}
	if kind != "json" {
		return nil, []Message{msg}, nil
	}
	var calls []map[string]any
	if json.Unmarshal([]byte(text), &calls) == nil && len(calls) > 0 && isToolCallList(calls) {
		msg.Parts = msg.Parts[:0]
		for _, tc := range calls {
			name, _ := tc["tool.name"].(string)
			args := tc["tool.args"]
			if s, ok := args.(string); ok {
				args = JSONValue(s)
			}
			msg.Parts = append(msg.Parts, Part{Type: "tool_call", Name: name, Arguments: args})
		}
		return nil, []Message{msg}, nil
	}
	if !json.Valid([]byte(text)) {
		err = fmt.Errorf("attribute %s: %s says json, the value is not JSON", AttrAnyAgentOutput, AttrAnyAgentOutputType)
	}
	return nil, []Message{msg}, err
}

// isToolCallList reports whether every entry names a tool (any-agent's tool call list).
func isToolCallList(calls []map[string]any) bool {
	for _, tc := range calls {
		if _, ok := tc["tool.name"].(string); !ok {
			return false
		}
	}
	return true
}
