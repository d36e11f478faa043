// SPDX-License-Identifier: Apache-2.0

package genai

import (
	"strings"
)

// fromOpenLLMetry reads gen_ai.prompt.N.{role,content,tool_call_id,tool_calls.K.{id,name,arguments}}
// and gen_ai.completion.N.{role,content,finish_reason,tool_calls.K.*} (Traceloop OpenLLMetry), and
// llm.request.functions.N.{name,description,parameters} as tool definitions.
func fromOpenLLMetry(c *call) (in, out []Message, err error) {
	cm, attrs := c.cm, c.attrs
	conv := func(tree map[string]any, def string) []Message {
		if tree == nil {
			return nil
		}
		msgs := []Message{}
		for _, m := range listOf(tree) {
			mm := map[string]any{"role": m["role"], "content": m["content"], "tool_call_id": m["tool_call_id"],
				"finish_reason": m["finish_reason"], "name": m["name"]}
			if mm["role"] == nil {
				mm["role"] = def
			}
			if tcs := listOf(m["tool_calls"]); tcs != nil {
				arr := make([]any, len(tcs))
				for i, tc := range tcs {
					arr[i] = tc
				}
				mm["tool_calls"] = arr
			}
			if s, ok := mm["content"].(string); ok {
				// Multimodal content is sent as JSON text of a parts array; Koog writes an
				// assistant's tool calls as the content, JSON text of OpenAI tool_calls
				// ([{"function": {name, arguments}, "id", "type"}]), under role "tool" in a prompt.
				if t := strings.TrimSpace(s); strings.HasPrefix(t, "[{") {
					if d, err := decodeJSON(t); err == nil {
						if toolCallList(d) && mm["tool_calls"] == nil {
							role := mm["role"]
							msg := messageFromMap(map[string]any{"role": "assistant", "tool_calls": d, "finish_reason": mm["finish_reason"]}, def)
							msg.Role = str(role) // as recorded
							msgs = append(msgs, msg)
							continue
						}
						if mm["role"] != "tool" {
							mm["content"] = d
						}
					}
				}
			}
			msgs = append(msgs, messageFromMap(mm, def))
		}
		return msgs
	}
	in = conv(flatTree(attrs, AttrLegacyPrompt+"."), "user")
	out = conv(flatTree(attrs, AttrLegacyCompletion+"."), "assistant")
	if (in != nil || out != nil) && cm.ToolDefinitions == nil {
		if fns := flatTree(attrs, "llm.request.functions."); fns != nil {
			defs := []any{}
			for _, f := range listOf(fns) {
				d := map[string]any{"type": "function", "name": f["name"]}
				if f["description"] != nil {
					d["description"] = f["description"]
				}
				if f["parameters"] != nil {
					d["parameters"] = JSONValue(f["parameters"])
				}
				defs = append(defs, d)
			}
			cm.ToolDefinitions = defs
		}
	}
	return in, out, nil
}

// toolCallList reports whether d is a non-empty array of OpenAI tool calls ({"type": "function",
// "function": {"name", ...}}).
func toolCallList(d any) bool {
	arr, ok := d.([]any)
	if !ok || len(arr) == 0 {
		return false
	}
	for _, e := range arr {
		m, ok := e.(map[string]any)
		if !ok {
			return false
		}
		if fn, ok := m["function"].(map[string]any); !ok || str(fn["name"]) == "" {
			return false
		}
	}
	return true
}
