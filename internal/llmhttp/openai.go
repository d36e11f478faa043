// SPDX-License-Identifier: Apache-2.0

package llmhttp

import (
	"encoding/json"
	"sort"
	"strconv"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
)

// requestCommon reads the request fields shared by the OpenAI and Anthropic APIs.
func requestCommon(c *call, req map[string]any, operation, provider string) {
	c.str(genai.AttrOperationName, operation)
	c.str(genai.AttrProviderName, provider)
	if req == nil {
		return
	}
	c.str(genai.AttrRequestModel, str(req["model"]))
	if t, ok := float(req["temperature"]); ok {
		c.attrs = append(c.attrs, kv{AttrRequestTemperature, t})
	}
	for _, k := range []string{"max_completion_tokens", "max_tokens", "max_output_tokens"} {
		if n, ok := integer(req[k]); ok {
			c.num(AttrRequestMaxTokens, n, true)
			break
		}
	}
	if s, ok := req["stream"].(bool); ok && s {
		c.attrs = append(c.attrs, kv{AttrRequestStream, true})
	}
}

// usageOpenAI reads a usage object of chat completions (prompt_tokens...) or Responses
// (input_tokens...): input includes cached tokens and output includes reasoning tokens, as in
// the semantic conventions.
func usageOpenAI(c *call, u map[string]any) {
	if u == nil {
		return
	}
	in, ok := integer(u["prompt_tokens"])
	if !ok {
		in, ok = integer(u["input_tokens"])
	}
	c.num(genai.AttrUsageInputTokens, in, ok)
	out, ok := integer(u["completion_tokens"])
	if !ok {
		out, ok = integer(u["output_tokens"])
	}
	c.num(genai.AttrUsageOutputTokens, out, ok)
	for _, k := range []string{"prompt_tokens_details", "input_tokens_details"} {
		if n, ok := integer(path(u, k, "cached_tokens")); ok {
			c.num(genai.AttrUsageCacheRead, n, true)
			break
		}
	}
	for _, k := range []string{"completion_tokens_details", "output_tokens_details"} {
		if n, ok := integer(path(u, k, "reasoning_tokens")); ok {
			c.num(genai.AttrUsageReasoning, n, true)
			break
		}
	}
}

// openAIChat reads POST /chat/completions: request messages and tools; the response choices,
// usage, model and id (a streamed response's chunks are reassembled).
func openAIChat(c *call, provider string, ex *fixture.Exchange) {
	req := decode(ex.RequestBody)
	requestCommon(c, req, OperationChat, provider)
	if req != nil {
		if msgs := arr(req["messages"]); msgs != nil {
			in := make([]genai.Message, 0, len(msgs))
			for _, m := range msgs {
				if mm := obj(m); mm != nil {
					in = append(in, genai.MessageFromOpenAI(mm, "user"))
				}
			}
			c.str(genai.AttrInputMessages, messagesJSON(in))
		}
		c.json(genai.AttrToolDefinitions, req["tools"])
	}
	if ex.Status < 200 || ex.Status >= 300 {
		return
	}
	var resp map[string]any
	if isSSE(ex) {
		resp = reassembleChatStream(sseJSON(ex.ResponseBody))
	} else {
		resp = decode(ex.ResponseBody)
	}
	if resp == nil {
		return
	}
	c.str(AttrResponseID, str(resp["id"]))
	c.str(genai.AttrResponseModel, str(resp["model"]))
	var out []genai.Message
	var reasons []string
	for _, ch := range arr(resp["choices"]) {
		chm := obj(ch)
		if chm == nil {
			continue
		}
		msg := genai.MessageFromOpenAI(obj(chm["message"]), "assistant")
		if msg.Role == "" {
			msg.Role = "assistant"
		}
		msg.FinishReason = str(chm["finish_reason"])
		reasons = append(reasons, msg.FinishReason)
		out = append(out, msg)
	}
	if out != nil {
		c.str(genai.AttrOutputMessages, messagesJSON(out))
		c.attrs = append(c.attrs, kv{genai.AttrFinishReasons, reasons})
	}
	usageOpenAI(c, obj(resp["usage"]))
}

