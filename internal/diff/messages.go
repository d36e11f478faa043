package diff

// The messages of an LLM call. The shared model is internal/genai's LLMCallMessages (issue 13,
// /work/COORDINATION.md "Shared interfaces" 1); until it is on main this file mirrors its exact
// types and reads the forms the diff needs itself. Swapping means: replace the types below with
// aliases (type Part = genai.Part, ...) and callMessages' attribute reading with
// genai.LLMCallMessages; the JSON of a Result does not change.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
)

// Part is one part of a message (GenAI semantic conventions gen_ai.*.messages JSON schema).
type Part struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
	Response  any    `json:"response,omitempty"`
}

// Message is one chat message.
type Message struct {
	Role         string `json:"role"`
	Parts        []Part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

// Source names the form messages were read from.
type Source string

// CallMessages are the messages of one LLM call.
type CallMessages struct {
	SystemInstructions []Part    `json:"system_instructions,omitempty"`
	ToolDefinitions    any       `json:"tool_definitions,omitempty"`
	Input              []Message `json:"input"`
	Output             []Message `json:"output"`
	InputSource        Source    `json:"input_source,omitempty"`
	OutputSource       Source    `json:"output_source,omitempty"`
	Derived            bool      `json:"derived,omitempty"`
}

// MessagesFunc builds the messages of one LLM span (genai.LLMCallMessages' signature).
type MessagesFunc func(span ptrace.Span, logs []plog.LogRecord) (CallMessages, error)

// callMessages is the default MessagesFunc: gen_ai.input.messages / gen_ai.output.messages /
// gen_ai.system_instructions / gen_ai.tool.definitions (semconv JSON), else OpenInference
// llm.input_messages.N.* / llm.output_messages.N.*, else input.value / output.value as one text
// message each.
func callMessages(span ptrace.Span, _ []plog.LogRecord) (CallMessages, error) {
	a := span.Attributes()
	var cm CallMessages
	for _, k := range []string{genai.AttrInputMessages + genai.RefSuffix, genai.AttrOutputMessages + genai.RefSuffix} {
		if _, ok := a.Get(k); ok {
			return cm, fmt.Errorf("span %s: %s is not rehydrated", span.SpanID(), k)
		}
	}
	if v, ok := a.Get(genai.AttrInputMessages); ok {
		if err := json.Unmarshal([]byte(v.AsString()), &cm.Input); err != nil {
			return cm, fmt.Errorf("span %s: %s: %w", span.SpanID(), genai.AttrInputMessages, err)
		}
		cm.InputSource = "attributes"
	}
	if v, ok := a.Get(genai.AttrOutputMessages); ok {
		if err := json.Unmarshal([]byte(v.AsString()), &cm.Output); err != nil {
			return cm, fmt.Errorf("span %s: %s: %w", span.SpanID(), genai.AttrOutputMessages, err)
		}
		cm.OutputSource = "attributes"
	}
	if v, ok := a.Get(genai.AttrSystemInstructions); ok {
		if err := json.Unmarshal([]byte(v.AsString()), &cm.SystemInstructions); err != nil {
			cm.SystemInstructions = []Part{{Type: "text", Content: v.AsString()}}
		}
	}
	if v, ok := a.Get(genai.AttrToolDefinitions); ok {
		var td any
		if json.Unmarshal([]byte(v.AsString()), &td) == nil {
			cm.ToolDefinitions = td
		} else {
			cm.ToolDefinitions = v.AsString()
		}
	}
	if cm.InputSource == "" {
		if msgs := openInference(a, "llm.input_messages."); len(msgs) > 0 {
			cm.Input, cm.InputSource = msgs, "openinference"
		} else if v, ok := a.Get("input.value"); ok {
			cm.Input, cm.InputSource = []Message{{Role: "user", Parts: []Part{{Type: "text", Content: v.AsString()}}}}, "attributes"
		}
	}
	if cm.OutputSource == "" {
		if msgs := openInference(a, "llm.output_messages."); len(msgs) > 0 {
			cm.Output, cm.OutputSource = msgs, "openinference"
		} else if v, ok := a.Get("output.value"); ok {
			cm.Output, cm.OutputSource = []Message{{Role: "assistant", Parts: []Part{{Type: "text", Content: v.AsString()}}}}, "attributes"
		}
	}
	if cm.Input == nil {
		cm.Input = []Message{}
	}
	if cm.Output == nil {
		cm.Output = []Message{}
	}
	return cm, nil
}

// openInference reads flattened OpenInference messages under prefix
// ("llm.input_messages."): N.message.role, .content, .contents.M.message_content.text,
// .tool_calls.M.tool_call.function.{name,arguments}, .tool_calls.M.tool_call.id, .tool_call_id.
func openInference(a pcommon.Map, prefix string) []Message {
	type msg struct {
		role, content, toolCallID string
		texts                     map[int]string
		calls                     map[int]*Part
	}
	byIdx := map[int]*msg{}
	a.Range(func(k string, v pcommon.Value) bool {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			return true
		}
		ns, field, ok := strings.Cut(rest, ".message.")
		n, err := strconv.Atoi(ns)
		if !ok || err != nil {
			return true
		}
		m := byIdx[n]
		if m == nil {
			m = &msg{texts: map[int]string{}, calls: map[int]*Part{}}
			byIdx[n] = m
		}
		switch {
		case field == "role":
			m.role = v.AsString()
		case field == "content":
			m.content = v.AsString()
		case field == "tool_call_id":
			m.toolCallID = v.AsString()
		case strings.HasPrefix(field, "contents."):
			r := strings.TrimPrefix(field, "contents.")
			is, f, _ := strings.Cut(r, ".")
			if i, err := strconv.Atoi(is); err == nil && f == "message_content.text" {
				m.texts[i] = v.AsString()
			}
		case strings.HasPrefix(field, "tool_calls."):
			r := strings.TrimPrefix(field, "tool_calls.")
			is, f, _ := strings.Cut(r, ".")
			i, err := strconv.Atoi(is)
			if err != nil {
				return true
			}
			p := m.calls[i]
			if p == nil {
				p = &Part{Type: "tool_call"}
				m.calls[i] = p
			}
			switch f {
			case "tool_call.function.name":
				p.Name = v.AsString()
			case "tool_call.function.arguments":
				p.Arguments = jsonValue(v.AsString())
			case "tool_call.id":
				p.ID = v.AsString()
			}
		}
		return true
	})
	idx := make([]int, 0, len(byIdx))
	for n := range byIdx {
		idx = append(idx, n)
	}
	sort.Ints(idx)
	out := make([]Message, 0, len(idx))
	for _, n := range idx {
		m := byIdx[n]
		msg := Message{Role: m.role, Parts: []Part{}}
		if m.toolCallID != "" || m.role == "tool" {
			msg.Parts = append(msg.Parts, Part{Type: "tool_call_response", ID: m.toolCallID, Response: m.content})
		} else if m.content != "" {
			msg.Parts = append(msg.Parts, Part{Type: "text", Content: m.content})
		}
		for _, i := range sortedKeys(m.texts) {
			msg.Parts = append(msg.Parts, Part{Type: "text", Content: m.texts[i]})
		}
		for _, i := range sortedKeys(m.calls) {
			msg.Parts = append(msg.Parts, *m.calls[i])
		}
		out = append(out, msg)
	}
	return out
}

func sortedKeys[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// jsonValue decodes s as JSON, or returns s itself when it is not JSON.
func jsonValue(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err == nil {
		return v
	}
	return s
}
