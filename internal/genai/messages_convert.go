// SPDX-License-Identifier: Apache-2.0

package genai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// messagesFrom converts a decoded JSON value (an array of messages, or one message) to messages.
func messagesFrom(raw any, defaultRole string) []Message {
	out := []Message{}
	switch x := raw.(type) {
	case []any:
		for _, e := range x {
			if m, ok := e.(map[string]any); ok {
				out = append(out, messageFromMap(m, defaultRole))
			} else if s, ok := e.(string); ok {
				out = append(out, Message{Role: defaultRole, Parts: []Part{{Type: "text", Content: s}}})
			}
		}
	case map[string]any:
		out = append(out, messageFromMap(x, defaultRole))
	case string:
		out = append(out, Message{Role: defaultRole, Parts: []Part{{Type: "text", Content: x}}})
	}
	return out
}

// partsFrom converts a decoded JSON value (an array of parts, a string, or one part) to parts.
func partsFrom(raw any) []Part {
	out := []Part{}
	switch x := raw.(type) {
	case []any:
		for _, e := range x {
			switch p := e.(type) {
			case map[string]any:
				out = append(out, partFromMap(p))
			case string:
				out = append(out, Part{Type: "text", Content: p})
			}
		}
	case map[string]any:
		out = append(out, partFromMap(x))
	case string:
		out = append(out, Part{Type: "text", Content: x})
	}
	return out
}

// MessageFromOpenAI converts one message in either the semconv parts model or the OpenAI chat
// completions shape ({role, content: string | [{type: "text", text}, ...], tool_calls: [{id,
// function: {name, arguments}}], tool_call_id, name}) to a Message. defaultRole is used when the
// map has no role (an event body: the event name gives the role).
func MessageFromOpenAI(m map[string]any, defaultRole string) Message {
	return messageFromMap(m, defaultRole)
}

func messageFromMap(m map[string]any, defaultRole string) Message {
	msg := Message{Role: str(m["role"]), Name: str(m["name"]), Parts: []Part{}}
	if msg.Role == "" {
		msg.Role = langChainRoles[str(m["type"])]
	}
	if msg.Role == "" {
		msg.Role = defaultRole
	}
	msg.FinishReason = str(m["finish_reason"])
	if ak, ok := m["additional_kwargs"].(map[string]any); ok && m["tool_calls"] == nil {
		if tcs, ok := ak["tool_calls"]; ok { // LangChain message dicts
			m = withKey(m, "tool_calls", tcs)
		}
	}
	if parts, ok := m["parts"].([]any); ok {
		msg.Parts = partsFrom(parts)
		return msg
	}
	// OpenAI chat shape (also the event bodies of semconv 1.28-1.36).
	if msg.Role == "tool" || msg.Role == "function" {
		id := str(m["tool_call_id"])
		if id == "" {
			id = str(m["id"])
		}
		var resp any = contentText(m["content"])
		if _, isStr := m["content"].(string); !isStr && m["content"] != nil {
			if _, isArr := m["content"].([]any); !isArr {
				resp = m["content"]
			}
		}
		if m["content"] == nil {
			resp = nil
		}
		msg.Parts = append(msg.Parts, Part{Type: "tool_call_response", ID: id, Response: resp})
		return msg
	}
	switch c := m["content"].(type) {
	case string:
		msg.Parts = append(msg.Parts, Part{Type: "text", Content: c})
	case []any:
		for _, e := range c {
			switch p := e.(type) {
			case string:
				msg.Parts = append(msg.Parts, Part{Type: "text", Content: p})
			case map[string]any:
				msg.Parts = append(msg.Parts, contentPart(p))
			}
		}
	case map[string]any:
		msg.Parts = append(msg.Parts, contentPart(c))
	}
	if r := str(m["reasoning_content"]); r != "" {
		msg.Parts = append(msg.Parts, Part{Type: "reasoning", Content: r})
	}
	if tcs, ok := m["tool_calls"].([]any); ok {
		for _, e := range tcs {
			tc, ok := e.(map[string]any)
			if !ok {
				continue
			}
			p := Part{Type: "tool_call", ID: str(tc["id"]), Name: str(tc["name"])}
			args, hasArgs := tc["arguments"]
			if fn, ok := tc["function"].(map[string]any); ok {
				if p.Name == "" {
					p.Name = str(fn["name"])
				}
				if a, ok := fn["arguments"]; ok {
					args, hasArgs = a, true
				}
			}
			if hasArgs {
				p.Arguments = JSONValue(args)
			}
			msg.Parts = append(msg.Parts, p)
		}
	}
	if fc, ok := m["function_call"].(map[string]any); ok { // OpenAI legacy functions
		msg.Parts = append(msg.Parts, Part{Type: "tool_call", Name: str(fc["name"]), Arguments: JSONValue(fc["arguments"])})
	}
	return msg
}

