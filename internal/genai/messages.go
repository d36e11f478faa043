package genai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Part is one part of a message, in the JSON schema of the semantic conventions'
// gen_ai.input.messages / gen_ai.output.messages / gen_ai.system_instructions
// (semconv-genai docs/gen-ai/gen-ai-input-messages.json: TextPart, ToolCallRequestPart,
// ToolCallResponsePart, ReasoningPart, BlobPart, UriPart, FilePart, ServerToolCall*Part, GenericPart).
type Part struct {
	Type      string `json:"type"`                // "text", "tool_call", "tool_call_response", "reasoning", "blob", "uri", "file", ...
	Content   string `json:"content,omitempty"`   // text, reasoning; base64 data of a blob
	ID        string `json:"id,omitempty"`        // tool_call, tool_call_response, server_tool_call*
	Name      string `json:"name,omitempty"`      // tool_call, server_tool_call
	Arguments any    `json:"arguments,omitempty"` // tool_call (JSON value; a string that is not JSON stays a string)
	Response  any    `json:"response,omitempty"`  // tool_call_response (JSON value)

	Modality               string `json:"modality,omitempty"`                  // blob, uri, file: "image", "video", "audio"
	MimeType               string `json:"mime_type,omitempty"`                 // blob, uri, file
	URI                    string `json:"uri,omitempty"`                       // uri
	FileID                 string `json:"file_id,omitempty"`                   // file
	ServerToolCall         any    `json:"server_tool_call,omitempty"`          // server_tool_call
	ServerToolCallResponse any    `json:"server_tool_call_response,omitempty"` // server_tool_call_response
}

// Message is one message: a role and its parts; output messages carry the finish reason.
type Message struct {
	Role         string `json:"role"`
	Name         string `json:"name,omitempty"` // participant name, when the client sent one
	Parts        []Part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

// Source names the form an LLM call's messages were read from.
type Source string

// Sources, in the order LLMCallMessages tries them (docs/architecture.md "The messages of an LLM call").
const (
	SourceAttributes    Source = "attributes"    // gen_ai.input.messages / gen_ai.output.messages (semconv >= 1.37)
	SourceSpanEvents    Source = "span_events"   // span events gen_ai.{system,user,assistant,tool}.message, gen_ai.choice
	SourceLogRecords    Source = "log_records"   // log records with those event names (official OpenAI instrumentations)
	SourceOpenInference Source = "openinference" // llm.input_messages.N.* / llm.output_messages.N.*
	SourceVercelAI      Source = "vercel_ai"     // ai.prompt.messages / ai.prompt, ai.response.text / ai.response.toolCalls
	SourceOpenLLMetry   Source = "openllmetry"   // gen_ai.prompt.N.* / gen_ai.completion.N.*
)

// Describe says in words where messages of this source were read from, for views.
func (s Source) Describe() string {
	switch s {
	case SourceAttributes:
		return "recorded attributes gen_ai.input.messages / gen_ai.output.messages"
	case SourceSpanEvents:
		return "reconstructed from span events (gen_ai.* events)"
	case SourceLogRecords:
		return "reconstructed from log records (gen_ai.* events)"
	case SourceOpenInference:
		return "reconstructed from OpenInference attributes llm.input_messages.* / llm.output_messages.*"
	case SourceVercelAI:
		return "reconstructed from Vercel AI SDK attributes ai.prompt.messages / ai.response.*"
	case SourceOpenLLMetry:
		return "reconstructed from OpenLLMetry attributes gen_ai.prompt.N.* / gen_ai.completion.N.*"
	}
	return string(s)
}

// CallMessages is what one LLM call received and returned.
type CallMessages struct {
	SystemInstructions []Part    `json:"system_instructions,omitempty"`
	ToolDefinitions    any       `json:"tool_definitions,omitempty"`
	Input              []Message `json:"input"`
	Output             []Message `json:"output"`
	InputSource        Source    `json:"input_source,omitempty"`
	OutputSource       Source    `json:"output_source,omitempty"`
	Derived            bool      `json:"derived,omitempty"` // runagain.genai.derived: read from a recorded HTTP exchange
}

// Attribute and event names read by LLMCallMessages that are not in genai.go.
const (
	AttrDerived              = "runagain.genai.derived" // bool: GenAI attributes read from a recorded HTTP exchange
	AttrEventName            = "event.name"             // log record attribute naming the event (before LogRecord.EventName)
	AttrEventContent         = "gen_ai.event.content"   // span event attribute holding the body as JSON (Azure AI Inference)
	EventSystemMessage       = "gen_ai.system.message"
	EventUserMessage         = "gen_ai.user.message"
	EventAssistantMessage    = "gen_ai.assistant.message"
	EventToolMessage         = "gen_ai.tool.message"
	EventChoice              = "gen_ai.choice"
	EventInferenceDetails    = "gen_ai.client.inference.operation.details" // semconv >= 1.37: messages as event attributes
	EventLegacyPrompt        = "gen_ai.content.prompt"                     // semconv <= 1.27: attribute gen_ai.prompt (JSON)
	EventLegacyCompletion    = "gen_ai.content.completion"                 // semconv <= 1.27: attribute gen_ai.completion (JSON)
	AttrLegacyPrompt         = "gen_ai.prompt"
	AttrLegacyCompletion     = "gen_ai.completion"
	AttrVercelPromptMessages = "ai.prompt.messages"
	AttrVercelPrompt         = "ai.prompt"
	AttrVercelTools          = "ai.prompt.tools"
	AttrVercelResponseText   = "ai.response.text"
	AttrVercelResponseObject = "ai.response.object"
	AttrVercelToolCalls      = "ai.response.toolCalls"
	AttrVercelReasoning      = "ai.response.reasoning"
	AttrVercelFinishReason   = "ai.response.finishReason"
)

// eventRoles maps the message event names (semconv gen-ai-events.md, v1.28-1.36) to roles.
var eventRoles = map[string]string{
	EventSystemMessage:    "system",
	EventUserMessage:      "user",
	EventAssistantMessage: "assistant",
	EventToolMessage:      "tool",
}

// messageRefKeys are the attributes whose payload reference (K_ref) means the messages are not
// readable until rehydrated.
var messageRefKeys = []string{
	AttrInputMessages, AttrOutputMessages, AttrSystemInstructions, AttrToolDefinitions,
	AttrVercelPromptMessages, AttrVercelPrompt, AttrVercelResponseText, AttrVercelToolCalls,
	AttrLegacyPrompt, AttrLegacyCompletion, AttrEventContent,
}

// LLMCallMessages builds the messages of one LLM span from whichever form its client used, trying
// in order (input and output independently, the first form present wins):
//
//  1. attributes gen_ai.input.messages, gen_ai.output.messages, gen_ai.system_instructions,
//     gen_ai.tool.definitions (semconv >= 1.37; a JSON string or a structured value);
//  2. span events named gen_ai.{system,user,assistant,tool}.message and gen_ai.choice (semconv
//     1.28-1.36; the body is the event's attributes, or its gen_ai.event.content JSON), and the
//     events gen_ai.client.inference.operation.details / gen_ai.content.prompt|completion;
//  3. log records with those event names (LogRecord.EventName or attribute event.name), bodies
//     as sent: the official OpenAI instrumentations (@opentelemetry/instrumentation-openai,
//     opentelemetry-instrumentation-openai-v2) send these;
//  4. OpenInference llm.input_messages.N.* / llm.output_messages.N.* (tools llm.tools.N.tool.json_schema);
//  5. Vercel AI SDK ai.prompt.messages (or ai.prompt), ai.response.text / toolCalls / finishReason;
//  6. OpenLLMetry gen_ai.prompt.N.* / gen_ai.completion.N.* (tools llm.request.functions.N.*).
//
// Older message shapes (OpenAI chat: content string or parts array, tool_calls, tool_call_id) are
// converted to the semconv parts model: a tool message becomes a tool_call_response part, tool
// call arguments sent as a JSON string become that JSON value (a string that is not JSON stays a
// string). Text is never altered.
//
// logs: the log records whose span id is this span's, in the order they were emitted (nil if
// none); choices are ordered by their index. Payload refs must already be rehydrated: a
// remaining reference on a key that holds messages is an error naming the key. A value that is
// not valid JSON is an error naming the key; the result then still holds every other form read.
// Derived is set when the span has runagain.genai.derived = true.
func LLMCallMessages(span ptrace.Span, logs []plog.LogRecord) (CallMessages, error) {
	cm := CallMessages{Input: []Message{}, Output: []Message{}}
	attrs := span.Attributes()
	var errs []error
	if v, ok := attrs.Get(AttrDerived); ok && v.Type() == pcommon.ValueTypeBool {
		cm.Derived = v.Bool()
	}
	if err := unresolvedRef("span attribute", attrs); err != nil {
		errs = append(errs, err)
	}

	// 1. semconv attributes.
	in, out, err := fromSemconvAttrs(&cm, attrs, "attribute ")
	errs = append(errs, err)
	cm.setInput(in, SourceAttributes)
	cm.setOutput(out, SourceAttributes)

	// 2. span events.
	if cm.InputSource == "" || cm.OutputSource == "" {
		var evIn []Message
		var evOut []indexed
		var haveIn, haveOut bool
		for i := 0; i < span.Events().Len(); i++ {
			ev := span.Events().At(i)
			where := fmt.Sprintf("span event %d (%s)", i, ev.Name())
			if err := unresolvedRef(where, ev.Attributes()); err != nil {
				errs = append(errs, err)
				continue
			}
			body, err := eventBody(ev.Attributes(), where)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			i2, o2, hi, ho, err := fromEvent(&cm, ev.Name(), body, ev.Attributes(), where)
			errs = append(errs, err)
			evIn = append(evIn, i2...)
			for _, o := range o2 {
				evOut = append(evOut, indexed{choiceIndex(body), o})
			}
			haveIn, haveOut = haveIn || hi, haveOut || ho
		}
		if haveIn {
			cm.setInput(evIn, SourceSpanEvents)
		}
		if haveOut {
			cm.setOutput(sortChoices(evOut), SourceSpanEvents)
		}
	}

	// 3. log records.
	if (cm.InputSource == "" || cm.OutputSource == "") && len(logs) > 0 {
		var lIn []Message
		var lOut []indexed
		var haveIn, haveOut bool
		for i, lr := range logs {
			name := lr.EventName()
			if name == "" {
				if v, ok := lr.Attributes().Get(AttrEventName); ok {
					name = v.AsString()
				}
			}
			where := fmt.Sprintf("log record %d (%s)", i, name)
			if err := unresolvedRef(where+" attribute", lr.Attributes()); err != nil {
				errs = append(errs, err)
				continue
			}
			var body any
			switch lr.Body().Type() {
			case pcommon.ValueTypeMap:
				if err := unresolvedRef(where+" body", lr.Body().Map()); err != nil {
					errs = append(errs, err)
					continue
				}
				body = lr.Body().Map().AsRaw()
			case pcommon.ValueTypeStr:
				s := lr.Body().Str()
				if strings.TrimSpace(s) != "" {
					v, err := decodeJSON(s)
					if err != nil {
						if _, known := eventRoles[name]; known || name == EventChoice {
							errs = append(errs, fmt.Errorf("%s body: %w", where, err))
						}
						continue
					}
					body = v
				}
			case pcommon.ValueTypeEmpty:
			default:
				body = lr.Body().AsRaw()
			}
			i2, o2, hi, ho, err := fromEvent(&cm, name, body, lr.Attributes(), where)
			errs = append(errs, err)
			lIn = append(lIn, i2...)
			for _, o := range o2 {
				lOut = append(lOut, indexed{choiceIndex(body), o})
			}
			haveIn, haveOut = haveIn || hi, haveOut || ho
		}
		if haveIn {
			cm.setInput(lIn, SourceLogRecords)
		}
		if haveOut {
			cm.setOutput(sortChoices(lOut), SourceLogRecords)
		}
	}

	// 4-6. flattened and vendor attribute dialects.
	if cm.InputSource == "" || cm.OutputSource == "" {
		in, out := fromOpenInference(&cm, attrs)
		cm.setInput(in, SourceOpenInference)
		cm.setOutput(out, SourceOpenInference)
	}
	if cm.InputSource == "" || cm.OutputSource == "" {
		in, out, err := fromVercel(&cm, attrs)
		errs = append(errs, err)
		cm.setInput(in, SourceVercelAI)
		cm.setOutput(out, SourceVercelAI)
	}
	if cm.InputSource == "" || cm.OutputSource == "" {
		in, out := fromOpenLLMetry(&cm, attrs)
		cm.setInput(in, SourceOpenLLMetry)
		cm.setOutput(out, SourceOpenLLMetry)
	}
	return cm, errors.Join(errs...)
}

// setInput takes msgs as the input when none was found yet (nil msgs: this form is absent).
func (cm *CallMessages) setInput(msgs []Message, src Source) {
	if msgs == nil || cm.InputSource != "" {
		return
	}
	cm.Input, cm.InputSource = msgs, src
}

func (cm *CallMessages) setOutput(msgs []Message, src Source) {
	if msgs == nil || cm.OutputSource != "" {
		return
	}
	cm.Output, cm.OutputSource = msgs, src
}

// unresolvedRef returns an error naming the first message-holding key of m that is present only
// as a payload reference (K_ref without K).
func unresolvedRef(where string, m pcommon.Map) error {
	var bad []string
	m.Range(func(k string, v pcommon.Value) bool {
		if !strings.HasSuffix(k, RefSuffix) || len(k) == len(RefSuffix) {
			return true
		}
		base := strings.TrimSuffix(k, RefSuffix)
		if _, ok := m.Get(base); ok {
			return true
		}
		if isMessageKey(base) {
			bad = append(bad, k)
		}
		return true
	})
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return fmt.Errorf("%s %s: payload reference not rehydrated", where, strings.Join(bad, ", "))
}

func isMessageKey(k string) bool {
	for _, m := range messageRefKeys {
		if k == m {
			return true
		}
	}
	switch k {
	case "content", "message", "tool_calls", "body":
		return true
	}
	for _, p := range []string{"llm.input_messages.", "llm.output_messages.", "gen_ai.prompt.", "gen_ai.completion."} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// fromSemconvAttrs reads the semconv message attributes of m (a span's or an event's attributes).
// System instructions and tool definitions are set on cm when not set yet. nil means absent.
func fromSemconvAttrs(cm *CallMessages, m pcommon.Map, where string) (in, out []Message, err error) {
	var errs []error
	if cm.SystemInstructions == nil {
		if v, ok := m.Get(AttrSystemInstructions); ok {
			raw, err := valueJSON(v)
			switch {
			case err == nil:
				cm.SystemInstructions = partsFrom(raw)
			case v.Type() == pcommon.ValueTypeStr:
				// @opentelemetry/instrumentation-openai (Responses API) records the instructions
				// as plain text, not the JSON parts array of the conventions: one text part.
				cm.SystemInstructions = []Part{{Type: "text", Content: v.Str()}}
			default:
				errs = append(errs, fmt.Errorf("%s%s: %w", where, AttrSystemInstructions, err))
			}
		}
	}
	if cm.ToolDefinitions == nil {
		if v, ok := m.Get(AttrToolDefinitions); ok {
			raw, err := valueJSON(v)
			if err != nil {
				cm.ToolDefinitions = v.AsString() // kept as sent
			} else {
				cm.ToolDefinitions = raw
			}
		}
	}
	if v, ok := m.Get(AttrInputMessages); ok {
		raw, err := valueJSON(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s%s: %w", where, AttrInputMessages, err))
		} else {
			in = messagesFrom(raw, "user")
		}
	}
	if v, ok := m.Get(AttrOutputMessages); ok {
		raw, err := valueJSON(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s%s: %w", where, AttrOutputMessages, err))
		} else {
			out = messagesFrom(raw, "assistant")
		}
	}
	return in, out, errors.Join(errs...)
}

// eventBody returns the body of a span event: its gen_ai.event.content JSON if present, else its
// attributes as a map.
func eventBody(attrs pcommon.Map, where string) (any, error) {
	if v, ok := attrs.Get(AttrEventContent); ok {
		raw, err := valueJSON(v)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", where, AttrEventContent, err)
		}
		return raw, nil
	}
	return attrs.AsRaw(), nil
}

// fromEvent reads one message event (span event or log record). hasIn/hasOut tell whether the
// event is a message form at all (an event with an empty body still counts: the client chose
// this form).
func fromEvent(cm *CallMessages, name string, body any, attrs pcommon.Map, where string) (in, out []Message, hasIn, hasOut bool, err error) {
	if role, ok := eventRoles[name]; ok {
		m, _ := body.(map[string]any)
		if m == nil {
			m = map[string]any{}
			if s, ok := body.(string); ok {
				m["content"] = s
			}
		}
		return []Message{messageFromMap(m, role)}, nil, true, false, nil
	}
	switch name {
	case EventChoice:
		m, _ := body.(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		msg := map[string]any{}
		if mm, ok := m["message"].(map[string]any); ok {
			msg = mm
		}
		out := messageFromMap(msg, "assistant")
		if fr, ok := m["finish_reason"].(string); ok {
			out.FinishReason = fr
		}
		return nil, []Message{out}, false, true, nil
	case EventInferenceDetails:
		i, o, err := fromSemconvAttrs(cm, attrs, where+" attribute ")
		return i, o, i != nil, o != nil, err
	case EventLegacyPrompt, EventLegacyCompletion:
		key := AttrLegacyPrompt
		def := "user"
		if name == EventLegacyCompletion {
			key, def = AttrLegacyCompletion, "assistant"
		}
		v, ok := attrs.Get(key)
		if !ok {
			return nil, nil, false, false, nil
		}
		raw, err := valueJSON(v)
		if err != nil {
			return nil, nil, false, false, fmt.Errorf("%s %s: %w", where, key, err)
		}
		msgs := messagesFrom(raw, def)
		if name == EventLegacyPrompt {
			return msgs, nil, true, false, nil
		}
		return nil, msgs, false, true, nil
	}
	return nil, nil, false, false, nil
}

// choiceIndex returns the index of a gen_ai.choice body, -1 if none.
func choiceIndex(body any) int {
	if m, ok := body.(map[string]any); ok {
		if n, ok := toInt(m["index"]); ok {
			return n
		}
	}
	return -1
}

// indexed is an output message with its choice index, for ordering choices.
type indexed struct {
	idx int
	msg Message
}

// sortChoices orders choices by their index when every choice has one, else keeps their order.
func sortChoices(cs []indexed) []Message {
	all := true
	for _, c := range cs {
		all = all && c.idx >= 0
	}
	if all {
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].idx < cs[j].idx })
	}
	out := make([]Message, len(cs))
	for i, c := range cs {
		out[i] = c.msg
	}
	return out
}

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
		msg.Role = defaultRole
	}
	msg.FinishReason = str(m["finish_reason"])
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

// --- flattened dialects ---------------------------------------------------------------------

// flatTree collects the attributes under prefix into a tree: each dotted segment is a map key;
// maps whose keys are all integers are read as arrays by listOf.
func flatTree(attrs pcommon.Map, prefix string) map[string]any {
	var root map[string]any
	attrs.Range(func(k string, v pcommon.Value) bool {
		if !strings.HasPrefix(k, prefix) {
			return true
		}
		if root == nil {
			root = map[string]any{}
		}
		segs := strings.Split(strings.TrimPrefix(k, prefix), ".")
		node := root
		for i, s := range segs {
			if i == len(segs)-1 {
				if _, exists := node[s]; !exists {
					node[s] = v.AsRaw()
				}
				break
			}
			next, ok := node[s].(map[string]any)
			if !ok {
				next = map[string]any{}
				node[s] = next
			}
			node = next
		}
		return true
	})
	return root
}

// listOf returns the entries of an integer-keyed node in numeric order.
func listOf(node any) []map[string]any {
	m, ok := node.(map[string]any)
	if !ok {
		return nil
	}
	type kv struct {
		i int
		v map[string]any
	}
	var items []kv
	for k, v := range m {
		i, err := strconv.Atoi(k)
		if err != nil {
			continue
		}
		if vm, ok := v.(map[string]any); ok {
			items = append(items, kv{i, vm})
		}
	}
	sort.Slice(items, func(a, b int) bool { return items[a].i < items[b].i })
	out := make([]map[string]any, len(items))
	for i, it := range items {
		out[i] = it.v
	}
	return out
}

func sub(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

// fromOpenInference reads llm.input_messages.N.message.* / llm.output_messages.N.message.*
// (OpenInference semantic conventions: role, content, contents.M.message_content.{type,text,
// image.image.url}, tool_calls.K.tool_call.{id,function.name,function.arguments}, tool_call_id,
// name) and llm.tools.N.tool.json_schema.
func fromOpenInference(cm *CallMessages, attrs pcommon.Map) (in, out []Message) {
	conv := func(tree map[string]any, def string) []Message {
		if tree == nil {
			return nil
		}
		msgs := []Message{}
		for _, e := range listOf(tree) {
			m, _ := e["message"].(map[string]any)
			if m == nil {
				continue
			}
			msg := Message{Role: str(m["role"]), Name: str(m["name"]), Parts: []Part{}}
			if msg.Role == "" {
				msg.Role = def
			}
			if msg.Role == "tool" {
				msg.Parts = append(msg.Parts, Part{Type: "tool_call_response", ID: str(m["tool_call_id"]), Response: m["content"]})
				msgs = append(msgs, msg)
				continue
			}
			if c, ok := m["content"].(string); ok {
				msg.Parts = append(msg.Parts, Part{Type: "text", Content: c})
			}
			for _, c := range listOf(m["contents"]) {
				mc, _ := c["message_content"].(map[string]any)
				if mc == nil {
					continue
				}
				switch str(mc["type"]) {
				case "image":
					msg.Parts = append(msg.Parts, Part{Type: "uri", Modality: "image", URI: str(sub(mc, "image", "image", "url"))})
				default:
					msg.Parts = append(msg.Parts, Part{Type: "text", Content: str(mc["text"])})
				}
			}
			for _, tc := range listOf(m["tool_calls"]) {
				t, _ := tc["tool_call"].(map[string]any)
				if t == nil {
					continue
				}
				p := Part{Type: "tool_call", ID: str(t["id"]), Name: str(sub(t, "function", "name"))}
				if a := sub(t, "function", "arguments"); a != nil {
					p.Arguments = JSONValue(a)
				}
				msg.Parts = append(msg.Parts, p)
			}
			msgs = append(msgs, msg)
		}
		return msgs
	}
	in = conv(flatTree(attrs, "llm.input_messages."), "user")
	out = conv(flatTree(attrs, "llm.output_messages."), "assistant")
	if (in != nil || out != nil) && cm.ToolDefinitions == nil {
		if tools := flatTree(attrs, "llm.tools."); tools != nil {
			defs := []any{}
			for _, t := range listOf(tools) {
				if s := sub(t, "tool", "json_schema"); s != nil {
					defs = append(defs, JSONValue(s))
				}
			}
			cm.ToolDefinitions = defs
		}
	}
	return in, out
}

// fromVercel reads the Vercel AI SDK attributes (ai.* telemetry, v4-v6): ai.prompt.messages
// ([{role, content: string | [{type: text|tool-call|tool-result|reasoning|image|file, ...}]}]),
// else ai.prompt ({system, prompt, messages}); ai.response.text, ai.response.object,
// ai.response.toolCalls, ai.response.reasoning, ai.response.finishReason; ai.prompt.tools.
func fromVercel(cm *CallMessages, attrs pcommon.Map) (in, out []Message, err error) {
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

// fromOpenLLMetry reads gen_ai.prompt.N.{role,content,tool_call_id,tool_calls.K.{id,name,arguments}}
// and gen_ai.completion.N.{role,content,finish_reason,tool_calls.K.*} (Traceloop OpenLLMetry), and
// llm.request.functions.N.{name,description,parameters} as tool definitions.
func fromOpenLLMetry(cm *CallMessages, attrs pcommon.Map) (in, out []Message) {
	conv := func(tree map[string]any, def string) []Message {
		if tree == nil {
			return nil
		}
		msgs := []Message{}
		for _, m := range listOf(tree) {
			mm := map[string]any{"role": m["role"], "content": m["content"], "tool_call_id": m["tool_call_id"],
				"finish_reason": m["finish_reason"], "name": m["name"]}
			if mm["role"] == nil {
				mm["role"] = def
			}
			if tcs := listOf(m["tool_calls"]); tcs != nil {
				arr := make([]any, len(tcs))
				for i, tc := range tcs {
					arr[i] = tc
				}
				mm["tool_calls"] = arr
			}
			if s, ok := mm["content"].(string); ok && (mm["role"] != "tool") {
				// Multimodal content is sent as JSON text of a parts array.
				if t := strings.TrimSpace(s); strings.HasPrefix(t, "[{") {
					if d, err := decodeJSON(t); err == nil {
						mm["content"] = d
					}
				}
			}
			msgs = append(msgs, messageFromMap(mm, def))
		}
		return msgs
	}
	in = conv(flatTree(attrs, AttrLegacyPrompt+"."), "user")
	out = conv(flatTree(attrs, AttrLegacyCompletion+"."), "assistant")
	if (in != nil || out != nil) && cm.ToolDefinitions == nil {
		if fns := flatTree(attrs, "llm.request.functions."); fns != nil {
			defs := []any{}
			for _, f := range listOf(fns) {
				d := map[string]any{"type": "function", "name": f["name"]}
				if f["description"] != nil {
					d["description"] = f["description"]
				}
				if f["parameters"] != nil {
					d["parameters"] = JSONValue(f["parameters"])
				}
				defs = append(defs, d)
			}
			cm.ToolDefinitions = defs
		}
	}
	return in, out
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
