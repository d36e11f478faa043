// SPDX-License-Identifier: Apache-2.0

package genai

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Attributes holding a provider's request and response bodies, or a tool's own copy of them.
const (
	AttrOpenInferenceInputMime  = "input.mime_type"  // "application/json" or "text/plain"
	AttrOpenInferenceOutputMime = "output.mime_type" // idem for output.value
)

// fromOpenInferenceValues reads OpenInference input.value / output.value, which instrumentations
// without llm.input_messages.* / llm.output_messages.* (Agno, some LlamaIndex and smolagents
// versions) fill with the provider's request and response bodies (bodyMessages) or plain text.
func fromOpenInferenceValues(c *call) (in, out []Message, err error) {
	in = valueMessages(c, AttrOpenInferenceInputValue, AttrOpenInferenceInputMime, "user")
	out = valueMessages(c, AttrOpenInferenceOutputValue, AttrOpenInferenceOutputMime, "assistant")
	return in, out, nil
}

// fromLangfuseFields reads langfuse.observation.input / .output: what a Langfuse SDK records (and
// runagain's Langfuse importer keeps from an observation's own input and output fields), a JSON
// message list (OpenAI or LangChain shapes), one message, a provider body, or plain text.
func fromLangfuseFields(c *call) (in, out []Message, err error) {
	in = valueMessages(c, AttrLangfuseInput, "", "user")
	out = valueMessages(c, AttrLangfuseOutput, "", "assistant")
	return in, out, nil
}

// valueMessages reads one text-or-JSON attribute as messages; nil when absent or empty.
func valueMessages(c *call, key, mimeKey, def string) []Message {
	v, ok := c.attrs.Get(key)
	if !ok {
		return nil
	}
	s := v.AsString()
	if strings.TrimSpace(s) == "" {
		return nil
	}
	text := false
	if mimeKey != "" {
		if m, ok := c.attrs.Get(mimeKey); ok && strings.HasPrefix(m.AsString(), "text/") {
			text = true
		}
	}
	if !text && v.Type() == pcommon.ValueTypeStr {
		if raw, err := decodeJSON(s); err == nil {
			if msgs := bodyMessages(c.cm, raw, def); len(msgs) > 0 {
				return msgs
			}
		}
	} else if !text {
		if msgs := bodyMessages(c.cm, v.AsRaw(), def); len(msgs) > 0 {
			return msgs
		}
	}
	return []Message{{Role: def, Parts: []Part{{Type: "text", Content: s}}}}
}

// bodyMessages converts a decoded request or response body, or a message list, to messages:
//
//	{"messages": [...], "system": ...}        chat request (OpenAI, Anthropic; LangChain inputs)
//	{"choices": [{"message"|"text", "finish_reason"}]}  OpenAI chat / completions response
//	{"role", "content": [...]}                one message (Anthropic response: text, tool_use)
//	{"candidates": [{"content": {"parts"}}]}  Gemini response; {"contents": [...]} Gemini request
//	{"output": [...]} / {"input": ...}        OpenAI Responses API response / request
//	[...] or "text"                           a message list, or one text
//
// System instructions found in a request (Anthropic system, Gemini systemInstruction) are set on
// cm when unset. nil when raw holds none of these.
func bodyMessages(cm *CallMessages, raw any, def string) []Message {
	switch x := raw.(type) {
	case []any:
		if len(x) == 1 {
			if m, ok := x[0].(map[string]any); ok && len(m) > 0 && m["role"] == nil && m["type"] == nil && m["parts"] == nil {
				return bodyMessages(cm, m, def) // a one-element list around a body
			}
		}
		return messagesFrom(x, def)
	case string:
		return []Message{{Role: def, Parts: []Part{{Type: "text", Content: x}}}}
	case map[string]any:
		if cm.SystemInstructions == nil {
			if s := x["system"]; s != nil {
				cm.SystemInstructions = systemParts(s)
			} else if si, ok := x["systemInstruction"].(map[string]any); ok {
				cm.SystemInstructions = geminiContent(si, "system").Parts
			}
		}
		switch {
		case x["messages"] != nil:
			return bodyMessages(cm, x["messages"], def)
		case x["choices"] != nil:
			cs, _ := x["choices"].([]any)
			out := []Message{}
			for _, e := range cs {
				ch, ok := e.(map[string]any)
				if !ok {
					continue
				}
				var msg Message
				if m, ok := ch["message"].(map[string]any); ok {
					msg = messageFromMap(m, "assistant")
				} else {
					msg = Message{Role: "assistant", Parts: []Part{{Type: "text", Content: str(ch["text"])}}}
				}
				if fr := str(ch["finish_reason"]); fr != "" {
					msg.FinishReason = fr
				}
				out = append(out, msg)
			}
			return out
		case x["candidates"] != nil:
			cs, _ := x["candidates"].([]any)
			out := []Message{}
			for _, e := range cs {
				if ch, ok := e.(map[string]any); ok {
					ct, _ := ch["content"].(map[string]any)
					msg := geminiContent(ct, "model")
					msg.FinishReason = str(ch["finishReason"])
					out = append(out, msg)
				}
			}
			return out
		case x["contents"] != nil:
			cs, _ := x["contents"].([]any)
			out := []Message{}
			for _, e := range cs {
				if ct, ok := e.(map[string]any); ok {
					out = append(out, geminiContent(ct, def))
				}
			}
			return out
		case x["role"] != nil || x["parts"] != nil || (x["content"] != nil && x["type"] == nil) || x["type"] == "message":
			return []Message{messageFromMap(x, def)}
		case x["output"] != nil:
			return responsesItems(x["output"], "assistant")
		case x["input"] != nil:
			return responsesItems(x["input"], def)
		}
	}
	return nil
}

