package ui

import (
	"encoding/json"
	"fmt"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
)

// The shared message model (COORDINATION.md interface 1, internal/genai messages.go) is built by
// the clients helper. Until it lands on main, these types have its exact shape and
// llmCallMessages its exact signature, reading only the current semantic conventions
// (gen_ai.input.messages, gen_ai.output.messages, gen_ai.system_instructions,
// gen_ai.tool.definitions); swap to genai.LLMCallMessages then.

// Part is one part of a message (semconv gen_ai.*.messages JSON schema).
type Part struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments any    `json:"arguments,omitempty"`
	Response  any    `json:"response,omitempty"`
}

// Message is one message of an LLM call.
type Message struct {
	Role         string `json:"role"`
	Parts        []Part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

// Source names the form messages were read from.
type Source string

// CallMessages is the messages of one LLM call.
type CallMessages struct {
	SystemInstructions []Part    `json:"system_instructions,omitempty"`
	ToolDefinitions    any       `json:"tool_definitions,omitempty"`
	Input              []Message `json:"input"`
	Output             []Message `json:"output"`
	InputSource        Source    `json:"input_source,omitempty"`
	OutputSource       Source    `json:"output_source,omitempty"`
	Derived            bool      `json:"derived,omitempty"`
}

// llmCallMessages has genai.LLMCallMessages's signature (see above).
var llmCallMessages = func(span ptrace.Span, _ []plog.LogRecord) (CallMessages, error) {
	var cm CallMessages
	a := span.Attributes()
	for _, k := range []string{genai.AttrInputMessages, genai.AttrOutputMessages, genai.AttrSystemInstructions, genai.AttrToolDefinitions} {
		if _, ok := a.Get(k + "_ref"); ok {
			return cm, fmt.Errorf("attribute %s_ref: payload not rehydrated", k)
		}
	}
	read := func(k string, into any) (bool, error) {
		v, ok := a.Get(k)
		if !ok {
			return false, nil
		}
		if err := json.Unmarshal([]byte(v.AsString()), into); err != nil {
			return false, fmt.Errorf("attribute %s: %w", k, err)
		}
		return true, nil
	}
	if ok, err := read(genai.AttrInputMessages, &cm.Input); err != nil {
		return cm, err
	} else if ok {
		cm.InputSource = "attributes"
	}
	if ok, err := read(genai.AttrOutputMessages, &cm.Output); err != nil {
		return cm, err
	} else if ok {
		cm.OutputSource = "attributes"
	}
	if _, err := read(genai.AttrSystemInstructions, &cm.SystemInstructions); err != nil {
		return cm, err
	}
	if _, err := read(genai.AttrToolDefinitions, &cm.ToolDefinitions); err != nil {
		return cm, err
	}
	if cm.InputSource == "" {
		if msgs := openInferenceMessages(a, "llm.input_messages."); len(msgs) > 0 {
			cm.Input, cm.InputSource = msgs, "openinference"
		}
	}
	if cm.OutputSource == "" {
		if msgs := openInferenceMessages(a, "llm.output_messages."); len(msgs) > 0 {
			cm.Output, cm.OutputSource = msgs, "openinference"
		}
	}
	if cm.ToolDefinitions == nil {
		var tools []any
		for i := 0; ; i++ {
			v, ok := a.Get("llm.tools." + strconv.Itoa(i) + ".tool.json_schema")
			if !ok {
				break
			}
			var t any
			if json.Unmarshal([]byte(v.AsString()), &t) != nil {
				t = v.AsString()
			}
			tools = append(tools, t)
		}
		if tools != nil {
			cm.ToolDefinitions = tools
		}
	}
	if v, ok := a.Get("runagain.genai.derived"); ok && v.Bool() {
		cm.Derived = true
	}
	return cm, nil
}

// openInferenceMessages reads OpenInference's flattened messages under prefix
// (llm.input_messages.N.message.role / content / contents.M.message_content.text /
// tool_calls.M.tool_call.{id,function.name,function.arguments} / tool_call_id).
func openInferenceMessages(a pcommon.Map, prefix string) []Message {
	var out []Message
	str := func(k string) (string, bool) {
		v, ok := a.Get(k)
		if !ok {
			return "", false
		}
		return v.AsString(), true
	}
	for i := 0; ; i++ {
		p := prefix + strconv.Itoa(i) + ".message."
		role, okRole := str(p + "role")
		content, okContent := str(p + "content")
		if !okRole && !okContent {
			if _, ok := str(p + "contents.0.message_content.text"); !ok {
				if _, ok := str(p + "tool_calls.0.tool_call.function.name"); !ok {
					break
				}
			}
		}
		m := Message{Role: role, Parts: []Part{}}
		if id, ok := str(p + "tool_call_id"); ok {
			var resp any = content
			if json.Unmarshal([]byte(content), &resp) != nil {
				resp = content
			}
			m.Parts = append(m.Parts, Part{Type: "tool_call_response", ID: id, Response: resp})
		} else if okContent {
			m.Parts = append(m.Parts, Part{Type: "text", Content: content})
		}
		for j := 0; ; j++ {
			t, ok := str(p + "contents." + strconv.Itoa(j) + ".message_content.text")
			if !ok {
				break
			}
			m.Parts = append(m.Parts, Part{Type: "text", Content: t})
		}
		for j := 0; ; j++ {
			q := p + "tool_calls." + strconv.Itoa(j) + ".tool_call."
			name, ok := str(q + "function.name")
			if !ok {
				break
			}
			id, _ := str(q + "id")
			argStr, _ := str(q + "function.arguments")
			var args any = argStr
			if json.Unmarshal([]byte(argStr), &args) != nil {
				args = argStr
			}
			m.Parts = append(m.Parts, Part{Type: "tool_call", ID: id, Name: name, Arguments: args})
		}
		out = append(out, m)
	}
	return out
}
