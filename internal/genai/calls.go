// SPDX-License-Identifier: Apache-2.0

package genai

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// RefSuffix is the suffix of an attribute that holds the URI of an offloaded value
// (docs/architecture.md "Payload references": attribute K moved to blob storage becomes K_ref).
const RefSuffix = "_ref"

// Attribute keys read by the helpers below that are not in genai.go.
const (
	AttrErrorType             = "error.type"
	AttrOpenInferenceToolName = "tool.name"
	// Vercel AI SDK telemetry (ai.toolCall spans): the tool's name, arguments and result.
	AttrVercelToolName          = "ai.toolCall.name"
	AttrVercelToolArgs          = "ai.toolCall.args"
	AttrVercelToolResult        = "ai.toolCall.result"
	AttrOpenInferenceInputValue = "input.value"
	// any-agent (mozilla-ai/any-agent, corpus any-agent/): a tool span's arguments, and any
	// span's output with its format (AttrAnyAgentOutputType: "text" or "json").
	AttrAnyAgentToolArgs   = "gen_ai.tool.args"
	AttrAnyAgentOutput     = "gen_ai.output"
	AttrAnyAgentOutputType = "gen_ai.output.type"
)

// ToolArgumentKeys and ToolResultKeys are the attributes a tool span's arguments and result are
// recorded in, first present wins: semconv gen_ai.tool.call.arguments / .result, OpenInference
// input.value / output.value, any-agent gen_ai.tool.args / gen_ai.output, Vercel AI SDK
// ai.toolCall.args / .result. Every view reads them in this order.
var (
	ToolArgumentKeys = []string{AttrToolCallArguments, AttrOpenInferenceInputValue, AttrAnyAgentToolArgs, AttrVercelToolArgs}
	ToolResultKeys   = []string{AttrToolCallResult, AttrOpenInferenceOutputValue, AttrAnyAgentOutput, AttrVercelToolResult}
)

// Payload is an attribute value that may have been offloaded: Value holds the inline string,
// or Ref the reference URI when only K_ref is present. Both empty means not recorded.
type Payload struct {
	Value string
	Ref   string
}

// Recorded reports whether the payload was recorded inline or by reference.
func (p Payload) Recorded() bool { return p.Value != "" || p.Ref != "" }

// Identity returns a string equal for equal content: the inline value, or for a reference the
// content hash it names (ContentHashFromRef) prefixed with "sha256:". Inline and offloaded forms
// of the same content therefore do not compare equal; within one deployment a given attribute is
// either always offloaded above a size or never, so repeated calls compare like with like.
func (p Payload) Identity() string {
	if p.Ref != "" {
		return "sha256:" + ContentHashFromRef(p.Ref)
	}
	return p.Value
}

// payload reads key, else refKey (key + RefSuffix, passed precomputed to avoid an allocation
// per span) from attrs.
func payload(attrs pcommon.Map, key, refKey string) Payload {
	if v, ok := attrs.Get(key); ok {
		return Payload{Value: v.AsString()}
	}
	if v, ok := attrs.Get(refKey); ok {
		return Payload{Ref: v.AsString()}
	}
	return Payload{}
}

// ToolName returns gen_ai.tool.name, falling back to OpenInference tool.name; "" if none.
func ToolName(attrs pcommon.Map) string {
	for _, k := range []string{AttrToolName, AttrOpenInferenceToolName, AttrVercelToolName} {
		if v, ok := attrs.Get(k); ok && v.AsString() != "" {
			return v.AsString()
		}
	}
	return ""
}

// ToolArguments returns the tool call arguments: the first of ToolArgumentKeys recorded inline
// or by reference (K_ref).
func ToolArguments(attrs pcommon.Map) Payload {
	for _, k := range ToolArgumentKeys {
		if p := payload(attrs, k, k+RefSuffix); p.Recorded() {
			return p
		}
	}
	return Payload{}
}

// LLMRequest returns what identifies an LLM request's content: gen_ai.input.messages (or its
// _ref), else OpenInference input.value (or its _ref). System instructions are returned
// separately by SystemInstructions.
func LLMRequest(attrs pcommon.Map) Payload {
	if p := payload(attrs, AttrInputMessages, AttrInputMessages+RefSuffix); p.Recorded() {
		return p
	}
	return payload(attrs, AttrOpenInferenceInputValue, AttrOpenInferenceInputValue+RefSuffix)
}

// SystemInstructions returns gen_ai.system_instructions (or its _ref).
func SystemInstructions(attrs pcommon.Map) Payload {
	return payload(attrs, AttrSystemInstructions, AttrSystemInstructions+RefSuffix)
}

// FinishReasons returns gen_ai.response.finish_reasons (a string array per semconv; a single
// string is accepted too).
func FinishReasons(attrs pcommon.Map) []string {
	v, ok := attrs.Get(AttrFinishReasons)
	if !ok {
		return nil
	}
	if v.Type() == pcommon.ValueTypeSlice {
		s := v.Slice()
		out := make([]string, 0, s.Len())
		for i := 0; i < s.Len(); i++ {
			out = append(out, s.At(i).AsString())
		}
		return out
	}
	if s := v.AsString(); s != "" {
		return []string{s}
	}
	return nil
}

// AgentName returns gen_ai.agent.name from the span, then the resource; "" if none.
func AgentName(spanAttrs, resourceAttrs pcommon.Map) string {
	for _, m := range []pcommon.Map{spanAttrs, resourceAttrs} {
		if v, ok := m.Get(AttrAgentName); ok && v.AsString() != "" {
			return v.AsString()
		}
	}
	return ""
}

// RequestModel returns gen_ai.request.model, else Model(attrs).
func RequestModel(attrs pcommon.Map) string {
	if v, ok := attrs.Get(AttrRequestModel); ok && v.AsString() != "" {
		return v.AsString()
	}
	return Model(attrs)
}

// ContentHashFromRef returns the lower-case hex SHA-256 named by a content-addressed reference
// URI (payloadref layout: .../sha256/<64 hex>[.manifest].zst[?query]); for a URI without such a
// component it returns the URI itself, which is still equal for equal content when the store
// is content addressed.
func ContentHashFromRef(uri string) string {
	path := uri
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		base := path[i+1:]
		if len(base) >= 64 && isHex(base[:64]) && (len(base) == 64 || base[64] == '.') {
			return strings.ToLower(base[:64])
		}
	}
	return uri
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
