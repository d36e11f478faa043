// SPDX-License-Identifier: Apache-2.0

// Package llmhttp reads recorded HTTP exchanges with the known LLM APIs and MCP servers and
// derives the GenAI semantic-convention attributes of the call they carry (docs/architecture.md "Derived at
// record time"): the record/replay proxy and the cassette importer add them to the exchange's
// span, so an agent with no tracing of its own still has model, tokens, messages and tool calls.
//
// Understood (request and response bodies, streaming responses reassembled from their SSE events):
//
//	OpenAI chat completions   POST .../chat/completions            (also Azure OpenAI deployments)
//	OpenAI Responses          POST .../responses
//	Anthropic Messages        POST .../v1/messages (and Claude on Vertex AI: .../publishers/anthropic/models/{model}:rawPredict | :streamRawPredict)
//	Gemini generateContent    POST .../models/{model}:generateContent | :streamGenerateContent
//	MCP streamable HTTP       POST, JSON-RPC 2.0 method tools/call (JSON or SSE response)
//
// Derived attributes never replace a present one, and the span gets runagain.genai.derived = true.
// This is a reading of the recorded bytes, not an inference about behaviour.
package llmhttp

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
)

// Attribute names set by Derive beyond those in internal/genai (GenAI and MCP semantic conventions).
const (
	AttrResponseID         = "gen_ai.response.id"
	AttrRequestMaxTokens   = "gen_ai.request.max_tokens"
	AttrRequestTemperature = "gen_ai.request.temperature"
	AttrRequestStream      = "gen_ai.request.stream" // runagain: the call asked for a streamed response
	AttrToolCallID         = "gen_ai.tool.call.id"
	AttrMCPMethodName      = "mcp.method.name"
	AttrMCPSessionID       = "mcp.session.id"
	AttrMCPProtocolVersion = "mcp.protocol.version"
	AttrJSONRPCRequestID   = "jsonrpc.request.id"
	AttrJSONRPCVersion     = "jsonrpc.protocol.version"
	AttrRPCResponseStatus  = "rpc.response.status_code"
	AttrNetworkTransport   = "network.transport"
	OperationChat          = "chat"
	OperationGenerate      = "generate_content"
	OperationExecuteTool   = "execute_tool"
	ProviderOpenAI         = "openai"
	ProviderAzureOpenAI    = "azure.ai.openai"
	ProviderAnthropic      = "anthropic"
	ProviderGemini         = "gcp.gemini"
	ProviderVertexAI       = "gcp.vertex_ai"
)

// API names a known API (the result of Detect).
type API string

// Known APIs.
const (
	APINone            API = ""
	APIOpenAIChat      API = "openai.chat_completions"
	APIOpenAIResponses API = "openai.responses"
	APIAnthropic       API = "anthropic.messages"
	APIGemini          API = "gemini.generate_content"
	APIMCPToolsCall    API = "mcp.tools_call"
)

// call is what one parser read: attributes in order, put only when absent.
type call struct {
	attrs []kv
}

type kv struct {
	key string
	val any // string, int64, float64, bool, []string, or a JSON value marshalled to a string
}

func (c *call) str(k, v string) {
	if v != "" {
		c.attrs = append(c.attrs, kv{k, v})
	}
}
func (c *call) num(k string, v int64, ok bool) {
	if ok {
		c.attrs = append(c.attrs, kv{k, v})
	}
}
func (c *call) json(k string, v any) {
	if v == nil {
		return
	}
	c.attrs = append(c.attrs, kv{k, marshal(v)})
}

// Detect tells which known API an exchange is, from its method, URL and request body.
func Detect(ex *fixture.Exchange) API {
	if !strings.EqualFold(ex.Method, "POST") {
		return APINone
	}
	u, err := url.Parse(ex.URL)
	if err != nil {
		return APINone
	}
	p := u.Path
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
		return APIOpenAIChat
	case strings.HasSuffix(p, "/responses"):
		return APIOpenAIResponses
	case strings.HasSuffix(p, "/v1/messages"):
		return APIAnthropic
	case strings.Contains(p, "/publishers/anthropic/models/") && (strings.HasSuffix(p, ":rawPredict") || strings.HasSuffix(p, ":streamRawPredict")):
		return APIAnthropic // Claude on Vertex AI: the Messages API, the model in the path
	case strings.HasSuffix(p, ":generateContent"), strings.HasSuffix(p, ":streamGenerateContent"):
		return APIGemini
	}
	if isMCPToolsCall(ex.RequestBody) {
		return APIMCPToolsCall
	}
	return APINone
}