// reassembleChatStream folds chat.completion.chunk events into one chat.completion: content and
// tool call arguments concatenated per choice index, the last finish_reason and usage kept.
func reassembleChatStream(chunks []map[string]any) map[string]any {
	if len(chunks) == 0 {
		return nil
	}
	type toolCall struct {
		id, name string
		args     []byte
	}
	type choice struct {
		role, content, refusal, reasoning, finish string
		tools                                     map[int64]*toolCall
	}
	choices := map[int64]*choice{}
	resp := map[string]any{}
	for _, ch := range chunks {
		if id := str(ch["id"]); id != "" {
			resp["id"] = id
		}
		if m := str(ch["model"]); m != "" {
			resp["model"] = m
		}
		if u := obj(ch["usage"]); u != nil {
			resp["usage"] = u
		}
		for _, e := range arr(ch["choices"]) {
			em := obj(e)
			if em == nil {
				continue
			}
			idx, _ := integer(em["index"])
			cc := choices[idx]
			if cc == nil {
				cc = &choice{tools: map[int64]*toolCall{}}
				choices[idx] = cc
			}
			if f := str(em["finish_reason"]); f != "" {
				cc.finish = f
			}
			d := obj(em["delta"])
			if d == nil {
				continue
			}
			if r := str(d["role"]); r != "" {
				cc.role = r
			}
			cc.content += str(d["content"])
			cc.refusal += str(d["refusal"])
			cc.reasoning += str(d["reasoning_content"])
			for _, t := range arr(d["tool_calls"]) {
				tm := obj(t)
				if tm == nil {
					continue
				}
				ti, ok := integer(tm["index"])
				if !ok {
					ti = int64(len(cc.tools))
				}
				tc := cc.tools[ti]
				if tc == nil {
					tc = &toolCall{}
					cc.tools[ti] = tc
				}
				if id := str(tm["id"]); id != "" {
					tc.id = id
				}
				if n := str(path(tm, "function", "name")); n != "" {
					tc.name = n
				}
				tc.args = append(tc.args, str(path(tm, "function", "arguments"))...)
			}
		}
	}
	idxs := make([]int64, 0, len(choices))
	for i := range choices {
		idxs = append(idxs, i)
	}
	sort.Slice(idxs, func(a, b int) bool { return idxs[a] < idxs[b] })
	var out []any
	for _, i := range idxs {
		cc := choices[i]
		msg := map[string]any{"role": cc.role}
		if cc.role == "" {
			msg["role"] = "assistant"
		}
		if cc.content != "" || cc.refusal != "" {
			msg["content"] = cc.content + cc.refusal
		}
		if cc.reasoning != "" {
			msg["reasoning_content"] = cc.reasoning
		}
		if len(cc.tools) > 0 {
			tis := make([]int64, 0, len(cc.tools))
			for ti := range cc.tools {
				tis = append(tis, ti)
			}
			sort.Slice(tis, func(a, b int) bool { return tis[a] < tis[b] })
			var tcs []any
			for _, ti := range tis {
				tc := cc.tools[ti]
				tcs = append(tcs, map[string]any{"id": tc.id, "type": "function",
					"function": map[string]any{"name": tc.name, "arguments": string(tc.args)}})
			}
			msg["tool_calls"] = tcs
		}
		out = append(out, map[string]any{"index": json.Number(itoa(i)), "message": msg, "finish_reason": cc.finish})
	}
	resp["choices"] = out
	return resp
}

