// SPDX-License-Identifier: Apache-2.0

package genai

// fromOpenInference reads llm.input_messages.N.message.* / llm.output_messages.N.message.*
// (OpenInference semantic conventions: role, content, contents.M.message_content.{type,text,
// image.image.url}, tool_calls.K.tool_call.{id,function.name,function.arguments}, tool_call_id,
// name) and llm.tools.N.tool.json_schema.
func fromOpenInference(c *call) (in, out []Message, err error) {
	cm, attrs := c.cm, c.attrs
	conv := func(tree map[string]any, def string) []Message {
		if tree == nil {
			return nil
		}
		msgs := []Message{}
		for _, e := range listOf(tree) {
			m, _ := e["message"].(map[string]any)
			if m == nil {
				continue
			}
			msg := Message{Role: str(m["role"]), Name: str(m["name"]), Parts: []Part{}}
			if msg.Role == "" {
				msg.Role = def
			}
			if msg.Role == "tool" {
				msg.Parts = append(msg.Parts, Part{Type: "tool_call_response", ID: str(m["tool_call_id"]), Response: m["content"]})
				msgs = append(msgs, msg)
				continue
			}
			// An assistant turn that only calls tools has no text: LangChain.js's instrumentation
			// writes its content as "" where OpenAI sends null, and "" is not a text part.
			if c, ok := m["content"].(string); ok && (c != "" || m["tool_calls"] == nil) {
				msg.Parts = append(msg.Parts, Part{Type: "text", Content: c})
			}
			for _, c := range listOf(m["contents"]) {
				mc, _ := c["message_content"].(map[string]any)
				if mc == nil {
					continue
				}
				switch str(mc["type"]) {
				case "image":
					msg.Parts = append(msg.Parts, Part{Type: "uri", Modality: "image", URI: str(sub(mc, "image", "image", "url"))})
				default:
					msg.Parts = append(msg.Parts, Part{Type: "text", Content: str(mc["text"])})
				}
			}
			for _, tc := range listOf(m["tool_calls"]) {
				t, _ := tc["tool_call"].(map[string]any)
				if t == nil {
					continue
				}
				p := Part{Type: "tool_call", ID: str(t["id"]), Name: str(sub(t, "function", "name"))}
				if a := sub(t, "function", "arguments"); a != nil {
					p.Arguments = JSONValue(a)
				}
				msg.Parts = append(msg.Parts, p)
			}
			msgs = append(msgs, msg)
		}
		return msgs
	}
	in = conv(flatTree(attrs, "llm.input_messages."), "user")
	out = conv(flatTree(attrs, "llm.output_messages."), "assistant")
	if (in != nil || out != nil) && cm.ToolDefinitions == nil {
		if tools := flatTree(attrs, "llm.tools."); tools != nil {
			defs := []any{}
			for _, t := range listOf(tools) {
				if s := sub(t, "tool", "json_schema"); s != nil {
					defs = append(defs, JSONValue(s))
				}
			}
			cm.ToolDefinitions = defs
		}
	}
	return in, out, nil
}
