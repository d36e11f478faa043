// SPDX-License-Identifier: Apache-2.0

package llmhttp

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
)

// gemini reads POST .../models/{model}:generateContent and :streamGenerateContent (Gemini API
// and Vertex AI): the model from the path, systemInstruction, contents and tools; the response's
// candidates, finishReason, usageMetadata and modelVersion (streamed responses, SSE or a JSON
// array, are reassembled). Output tokens include thoughts tokens, which are also the reasoning
// tokens.
func gemini(c *call, ex *fixture.Exchange) {
	provider := ProviderGemini
	model := ""
	if u, err := url.Parse(ex.URL); err == nil {
		if strings.HasSuffix(u.Hostname(), "aiplatform.googleapis.com") {
			provider = ProviderVertexAI
		}
		if i := strings.LastIndex(u.Path, "/models/"); i >= 0 {
			model = u.Path[i+len("/models/"):]
			if j := strings.IndexByte(model, ':'); j >= 0 {
				model = model[:j]
			}
		}
	}
	c.str(genai.AttrOperationName, OperationGenerate)
	c.str(genai.AttrProviderName, provider)
	c.str(genai.AttrRequestModel, model)
	req := decode(ex.RequestBody)
	if req != nil {
		if t, ok := float(path(req, "generationConfig", "temperature")); ok {
			c.attrs = append(c.attrs, kv{AttrRequestTemperature, t})
		}
		if n, ok := integer(path(req, "generationConfig", "maxOutputTokens")); ok {
			c.num(AttrRequestMaxTokens, n, true)
		}
		if si := obj(req["systemInstruction"]); si != nil {
			c.str(genai.AttrSystemInstructions, marshal(geminiParts(arr(si["parts"]))))
		}
		if contents := arr(req["contents"]); contents != nil {
			in := []genai.Message{}
			for _, ct := range contents {
				in = append(in, geminiContent(obj(ct), "user"))
			}
			c.str(genai.AttrInputMessages, messagesJSON(in))
		}
		c.json(genai.AttrToolDefinitions, req["tools"])
	}
	if ex.Status < 200 || ex.Status >= 300 {
		return
	}
	var resps []map[string]any
	body := bytes.TrimSpace(ex.ResponseBody)
	switch {
	case isSSE(ex):
		resps = sseJSON(ex.ResponseBody)
	case len(body) > 0 && body[0] == '[':
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var list []map[string]any
		if dec.Decode(&list) == nil {
			resps = list
		}
	default:
		if m := decode(body); m != nil {
			resps = []map[string]any{m}
		}
	}
	if len(resps) == 0 {
		return
	}
	type cand struct {
		msg genai.Message
	}
	var cands []*cand
	var usage map[string]any
	for _, r := range resps {
		c.str(genai.AttrResponseModel, str(r["modelVersion"]))
		c.str(AttrResponseID, str(r["responseId"]))
		if u := obj(r["usageMetadata"]); u != nil {
			usage = u
		}
		for i, cd := range arr(r["candidates"]) {
			cm := obj(cd)
			if cm == nil {
				continue
			}
			idx := i
			if n, ok := integer(cm["index"]); ok {
				idx = int(n)
			}
			for len(cands) <= idx {
				cands = append(cands, &cand{msg: genai.Message{Role: "assistant", Parts: []genai.Part{}}})
			}
			cc := cands[idx]
			for _, p := range geminiParts(arr(path(cm, "content", "parts"))) {
				n := len(cc.msg.Parts)
				if n > 0 && (p.Type == "text" || p.Type == "reasoning") && cc.msg.Parts[n-1].Type == p.Type {
					cc.msg.Parts[n-1].Content += p.Content // streamed text arrives in pieces
					continue
				}
				cc.msg.Parts = append(cc.msg.Parts, p)
			}
			if f := str(cm["finishReason"]); f != "" {
				cc.msg.FinishReason = f
			}
		}
	}
	if cands != nil {
		out := make([]genai.Message, len(cands))
		reasons := make([]string, len(cands))
		for i, cc := range cands {
			out[i] = cc.msg
			reasons[i] = cc.msg.FinishReason
		}
		c.str(genai.AttrOutputMessages, messagesJSON(out))
		c.attrs = append(c.attrs, kv{genai.AttrFinishReasons, reasons})
	}
	if usage != nil {
		in, ok := integer(usage["promptTokenCount"])
		c.num(genai.AttrUsageInputTokens, in, ok)
		out, okOut := integer(usage["candidatesTokenCount"])
		th, okTh := integer(usage["thoughtsTokenCount"])
		c.num(genai.AttrUsageOutputTokens, out+th, okOut || okTh)
		if n, ok := integer(usage["cachedContentTokenCount"]); ok {
			c.num(genai.AttrUsageCacheRead, n, true)
		}
		c.num(genai.AttrUsageReasoning, th, okTh)
	}
}

// geminiContent converts one Content ({role: user|model, parts}).
func geminiContent(ct map[string]any, defRole string) genai.Message {
	role := str(ct["role"])
	switch role {
	case "":
		role = defRole
	case "model":
		role = "assistant"
	}
	return genai.Message{Role: role, Parts: geminiParts(arr(ct["parts"]))}
}

// geminiParts converts Gemini parts: text (thought: reasoning), functionCall, functionResponse,
// inlineData, fileData.
func geminiParts(parts []any) []genai.Part {
	out := []genai.Part{}
	for _, p := range parts {
		pm := obj(p)
		if pm == nil {
			continue
		}
		switch {
		case pm["functionCall"] != nil:
			fc := obj(pm["functionCall"])
			out = append(out, genai.Part{Type: "tool_call", ID: str(fc["id"]), Name: str(fc["name"]), Arguments: fc["args"]})
		case pm["functionResponse"] != nil:
			fr := obj(pm["functionResponse"])
			out = append(out, genai.Part{Type: "tool_call_response", ID: str(fr["id"]), Response: fr["response"]})
		case pm["inlineData"] != nil:
			d := obj(pm["inlineData"])
			out = append(out, genai.Part{Type: "blob", MimeType: str(d["mimeType"]), Content: str(d["data"])})
		case pm["fileData"] != nil:
			d := obj(pm["fileData"])
			out = append(out, genai.Part{Type: "uri", MimeType: str(d["mimeType"]), URI: str(d["fileUri"])})
		case pm["text"] != nil:
			if b, _ := pm["thought"].(bool); b {
				out = append(out, genai.Part{Type: "reasoning", Content: str(pm["text"])})
			} else {
				out = append(out, genai.Part{Type: "text", Content: str(pm["text"])})
			}
		}
	}
	return out
}