// systemParts reads an Anthropic system value: a string or an array of text blocks.
func systemParts(v any) []Part {
	if s, ok := v.(string); ok {
		return []Part{{Type: "text", Content: s}}
	}
	arr, _ := v.([]any)
	out := []Part{}
	for _, e := range arr {
		if m, ok := e.(map[string]any); ok {
			out = append(out, contentPart(m))
		}
	}
	return out
}

// geminiContent reads one Gemini Content {role, parts: [{text} | {functionCall} | {functionResponse}]}.
func geminiContent(ct map[string]any, def string) Message {
	msg := Message{Role: firstStr(ct["role"], def), Parts: []Part{}}
	parts, _ := ct["parts"].([]any)
	for _, e := range parts {
		p, ok := e.(map[string]any)
		if !ok {
			continue
		}
		switch {
		case p["text"] != nil:
			msg.Parts = append(msg.Parts, Part{Type: "text", Content: str(p["text"])})
		case p["functionCall"] != nil || p["function_call"] != nil:
			fc, _ := firstMap(p["functionCall"], p["function_call"])
			msg.Parts = append(msg.Parts, Part{Type: "tool_call", ID: str(fc["id"]), Name: str(fc["name"]), Arguments: JSONValue(fc["args"])})
		case p["functionResponse"] != nil || p["function_response"] != nil:
			fr, _ := firstMap(p["functionResponse"], p["function_response"])
			msg.Parts = append(msg.Parts, Part{Type: "tool_call_response", ID: str(fr["id"]), Name: str(fr["name"]), Response: fr["response"]})
		default:
			msg.Parts = append(msg.Parts, contentPart(p))
		}
	}
	return msg
}

// responsesItems reads OpenAI Responses API items: messages, function_call, function_call_output.
func responsesItems(v any, def string) []Message {
	if s, ok := v.(string); ok {
		return []Message{{Role: def, Parts: []Part{{Type: "text", Content: s}}}}
	}
	arr, _ := v.([]any)
	out := []Message{}
	for _, e := range arr {
		it, ok := e.(map[string]any)
		if !ok {
			continue
		}
		switch str(it["type"]) {
		case "function_call":
			out = append(out, Message{Role: "assistant", Parts: []Part{{Type: "tool_call", ID: firstStr(it["call_id"], it["id"]), Name: str(it["name"]), Arguments: JSONValue(it["arguments"])}}})
		case "function_call_output":
			out = append(out, Message{Role: "tool", Parts: []Part{{Type: "tool_call_response", ID: str(it["call_id"]), Response: JSONValue(it["output"])}}})
		case "reasoning":
			var b strings.Builder
			sum, _ := it["summary"].([]any)
			for _, s := range sum {
				if m, ok := s.(map[string]any); ok {
					b.WriteString(str(m["text"]))
				}
			}
			out = append(out, Message{Role: "assistant", Parts: []Part{{Type: "reasoning", Content: b.String()}}})
		default:
			out = append(out, messageFromMap(it, def))
		}
	}
	return out
}

func firstMap(vs ...any) (map[string]any, bool) {
	for _, v := range vs {
		if m, ok := v.(map[string]any); ok {
			return m, true
		}
	}
	return map[string]any{}, false
}
