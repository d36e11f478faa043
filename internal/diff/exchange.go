package diff

import (
	"bytes"
	"encoding/json"
	"net/url"
	"sort"
	"strings"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
)

// exchangeLLM is an LLM call read from a recorded HTTP exchange (the bodies of an agent that has
// no tracing, recorded by `runagain proxy --record`): the OpenAI chat completions API, JSON or
// server-sent events. DESIGN.md "Derived at record time" puts this reading in the proxy
// (issue 13); until recorded spans carry it, the diff reads the bodies itself, and never when the
// span already has GenAI attributes.
type exchangeLLM struct {
	model    string
	calls    CallMessages
	usage    genai.Usage
	finish   []string
	provider string
}

// chatMessage is an OpenAI chat completions message (request, response or stream delta).
type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message      *chatMessage `json:"message"`
		Delta        *chatMessage `json:"delta"`
		FinishReason string       `json:"finish_reason"`
	} `json:"choices"`
	Usage *chatUsage `json:"usage"`
}

// readExchangeLLM reports whether ex is an OpenAI chat completions call and reads it.
func readExchangeLLM(ex *fixture.Exchange) (*exchangeLLM, bool) {
	u, err := url.Parse(ex.URL)
	if err != nil || !strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/chat/completions") {
		return nil, false
	}
	var req struct {
		Model    string          `json:"model"`
		Messages []chatMessage   `json:"messages"`
		Tools    json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(ex.RequestBody, &req) != nil || req.Model == "" {
		return nil, false
	}
	out := &exchangeLLM{model: req.Model, provider: "openai"}
	out.calls.Derived = true
	out.calls.InputSource, out.calls.OutputSource = "http_exchange", "http_exchange"
	out.calls.Input = []Message{}
	out.calls.Output = []Message{}
	for _, m := range req.Messages {
		out.calls.Input = append(out.calls.Input, chatToMessage(m))
	}
	if len(req.Tools) > 0 && string(req.Tools) != "null" {
		out.calls.ToolDefinitions = jsonValue(string(req.Tools))
	}
	var resp chatResponse
	if fixture.IsEventStream(ex.ResponseHeader.Get("Content-Type")) || bytes.HasPrefix(bytes.TrimSpace(ex.ResponseBody), []byte("data:")) {
		resp = assembleStream(ex.ResponseBody)
	} else if json.Unmarshal(ex.ResponseBody, &resp) != nil {
		return out, true // the request is an LLM call; its response is not readable (error page)
	}
	if resp.Model != "" {
		out.model = resp.Model
	}
	for _, c := range resp.Choices {
		if c.Message != nil {
			m := chatToMessage(*c.Message)
			m.FinishReason = c.FinishReason
			out.calls.Output = append(out.calls.Output, m)
		}
		if c.FinishReason != "" {
			out.finish = append(out.finish, c.FinishReason)
		}
	}
	if u := resp.Usage; u != nil {
		out.usage = genai.Usage{Input: u.PromptTokens, Output: u.CompletionTokens,
			CacheRead: u.PromptTokensDetails.CachedTokens, Reasoning: u.CompletionTokensDetails.ReasoningTokens}
	}
	return out, true
}

// assembleStream joins the chunks of a streamed chat completion into one response.
func assembleStream(body []byte) chatResponse {
	var out chatResponse
	msgs := map[int]*chatMessage{}
	finish := map[int]string{}
	texts := map[int]*strings.Builder{}
	type call struct{ id, name, args string }
	calls := map[int]map[int]*call{}
	for _, line := range bytes.Split(body, []byte("\n")) {
		data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			continue
		}
		var ch struct {
			Model   string `json:"model"`
			Choices []struct {
				Index        int          `json:"index"`
				Delta        *chatMessage `json:"delta"`
				FinishReason string       `json:"finish_reason"`
			} `json:"choices"`
			Usage *chatUsage `json:"usage"`
		}
		if json.Unmarshal(data, &ch) != nil {
			continue
		}
		if ch.Model != "" {
			out.Model = ch.Model
		}
		if ch.Usage != nil {
			out.Usage = ch.Usage
		}
		for _, c := range ch.Choices {
			m := msgs[c.Index]
			if m == nil {
				m = &chatMessage{Role: "assistant"}
				msgs[c.Index], texts[c.Index], calls[c.Index] = m, &strings.Builder{}, map[int]*call{}
			}
			if c.FinishReason != "" {
				finish[c.Index] = c.FinishReason
			}
			if c.Delta == nil {
				continue
			}
			if c.Delta.Role != "" {
				m.Role = c.Delta.Role
			}
			var s string
			if json.Unmarshal(c.Delta.Content, &s) == nil {
				texts[c.Index].WriteString(s)
			}
			for _, tc := range c.Delta.ToolCalls {
				k := calls[c.Index][tc.Index]
				if k == nil {
					k = &call{}
					calls[c.Index][tc.Index] = k
				}
				if tc.ID != "" {
					k.id = tc.ID
				}
				k.name += tc.Function.Name
				k.args += tc.Function.Arguments
			}
		}
	}
	idx := sortedKeys(msgs)
	for _, i := range idx {
		m := msgs[i]
		if t := texts[i].String(); t != "" {
			m.Content, _ = json.Marshal(t)
		}
		ks := make([]int, 0, len(calls[i]))
		for k := range calls[i] {
			ks = append(ks, k)
		}
		sort.Ints(ks)
		for _, k := range ks {
			c := calls[i][k]
			tc := m.ToolCalls
			tc = append(tc, struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			}{Index: k, ID: c.id})
			tc[len(tc)-1].Function.Name, tc[len(tc)-1].Function.Arguments = c.name, c.args
			m.ToolCalls = tc
		}
		out.Choices = append(out.Choices, struct {
			Message      *chatMessage `json:"message"`
			Delta        *chatMessage `json:"delta"`
			FinishReason string       `json:"finish_reason"`
		}{Message: m, FinishReason: finish[i]})
	}
	return out
}

// chatToMessage converts an OpenAI chat message to the semconv message shape with the shared
// conversion (genai.MessageFromOpenAI).
func chatToMessage(m chatMessage) Message {
	b, err := json.Marshal(m)
	var mm map[string]any
	if err != nil || json.Unmarshal(b, &mm) != nil {
		return Message{Role: m.Role, Parts: []Part{}}
	}
	return genai.MessageFromOpenAI(mm, "assistant")
}

func sortedKeys[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}