// Derive adds to attrs the GenAI attributes read from ex when it is an exchange with a known
// API, never replacing a present key, and sets runagain.genai.derived = true. It returns the API
// understood (APINone: nothing added). A body that does not parse adds what could be read
// (the request's model when only the response is malformed).
func Derive(ex *fixture.Exchange, attrs pcommon.Map) API {
	api := Detect(ex)
	var c call
	switch api {
	case APIOpenAIChat:
		provider := ProviderOpenAI
		if u, err := url.Parse(ex.URL); err == nil && strings.HasSuffix(u.Hostname(), ".openai.azure.com") {
			provider = ProviderAzureOpenAI
		}
		openAIChat(&c, provider, ex)
	case APIOpenAIResponses:
		openAIResponses(&c, ex)
	case APIAnthropic:
		anthropic(&c, ex)
	case APIGemini:
		gemini(&c, ex)
	case APIMCPToolsCall:
		mcpToolsCall(&c, ex)
	default:
		return APINone
	}
	if len(c.attrs) == 0 {
		return APINone
	}
	for _, a := range c.attrs {
		if _, exists := attrs.Get(a.key); exists {
			continue
		}
		switch v := a.val.(type) {
		case string:
			attrs.PutStr(a.key, v)
		case int64:
			attrs.PutInt(a.key, v)
		case float64:
			attrs.PutDouble(a.key, v)
		case bool:
			attrs.PutBool(a.key, v)
		case []string:
			s := attrs.PutEmptySlice(a.key)
			for _, e := range v {
				s.AppendEmpty().SetStr(e)
			}
		}
	}
	if _, exists := attrs.Get(genai.AttrDerived); !exists {
		attrs.PutBool(genai.AttrDerived, true)
	}
	return api
}

// decode parses a JSON body (numbers exact), nil when it is not JSON.
func decode(b []byte) map[string]any {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}

// sseData returns the data payloads of an SSE body in order (multi-line data joined by "\n";
// fixture.ParseEvent).
func sseData(body []byte) []string {
	var out []string
	for _, ch := range fixture.SplitEvents(body) {
		if f := fixture.ParseEvent(string(body[ch.Offset : ch.Offset+ch.Size])); f.HasData {
			out = append(out, f.Data)
		}
	}
	return out
}

// sseJSON returns the JSON objects carried by an SSE body's data lines.
func sseJSON(body []byte) []map[string]any {
	var out []map[string]any
	for _, d := range sseData(body) {
		if m := decode([]byte(d)); m != nil {
			out = append(out, m)
		}
	}
	return out
}

// isSSE tells whether the response is a server-sent-event stream: chunks recorded, the
// Content-Type, or (recordings that kept no headers) a body that starts with an SSE field.
func isSSE(ex *fixture.Exchange) bool {
	if ex.Chunks != nil || fixture.IsEventStream(ex.ResponseHeader.Get("Content-Type")) {
		return true
	}
	b := bytes.TrimLeft(ex.ResponseBody, " \t\r\n")
	return bytes.HasPrefix(b, []byte("event:")) || bytes.HasPrefix(b, []byte("data:"))
}

func marshal(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return ""
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

func arr(v any) []any { a, _ := v.([]any); return a }

func path(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

// integer reads a JSON number as int64.
func integer(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		if err != nil {
			f, ferr := x.Float64()
			if ferr != nil {
				return 0, false
			}
			return int64(f), true
		}
		return n, true
	case float64:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

func float(v any) (float64, bool) {
	if n, ok := v.(json.Number); ok {
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// messagesJSON renders messages in the semconv JSON shape.
func messagesJSON(msgs []genai.Message) string { return marshal(msgs) }
