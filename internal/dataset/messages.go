package dataset

// deriveHTTP reads the shared messages model (genai.CallMessages) from a recorded HTTP exchange
// (DESIGN.md "Derived at record time"), for runs whose fixture spans carry no GenAI attributes.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
)

// deriveHTTP reads the messages, model and usage of an LLM API exchange (OpenAI chat
// completions and responses, Anthropic messages; JSON or SSE) from a fixture span. attrs holds
// the GenAI attributes read (model, provider, usage) for pricing. ok is false for other exchanges.
func deriveHTTP(sp ptrace.Span) (genai.CallMessages, pcommon.Map, bool) {
	ex, err := fixture.FromSpan(sp)
	if err != nil || ex.Status < 200 || ex.Status >= 300 {
		return genai.CallMessages{}, pcommon.Map{}, false
	}
	u, err := url.Parse(ex.URL)
	if err != nil {
		return genai.CallMessages{}, pcommon.Map{}, false
	}
	req := gjson.ParseBytes(ex.RequestBody)
	attrs := pcommon.NewMap()
	attrs.PutBool("runagain.genai.derived", true)
	cm := genai.CallMessages{Derived: true}
	var resp gjson.Result
	sse := fixture.IsEventStream(ex.ResponseHeader.Get("Content-Type")) || len(ex.Chunks) > 0
	switch {
	case strings.HasSuffix(u.Path, "/chat/completions"):
		attrs.PutStr(genai.AttrProviderName, "openai")
		for _, m := range req.Get("messages").Array() {
			cm.Input = append(cm.Input, genai.Message{Role: m.Get("role").String(), Parts: openAIContent(m)})
		}
		if sse {
			resp = openAIStream(ex.ResponseBody)
		} else {
			resp = gjson.ParseBytes(ex.ResponseBody)
		}
		msg := resp.Get("choices.0.message")
		out := genai.Message{Role: "assistant", Parts: openAIContent(msg), FinishReason: resp.Get("choices.0.finish_reason").String()}
		cm.Output = []genai.Message{out}
		putUsage(attrs, resp.Get("usage.prompt_tokens").Int(), resp.Get("usage.completion_tokens").Int())
	case strings.HasSuffix(u.Path, "/responses"):
		attrs.PutStr(genai.AttrProviderName, "openai")
		if in := req.Get("input"); in.Type == gjson.String {
			cm.Input = []genai.Message{{Role: "user", Parts: []genai.Part{{Type: "text", Content: in.String()}}}}
		} else {
			for _, m := range in.Array() {
				cm.Input = append(cm.Input, genai.Message{Role: m.Get("role").String(), Parts: openAIContent(m)})
			}
		}
		if sse {
			resp = lastSSE(ex.ResponseBody, "response.completed").Get("response")
		} else {
			resp = gjson.ParseBytes(ex.ResponseBody)
		}
		out := genai.Message{Role: "assistant"}
		for _, o := range resp.Get("output").Array() {
			switch o.Get("type").String() {
			case "message":
				for _, c := range o.Get("content").Array() {
					if c.Get("type").String() == "output_text" {
						out.Parts = append(out.Parts, genai.Part{Type: "text", Content: c.Get("text").String()})
					}
				}
			case "function_call":
				out.Parts = append(out.Parts, genai.Part{Type: "tool_call", ID: o.Get("call_id").String(), Name: o.Get("name").String(), Arguments: jsonValue(o.Get("arguments").String())})
			}
		}
		cm.Output = []genai.Message{out}
		putUsage(attrs, resp.Get("usage.input_tokens").Int(), resp.Get("usage.output_tokens").Int())
	case strings.HasSuffix(u.Path, "/v1/messages") && !sse:
		attrs.PutStr(genai.AttrProviderName, "anthropic")
		for _, m := range req.Get("messages").Array() {
			cm.Input = append(cm.Input, genai.Message{Role: m.Get("role").String(), Parts: anthropicContent(m.Get("content"))})
		}
		resp = gjson.ParseBytes(ex.ResponseBody)
		cm.Output = []genai.Message{{Role: "assistant", Parts: anthropicContent(resp.Get("content")), FinishReason: resp.Get("stop_reason").String()}}
		putUsage(attrs, resp.Get("usage.input_tokens").Int(), resp.Get("usage.output_tokens").Int())
	default:
		return genai.CallMessages{}, pcommon.Map{}, false
	}
	if m := req.Get("model").String(); m != "" {
		attrs.PutStr(genai.AttrRequestModel, m)
	}
	if m := resp.Get("model").String(); m != "" {
		attrs.PutStr(genai.AttrResponseModel, m)
	}
	attrs.PutStr(genai.AttrOperationName, "chat")
	return cm, attrs, true
}