// langChainRoles maps LangChain message types (a message's "type" when it has no "role") to roles.
var langChainRoles = map[string]string{"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "function"}

// withKey returns a copy of m with k set to v (m is left unchanged: it is the caller's value).
func withKey(m map[string]any, k string, v any) map[string]any {
	c := make(map[string]any, len(m)+1)
	for kk, vv := range m {
		c[kk] = vv
	}
	c[k] = v
	return c
}

// contentPart converts one content part of the OpenAI, Anthropic or semconv shape.
func contentPart(p map[string]any) Part {
	t := str(p["type"])
	switch t {
	case "text", "input_text", "output_text":
		if s, ok := p["text"].(string); ok {
			return Part{Type: "text", Content: s}
		}
		return Part{Type: "text", Content: str(p["content"])}
	case "refusal":
		return Part{Type: "text", Content: str(p["refusal"])}
	case "tool_use": // Anthropic
		return Part{Type: "tool_call", ID: str(p["id"]), Name: str(p["name"]), Arguments: JSONValue(p["input"])}
	case "tool_result": // Anthropic
		return Part{Type: "tool_call_response", ID: str(p["tool_use_id"]), Response: p["content"]}
	case "image_url":
		if iu, ok := p["image_url"].(map[string]any); ok {
			return Part{Type: "uri", Modality: "image", URI: str(iu["url"])}
		}
	case "tool_call", "tool_call_response", "reasoning", "blob", "uri", "file", "server_tool_call", "server_tool_call_response":
		return partFromMap(p)
	}
	if _, ok := p["content"]; ok && t != "" {
		return partFromMap(p)
	}
	// Unknown part: kept whole as JSON text under its own type, so nothing is lost.
	b, _ := json.Marshal(p)
	if t == "" {
		t = "generic"
	}
	return Part{Type: t, Content: string(b)}
}

// partFromMap reads a part in the semconv shape.
func partFromMap(p map[string]any) Part {
	part := Part{Type: str(p["type"]), ID: str(p["id"]), Name: str(p["name"]),
		Modality: str(p["modality"]), MimeType: str(p["mime_type"]), URI: str(p["uri"]), FileID: str(p["file_id"]),
		Arguments: p["arguments"], Response: p["response"],
		ServerToolCall: p["server_tool_call"], ServerToolCallResponse: p["server_tool_call_response"]}
	switch c := p["content"].(type) {
	case nil:
	case string:
		part.Content = c
	default:
		b, _ := json.Marshal(c)
		part.Content = string(b)
	}
	if part.Response == nil && part.Type == "tool_call_response" {
		part.Response = p["result"] // Pydantic AI >= 1.0 writes "result"
	}
	if part.Type == "" {
		part.Type = "generic"
	}
	return part
}

// contentText joins the text of an OpenAI content value (string or parts array).
func contentText(c any) string {
	switch x := c.(type) {
	case string:
		return x
	case []any:
		var b strings.Builder
		for _, e := range x {
			if p, ok := e.(map[string]any); ok {
				if s, ok := p["text"].(string); ok {
					b.WriteString(s)
				}
			} else if s, ok := e.(string); ok {
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}

// JSONValue returns v decoded when it is a string holding a JSON object or array (tool call
// arguments are sent as JSON text by OpenAI), else v unchanged.
func JSONValue(v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	t := strings.TrimSpace(s)
	if t == "" || (t[0] != '{' && t[0] != '[') {
		return s
	}
	d, err := decodeJSON(t)
	if err != nil {
		return s
	}
	return d
}

// decodeJSON decodes one JSON value, numbers as json.Number (exact).
func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("invalid JSON: data after the value")
	}
	return v, nil
}

// valueJSON returns an attribute value as decoded JSON: a string is parsed, a structured value
// (map, slice) is taken as is.
func valueJSON(v pcommon.Value) (any, error) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return decodeJSON(v.Str())
	case pcommon.ValueTypeMap, pcommon.ValueTypeSlice:
		return v.AsRaw(), nil
	case pcommon.ValueTypeBytes:
		return decodeJSON(string(v.Bytes().AsRaw()))
	}
	return nil, fmt.Errorf("want a JSON string, map or array, got %s", v.Type())
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case nil:
		return ""
	case bool, int64, float64, int:
		return fmt.Sprint(x)
	}
	return ""
}

func firstStr(vs ...any) string {
	for _, v := range vs {
		if s := str(v); s != "" {
			return s
		}
	}
	return ""
}

func toInt(v any) (int, bool) {
	switch x := v.(type) {
	case int64:
		return int(x), true
	case int:
		return x, true
	case float64:
		return int(x), true
	case json.Number:
		n, err := strconv.Atoi(x.String())
		return n, err == nil
	case string:
		n, err := strconv.Atoi(x)
		return n, err == nil
	}
	return 0, false
}

// MarshalCompact renders a JSON value (a part's arguments or response) as compact JSON text; a
// string is returned as is.
func MarshalCompact(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
