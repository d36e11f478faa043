// SPDX-License-Identifier: Apache-2.0

package genai

import (
	"encoding/json"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// fromVercel reads the Vercel AI SDK attributes (ai.* telemetry, v4-v6): ai.prompt.messages
// ([{role, content: string | [{type: text|tool-call|tool-result|reasoning|image|file, ...}]}]),
// else ai.prompt ({system, prompt, messages}); ai.response.text, ai.response.object,
// ai.response.toolCalls, ai.response.reasoning, ai.response.finishReason; ai.prompt.tools.
func fromVercel(c *call) (in, out []Message, err error) {
	cm, attrs := c.cm, c.attrs
	var errs []error
	if v, ok := attrs.Get(AttrVercelPromptMessages); ok {
		raw, err := valueJSON(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("attribute %s: %w", AttrVercelPromptMessages, err))
		} else {
			in = vercelMessages(raw)
		}
	} else if v, ok := attrs.Get(AttrVercelPrompt); ok {
		raw, err := valueJSON(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("attribute %s: %w", AttrVercelPrompt, err))
		} else if p, ok := raw.(map[string]any); ok {
			in = []Message{}
			if s, ok := p["system"].(string); ok && cm.SystemInstructions == nil {
				cm.SystemInstructions = []Part{{Type: "text", Content: s}}
			}
			if s, ok := p["prompt"].(string); ok {
				in = append(in, Message{Role: "user", Parts: []Part{{Type: "text", Content: s}}})
			} else if p["prompt"] != nil {
				in = append(in, vercelMessages(p["prompt"])...)
			}
			if p["messages"] != nil {
				in = append(in, vercelMessages(p["messages"])...)
			}
		}
	}
	if in != nil && cm.ToolDefinitions == nil {
		if v, ok := attrs.Get(AttrVercelTools); ok && v.Type() == pcommon.ValueTypeSlice {
			defs := []any{}
			for i := 0; i < v.Slice().Len(); i++ {
				defs = append(defs, JSONValue(v.Slice().At(i).AsRaw()))
			}
			cm.ToolDefinitions = defs
		}
	}
	msg := Message{Role: "assistant", Parts: []Part{}}
	have := false
	if v, ok := attrs.Get(AttrVercelReasoning); ok && v.AsString() != "" {
		msg.Parts = append(msg.Parts, Part{Type: "reasoning", Content: v.AsString()})
		have = true
	}
	if v, ok := attrs.Get(AttrVercelResponseText); ok {
		msg.Parts = append(msg.Parts, Part{Type: "text", Content: v.AsString()})
		have = true
	} else if v, ok := attrs.Get(AttrVercelResponseObject); ok {
		msg.Parts = append(msg.Parts, Part{Type: "text", Content: v.AsString()})
		have = true
	}
	if v, ok := attrs.Get(AttrVercelToolCalls); ok {
		raw, err := valueJSON(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("attribute %s: %w", AttrVercelToolCalls, err))
		} else if arr, ok := raw.([]any); ok {
			for _, e := range arr {
				if tc, ok := e.(map[string]any); ok {
					msg.Parts = append(msg.Parts, vercelToolCall(tc))
				}
			}
		}
		have = true
	}
	if have {
		if v, ok := attrs.Get(AttrVercelFinishReason); ok {
			msg.FinishReason = v.AsString()
		}
		out = []Message{msg}
	}
	return in, out, errors.Join(errs...)
}

func vercelMessages(raw any) []Message {
	arr, ok := raw.([]any)
	if !ok {
		return messagesFrom(raw, "user")
	}
	out := []Message{}
	for _, e := range arr {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		msg := Message{Role: str(m["role"]), Parts: []Part{}}
		switch c := m["content"].(type) {
		case string:
			msg.Parts = append(msg.Parts, Part{Type: "text", Content: c})
		case []any:
			for _, pe := range c {
				p, ok := pe.(map[string]any)
				if !ok {
					continue
				}
				switch str(p["type"]) {
				case "text":
					msg.Parts = append(msg.Parts, Part{Type: "text", Content: str(p["text"])})
				case "reasoning":
					msg.Parts = append(msg.Parts, Part{Type: "reasoning", Content: str(p["text"])})
				case "tool-call":
					msg.Parts = append(msg.Parts, vercelToolCall(p))
				case "tool-result":
					resp := p["output"] // v5+: {type: "text"|"json"|..., value}
					if resp == nil {
						resp = p["result"] // v4
					} else if o, ok := resp.(map[string]any); ok {
						if val, ok := o["value"]; ok {
							resp = val
						}
					}
					msg.Parts = append(msg.Parts, Part{Type: "tool_call_response", ID: str(p["toolCallId"]), Response: resp})
				case "image":
					msg.Parts = append(msg.Parts, Part{Type: "blob", Modality: "image", MimeType: str(p["mimeType"]), Content: str(p["image"])})
				case "file":
					msg.Parts = append(msg.Parts, Part{Type: "blob", MimeType: firstStr(p["mediaType"], p["mimeType"]), Content: str(p["data"])})
				default:
					b, _ := json.Marshal(p)
					msg.Parts = append(msg.Parts, Part{Type: str(p["type"]), Content: string(b)})
				}
			}
		}
		out = append(out, msg)
	}
	return out
}

func vercelToolCall(tc map[string]any) Part {
	args, ok := tc["input"] // v5+
	if !ok {
		args = tc["args"] // v4
	}
	return Part{Type: "tool_call", ID: str(tc["toolCallId"]), Name: str(tc["toolName"]), Arguments: JSONValue(args)}
}