// openAIResponses reads POST /responses: instructions, input items and tools; the response's
// output items, usage, model and id (streamed: the response.completed event, else what the
// response.created event and the output_item.done events carry).
func openAIResponses(c *call, ex *fixture.Exchange) {
	req := decode(ex.RequestBody)
	requestCommon(c, req, OperationChat, ProviderOpenAI)
	if req != nil {
		if s, ok := req["instructions"].(string); ok {
			c.str(genai.AttrSystemInstructions, marshal([]genai.Part{{Type: "text", Content: s}}))
		}
		var in []genai.Message
		switch x := req["input"].(type) {
		case string:
			in = []genai.Message{{Role: "user", Parts: []genai.Part{{Type: "text", Content: x}}}}
		case []any:
			in = responsesItems(x, "user")
		}
		if in != nil {
			c.str(genai.AttrInputMessages, messagesJSON(in))
		}
		c.json(genai.AttrToolDefinitions, req["tools"])
	}
	if ex.Status < 200 || ex.Status >= 300 {
		return
	}
	var resp map[string]any
	if isSSE(ex) {
		var items []any
		for _, ev := range sseJSON(ex.ResponseBody) {
			switch str(ev["type"]) {
			case "response.created", "response.in_progress":
				if r := obj(ev["response"]); r != nil && resp == nil {
					resp = r
				}
			case "response.output_item.done":
				items = append(items, ev["item"])
			case "response.completed", "response.incomplete", "response.failed":
				if r := obj(ev["response"]); r != nil {
					resp = r
				}
			}
		}
		if resp != nil && len(arr(resp["output"])) == 0 && items != nil {
			resp["output"] = items
		}
	} else {
		resp = decode(ex.ResponseBody)
	}
	if resp == nil {
		return
	}
	c.str(AttrResponseID, str(resp["id"]))
	c.str(genai.AttrResponseModel, str(resp["model"]))
	if items := arr(resp["output"]); items != nil {
		msg := genai.Message{Role: "assistant", Parts: []genai.Part{}}
		for _, m := range responsesItems(items, "assistant") {
			msg.Parts = append(msg.Parts, m.Parts...)
		}
		msg.FinishReason = "stop"
		if len(msg.Parts) > 0 && msg.Parts[len(msg.Parts)-1].Type == "tool_call" {
			msg.FinishReason = "tool_call"
		}
		if str(path(resp, "incomplete_details", "reason")) == "max_output_tokens" {
			msg.FinishReason = "length"
		}
		c.str(genai.AttrOutputMessages, messagesJSON([]genai.Message{msg}))
		c.attrs = append(c.attrs, kv{genai.AttrFinishReasons, []string{msg.FinishReason}})
	}
	usageOpenAI(c, obj(resp["usage"]))
}

// responsesItems converts Responses API items (input or output): messages with string or part
// content, function_call, function_call_output, reasoning (summary text).
func responsesItems(items []any, defRole string) []genai.Message {
	out := []genai.Message{}
	for _, it := range items {
		m := obj(it)
		if m == nil {
			continue
		}
		switch t := str(m["type"]); t {
		case "", "message":
			msg := genai.Message{Role: str(m["role"]), Parts: []genai.Part{}}
			if msg.Role == "" {
				msg.Role = defRole
			}
			switch c := m["content"].(type) {
			case string:
				msg.Parts = append(msg.Parts, genai.Part{Type: "text", Content: c})
			case []any:
				for _, p := range c {
					pm := obj(p)
					switch str(pm["type"]) {
					case "input_text", "output_text", "text":
						msg.Parts = append(msg.Parts, genai.Part{Type: "text", Content: str(pm["text"])})
					case "refusal":
						msg.Parts = append(msg.Parts, genai.Part{Type: "text", Content: str(pm["refusal"])})
					case "input_image":
						msg.Parts = append(msg.Parts, genai.Part{Type: "uri", Modality: "image", URI: str(pm["image_url"]), FileID: str(pm["file_id"])})
					default:
						msg.Parts = append(msg.Parts, genai.Part{Type: str(pm["type"]), Content: marshal(pm)})
					}
				}
			}
			out = append(out, msg)
		case "function_call":
			out = append(out, genai.Message{Role: "assistant", Parts: []genai.Part{{Type: "tool_call",
				ID: str(m["call_id"]), Name: str(m["name"]), Arguments: genai.JSONValue(m["arguments"])}}})
		case "function_call_output":
			out = append(out, genai.Message{Role: "tool", Parts: []genai.Part{{Type: "tool_call_response",
				ID: str(m["call_id"]), Response: m["output"]}}})
		case "reasoning":
			var text string
			for _, s := range arr(m["summary"]) {
				text += str(obj(s)["text"])
			}
			if text != "" {
				out = append(out, genai.Message{Role: "assistant", Parts: []genai.Part{{Type: "reasoning", Content: text}}})
			}
		default:
			// Built-in tools (web_search_call, code_interpreter_call, mcp_call...): kept whole.
			out = append(out, genai.Message{Role: "assistant", Parts: []genai.Part{{Type: "server_tool_call",
				ID: str(m["id"]), Name: t, ServerToolCall: m}}})
		}
	}
	return out
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }
