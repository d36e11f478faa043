// SPDX-License-Identifier: Apache-2.0

package genai

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/runagainattr"
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
	SourceAttributes    Source = "attributes"           // gen_ai.input.messages / gen_ai.output.messages (semconv >= 1.37)
	SourceSpanEvents    Source = "span_events"          // span events gen_ai.{system,user,assistant,tool}.message, gen_ai.choice
	SourceLogRecords    Source = "log_records"          // log records with those event names (official OpenAI instrumentations)
	SourceOpenInference Source = "openinference"        // llm.input_messages.N.* / llm.output_messages.N.*
	SourceVercelAI      Source = "vercel_ai"            // ai.prompt.messages / ai.prompt, ai.response.text / ai.response.toolCalls
	SourceOpenLLMetry   Source = "openllmetry"          // gen_ai.prompt.N.* / gen_ai.completion.N.*
	SourceEventsAttr    Source = "events_attribute"     // attribute "events": gen_ai.* event bodies as JSON (Pydantic AI <= 0.2)
	SourcePydanticAI    Source = "pydantic_ai"          // pydantic_ai.all_messages / final_result (agent run spans)
	SourceOIValues      Source = "openinference_values" // input.value / output.value: provider bodies or text
	SourceLangfuse      Source = "langfuse"             // langfuse.observation.input / .output
	SourceAnyAgent      Source = "any_agent"            // gen_ai.output / gen_ai.output.type (any-agent)
)

// Describe says in words where messages of this source were read from, for views.
func (s Source) Describe() string {
	for _, d := range dialects {
		if d.source == s {
			return d.describe
		}
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
	// Unread names, for a side no form was read for, the attribute that holds its content in a
	// form runagain does not read: views say so and show that attribute as recorded.
	Unread []Unread `json:"unread,omitempty"`
}

// Unread is content a span holds that no dialect reads.
type Unread struct {
	Side      string `json:"side"`      // "input" or "output"
	Attribute string `json:"attribute"` // the attribute holding it, as recorded
	Reason    string `json:"reason"`    // why it was not read
}

// UnreadAttr returns the attribute named for side ("input" or "output") in cm.Unread, "" if none.
func (cm CallMessages) UnreadAttr(side string) string {
	for _, u := range cm.Unread {
		if u.Side == side {
			return u.Attribute
		}
	}
	return ""
}

// Attribute and event names read by LLMCallMessages that are not in genai.go.
const (
	AttrDerived              = runagainattr.GenAIDerived // bool: GenAI attributes read from a recorded HTTP exchange
	AttrEventName            = "event.name"              // log record attribute naming the event (before LogRecord.EventName)
	AttrEventContent         = "gen_ai.event.content"    // span event attribute holding the body as JSON (Azure AI Inference)
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

	AttrOpenInferenceOutputValue = "output.value"               // OpenInference: the call's output as text or JSON
	AttrPydanticAllMessages      = "pydantic_ai.all_messages"   // Pydantic AI (logfire): the run's messages
	AttrLangfuseInput            = "langfuse.observation.input" // Langfuse SDK attributes (also what its importer keeps)
	AttrLangfuseOutput           = "langfuse.observation.output"
	AttrTraceloopInput           = "traceloop.entity.input" // OpenLLMetry workflow/task spans
	AttrTraceloopOutput          = "traceloop.entity.output"
)

// eventRoles maps the message event names (semconv gen-ai-events.md, v1.28-1.36) to roles.
var eventRoles = map[string]string{
	EventSystemMessage:    "system",
	EventUserMessage:      "user",
	EventAssistantMessage: "assistant",
	EventToolMessage:      "tool",
}

// IsMessageEvent reports whether name is one of the event names an LLM call's messages are
// recorded under (span events or log records, semconv gen-ai-events.md 1.28-1.37 and the legacy
// content events): what LLMCallMessages reads as the call's messages, not a record about the run.
func IsMessageEvent(name string) bool {
	if _, ok := eventRoles[name]; ok {
		return true
	}
	switch name {
	case EventChoice, EventInferenceDetails, EventLegacyPrompt, EventLegacyCompletion:
		return true
	}
	return false
}

// messageRefKeys are the attributes whose payload reference (K_ref) means the messages are not
// readable until rehydrated.
var messageRefKeys = []string{
	AttrInputMessages, AttrOutputMessages, AttrSystemInstructions, AttrToolDefinitions,
	AttrVercelPromptMessages, AttrVercelPrompt, AttrVercelResponseText, AttrVercelToolCalls,
	AttrLegacyPrompt, AttrLegacyCompletion, AttrEventContent,
}

// call is what a dialect reader reads: one LLM span, the log records pointing at it, and the
// messages read so far (readers fill system instructions and tool definitions when unset).
type call struct {
	span  ptrace.Span
	attrs pcommon.Map
	logs  []plog.LogRecord
	cm    *CallMessages
}

// dialect is one form an LLM call's messages are recorded in. read returns the input and output
// messages it finds, nil for a side this form is absent from (an empty, non-nil list: the form
// is there and holds no message); an error names the attribute, event or record that could not
// be read.
type dialect struct {
	source   Source
	describe string
	read     func(c *call) (in, out []Message, err error)
}

// dialects are the forms LLMCallMessages tries, in order; each lives in its own dialect_*.go.
var dialects = []dialect{
	{SourceAttributes, "recorded attributes gen_ai.input.messages / gen_ai.output.messages", fromSpanAttrs},
	{SourceSpanEvents, "reconstructed from span events (gen_ai.* events)", fromSpanEvents},
	{SourceLogRecords, "reconstructed from log records (gen_ai.* events)", fromLogRecords},
	{SourceOpenInference, "reconstructed from OpenInference attributes llm.input_messages.* / llm.output_messages.*", fromOpenInference},
	{SourceVercelAI, "reconstructed from Vercel AI SDK attributes ai.prompt.messages / ai.response.*", fromVercel},
	{SourceOpenLLMetry, "reconstructed from OpenLLMetry attributes gen_ai.prompt.N.* / gen_ai.completion.N.*", fromOpenLLMetry},
	{SourceEventsAttr, "reconstructed from the attribute events (gen_ai.* event bodies, Pydantic AI)", fromEventsAttr},
	{SourcePydanticAI, "reconstructed from Pydantic AI attributes pydantic_ai.all_messages / final_result", fromPydanticAllMessages},
	{SourceOIValues, "reconstructed from OpenInference attributes input.value / output.value (request and response bodies)", fromOpenInferenceValues},
	{SourceLangfuse, "reconstructed from Langfuse attributes langfuse.observation.input / .output", fromLangfuseFields},
	{SourceAnyAgent, "reconstructed from any-agent attributes gen_ai.output / gen_ai.output.type", fromAnyAgent},
}

// LLMCallMessages builds the messages of one LLM span from whichever form its client used, trying
// the dialects in order (input and output independently, the first form present wins):
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
//  6. OpenLLMetry gen_ai.prompt.N.* / gen_ai.completion.N.* (tools llm.request.functions.N.*);
//  7. the attribute events of Pydantic AI <= 0.2 (gen_ai.* event bodies as one JSON array);
//  8. Pydantic AI pydantic_ai.all_messages / final_result (agent run spans);
//  9. OpenInference input.value / output.value without llm.*_messages: provider request and
//     response bodies (OpenAI, Anthropic, Gemini, Responses API) or plain text;
//  10. Langfuse langfuse.observation.input / .output (Langfuse SDKs; Langfuse exports' own fields);
//  11. any-agent gen_ai.output / gen_ai.output.type (the output side only: tool calls or text).
//
// A side no form could be read for, while the span holds content in an attribute runagain
// does not read, is named in Unread.
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
	c := &call{span: span, attrs: span.Attributes(), logs: logs, cm: &cm}
	var errs []error
	if v, ok := c.attrs.Get(AttrDerived); ok && v.Type() == pcommon.ValueTypeBool {
		cm.Derived = v.Bool()
	}
	if err := unresolvedRef("span attribute", c.attrs); err != nil {
		errs = append(errs, err)
	}
	for _, d := range dialects {
		if cm.InputSource != "" && cm.OutputSource != "" {
			break
		}
		in, out, err := d.read(c)
		errs = append(errs, err)
		cm.setInput(in, d.source)
		cm.setOutput(out, d.source)
	}
	err := errors.Join(errs...)
	cm.Unread = unread(c, err)
	return cm, err
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

// contentKeys are attributes that hold a call's input or output in some form, in the order they
// are named when no dialect could read the side: the dialects' own keys (present but not
// readable: invalid JSON, an unexpected shape) and the content attributes of other tools.
var contentKeys = map[string][]string{
	"input": {AttrInputMessages, AttrVercelPromptMessages, AttrVercelPrompt, AttrLegacyPrompt,
		AttrOpenInferenceInputValue, AttrPydanticAllMessages, AttrLangfuseInput, AttrTraceloopInput},
	"output": {AttrOutputMessages, AttrVercelResponseText, AttrVercelToolCalls, AttrLegacyCompletion,
		AttrOpenInferenceOutputValue, AttrPydanticAllMessages, AttrLangfuseOutput, AttrTraceloopOutput},
}

// unread names, for each side without a source, the first content attribute the span holds.
func unread(c *call, err error) []Unread {
	var out []Unread
	for _, side := range []struct {
		name string
		src  Source
	}{{"input", c.cm.InputSource}, {"output", c.cm.OutputSource}} {
		if side.src != "" {
			continue
		}
		for _, k := range contentKeys[side.name] {
			v, ok := c.attrs.Get(k)
			if !ok || v.AsString() == "" {
				continue
			}
			reason := "no known message form"
			if err != nil {
				for _, line := range strings.Split(err.Error(), "\n") {
					if strings.Contains(line, k) {
						reason = line
						break
					}
				}
			}
			out = append(out, Unread{Side: side.name, Attribute: k, Reason: reason})
			break
		}
	}
	return out
}