func putUsage(a pcommon.Map, in, out int64) {
	if in > 0 {
		a.PutInt(genai.AttrUsageInputTokens, in)
	}
	if out > 0 {
		a.PutInt(genai.AttrUsageOutputTokens, out)
	}
}

// openAIContent reads an OpenAI chat message's content (string or parts) and tool calls.
func openAIContent(m gjson.Result) []genai.Part {
	var ps []genai.Part
	c := m.Get("content")
	switch {
	case c.Type == gjson.String:
		ps = append(ps, genai.Part{Type: "text", Content: c.String()})
	case c.IsArray():
		for _, p := range c.Array() {
			if t := p.Get("text"); t.Exists() {
				ps = append(ps, genai.Part{Type: "text", Content: t.String()})
			}
		}
	}
	for _, tc := range m.Get("tool_calls").Array() {
		ps = append(ps, genai.Part{Type: "tool_call", ID: tc.Get("id").String(), Name: tc.Get("function.name").String(),
			Arguments: jsonValue(tc.Get("function.arguments").String())})
	}
	if id := m.Get("tool_call_id"); id.Exists() {
		return []genai.Part{{Type: "tool_call_response", ID: id.String(), Response: c.Value()}}
	}
	return ps
}

func anthropicContent(c gjson.Result) []genai.Part {
	if c.Type == gjson.String {
		return []genai.Part{{Type: "text", Content: c.String()}}
	}
	var ps []genai.Part
	for _, p := range c.Array() {
		switch p.Get("type").String() {
		case "text":
			ps = append(ps, genai.Part{Type: "text", Content: p.Get("text").String()})
		case "tool_use":
			ps = append(ps, genai.Part{Type: "tool_call", ID: p.Get("id").String(), Name: p.Get("name").String(), Arguments: p.Get("input").Value()})
		case "tool_result":
			ps = append(ps, genai.Part{Type: "tool_call_response", ID: p.Get("tool_use_id").String(), Response: p.Get("content").Value()})
		}
	}
	return ps
}

// sseData returns the JSON data lines of an SSE body.
func sseData(body []byte) []gjson.Result {
	var out []gjson.Result
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		d, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue
		}
		d = strings.TrimSpace(d)
		if d == "" || d == "[DONE]" || !gjson.Valid(d) {
			continue
		}
		out = append(out, gjson.Parse(d))
	}
	return out
}

func lastSSE(body []byte, typ string) gjson.Result {
	var last gjson.Result
	for _, d := range sseData(body) {
		if d.Get("type").String() == typ {
			last = d
		}
	}
	return last
}

// openAIStream folds chat completion chunks into one completion: content and tool call
// arguments concatenated, the last usage, model and finish reason.
func openAIStream(body []byte) gjson.Result {
	type tc struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Fn   struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	var content strings.Builder
	var calls []*tc
	out := map[string]any{}
	finish := ""
	for _, d := range sseData(body) {
		if m := d.Get("model").String(); m != "" {
			out["model"] = m
		}
		if u := d.Get("usage"); u.IsObject() {
			out["usage"] = u.Value()
		}
		delta := d.Get("choices.0.delta")
		content.WriteString(delta.Get("content").String())
		for _, t := range delta.Get("tool_calls").Array() {
			i := int(t.Get("index").Int())
			for len(calls) <= i {
				calls = append(calls, &tc{Type: "function"})
			}
			if id := t.Get("id").String(); id != "" {
				calls[i].ID = id
			}
			calls[i].Fn.Name += t.Get("function.name").String()
			calls[i].Fn.Arguments += t.Get("function.arguments").String()
		}
		if f := d.Get("choices.0.finish_reason").String(); f != "" {
			finish = f
		}
	}
	msg := map[string]any{"role": "assistant", "content": content.String()}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	out["choices"] = []any{map[string]any{"message": msg, "finish_reason": finish}}
	b, _ := json.Marshal(out)
	return gjson.ParseBytes(b)
}
