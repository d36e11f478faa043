// SPDX-License-Identifier: Apache-2.0

package llmhttp

import (
	"net/url"
	"sort"
	"strings"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
)

// anthropic reads POST /v1/messages (Anthropic Messages API): system, messages and tools; the
// response's content blocks, stop_reason, usage, model and id (a streamed response's
// message_start / content_block_* / message_delta events are reassembled). Input tokens follow
// the semantic conventions: Anthropic's input_tokens plus cache reads and cache writes.
func anthropic(c *call, ex *fixture.Exchange) {
	req := decode(ex.RequestBody)
	provider := ProviderAnthropic
	if u, err := url.Parse(ex.URL); err == nil && strings.Contains(u.Path, "/publishers/anthropic/models/") {
		// Claude on Vertex AI: the model is named in the path, not the body
		provider = ProviderVertexAI
		model := u.Path[strings.LastIndex(u.Path, "/models/")+len("/models/"):]
		if i := strings.IndexByte(model, ':'); i >= 0 {
			model = model[:i]
		}
		if req == nil || str(req["model"]) == "" {
			c.str(genai.AttrRequestModel, model)
		}
	}
	requestCommon(c, req, OperationChat, provider)
	if req != nil {
		switch s := req["system"].(type) {
		case string:
			c.str(genai.AttrSystemInstructions, marshal([]genai.Part{{Type: "text", Content: s}}))
		case []any:
			c.str(genai.AttrSystemInstructions, marshal(anthropicBlocks(s)))
		}
		if msgs := arr(req["messages"]); msgs != nil {
			in := []genai.Message{}
			for _, m := range msgs {
				mm := obj(m)
				if mm == nil {
					continue
				}
				msg := genai.Message{Role: str(mm["role"]), Parts: []genai.Part{}}
				switch ct := mm["content"].(type) {
				case string:
					msg.Parts = append(msg.Parts, genai.Part{Type: "text", Content: ct})
				case []any:
					msg.Parts = anthropicBlocks(ct)
				}
				in = append(in, msg)
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
		resp = reassembleAnthropicStream(sseJSON(ex.ResponseBody))
	} else {
		resp = decode(ex.ResponseBody)
	}
	if resp == nil {
		return
	}
	c.str(AttrResponseID, str(resp["id"]))
	c.str(genai.AttrResponseModel, str(resp["model"]))
	if blocks := arr(resp["content"]); blocks != nil {
		msg := genai.Message{Role: "assistant", Parts: anthropicBlocks(blocks), FinishReason: str(resp["stop_reason"])}
		c.str(genai.AttrOutputMessages, messagesJSON([]genai.Message{msg}))
		if msg.FinishReason != "" {
			c.attrs = append(c.attrs, kv{genai.AttrFinishReasons, []string{msg.FinishReason}})
		}
	}
	if u := obj(resp["usage"]); u != nil {
		in, okIn := integer(u["input_tokens"])
		cr, okCR := integer(u["cache_read_input_tokens"])
		cw, okCW := integer(u["cache_creation_input_tokens"])
		c.num(genai.AttrUsageInputTokens, in+cr+cw, okIn)
		out, ok := integer(u["output_tokens"])
		c.num(genai.AttrUsageOutputTokens, out, ok)
		c.num(genai.AttrUsageCacheRead, cr, okCR)
		c.num(genai.AttrUsageCacheWrite, cw, okCW)
	}
}

// anthropicBlocks converts content blocks: text, thinking, tool_use, tool_result, image.
func anthropicBlocks(blocks []any) []genai.Part {
	parts := []genai.Part{}
	for _, b := range blocks {
		bm := obj(b)
		if bm == nil {
			continue
		}
		switch t := str(bm["type"]); t {
		case "text":
			parts = append(parts, genai.Part{Type: "text", Content: str(bm["text"])})
		case "thinking":
			parts = append(parts, genai.Part{Type: "reasoning", Content: str(bm["thinking"])})
		case "tool_use", "server_tool_use":
			pt := "tool_call"
			if t == "server_tool_use" {
				pt = "server_tool_call"
			}
			parts = append(parts, genai.Part{Type: pt, ID: str(bm["id"]), Name: str(bm["name"]), Arguments: bm["input"]})
		case "tool_result":
			resp := bm["content"]
			if blocks := arr(bm["content"]); blocks != nil {
				text := ""
				allText := true
				for _, e := range blocks {
					em := obj(e)
					if str(em["type"]) != "text" {
						allText = false
						break
					}
					text += str(em["text"])
				}
				if allText {
					resp = text
				}
			}
			parts = append(parts, genai.Part{Type: "tool_call_response", ID: str(bm["tool_use_id"]), Response: resp})
		case "image":
			src := obj(bm["source"])
			if str(src["type"]) == "url" {
				parts = append(parts, genai.Part{Type: "uri", Modality: "image", URI: str(src["url"])})
			} else {
				parts = append(parts, genai.Part{Type: "blob", Modality: "image", MimeType: str(src["media_type"]), Content: str(src["data"])})
			}
		default:
			parts = append(parts, genai.Part{Type: t, Content: marshal(bm)})
		}
	}
	return parts
}

// reassembleAnthropicStream folds the Messages streaming events into one message.
func reassembleAnthropicStream(events []map[string]any) map[string]any {
	var msg map[string]any
	blocks := map[int64]map[string]any{}
	partial := map[int64][]byte{}
	for _, ev := range events {
		switch str(ev["type"]) {
		case "message_start":
			msg = obj(ev["message"])
		case "content_block_start":
			i, _ := integer(ev["index"])
			if b := obj(ev["content_block"]); b != nil {
				blocks[i] = b
			}
		case "content_block_delta":
			i, _ := integer(ev["index"])
			b := blocks[i]
			if b == nil {
				b = map[string]any{"type": "text"}
				blocks[i] = b
			}
			d := obj(ev["delta"])
			switch str(d["type"]) {
			case "text_delta":
				b["text"] = str(b["text"]) + str(d["text"])
			case "thinking_delta":
				b["thinking"] = str(b["thinking"]) + str(d["thinking"])
			case "input_json_delta":
				partial[i] = append(partial[i], str(d["partial_json"])...)
			}
		case "message_delta":
			if msg == nil {
				msg = map[string]any{}
			}
			if d := obj(ev["delta"]); d != nil && str(d["stop_reason"]) != "" {
				msg["stop_reason"] = d["stop_reason"]
			}
			if u := obj(ev["usage"]); u != nil {
				mu := obj(msg["usage"])
				if mu == nil {
					mu = map[string]any{}
					msg["usage"] = mu
				}
				for k, v := range u {
					if v != nil {
						mu[k] = v
					}
				}
			}
		}
	}
	if msg == nil {
		return nil
	}
	idxs := make([]int64, 0, len(blocks))
	for i := range blocks {
		idxs = append(idxs, i)
	}
	sort.Slice(idxs, func(a, b int) bool { return idxs[a] < idxs[b] })
	content := []any{}
	for _, i := range idxs {
		b := blocks[i]
		if p, ok := partial[i]; ok {
			if v := decodeValue(p); v != nil {
				b["input"] = v
			} else {
				b["input"] = string(p)
			}
		}
		content = append(content, b)
	}
	msg["content"] = content
	return msg
}

// decodeValue parses any JSON value, nil when it does not parse.
func decodeValue(b []byte) any {
	if len(b) == 0 {
		return map[string]any{}
	}
	v := genai.JSONValue(string(b))
	if s, ok := v.(string); ok && s == string(b) {
		return nil
	}
	return v
}
