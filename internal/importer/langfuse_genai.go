// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"encoding/json"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
)

// AttrReportedCost is the cost the source reported for an observation (Langfuse
// costDetails.total), in USD. runagain's own cost comes from its price table (internal/pricing);
// this keeps what the exporting tool computed, for comparison.
const AttrReportedCost = "runagain.cost.reported_usd"

// lfGenAI maps Langfuse's own generation fields to GenAI attributes the observation lacks (a
// LangGraph.js run exported without OpenTelemetry attributes, or usage kept only in Langfuse's
// fields), never replacing a present value:
//
//	model                      -> gen_ai.request.model (when no model attribute of any dialect is present)
//	type GENERATION            -> gen_ai.operation.name "chat" (when the span is of no known kind)
//	usageDetails               -> gen_ai.usage.* (when no usage attribute of any dialect is present):
//	  input_cache_read | prompt_details.cache_read      -> cache_read.input_tokens
//	  input_cache_creation | prompt_details.cache_creation -> cache_creation.input_tokens
//	  output_reasoning | completion_details.reasoning   -> reasoning.output_tokens
//	  input, output -> input_tokens, output_tokens, in the semantic conventions' sense (input
//	  including cached tokens, output including reasoning): Langfuse prices its keys separately,
//	  so cache and reasoning counts are added unless total shows input and output already hold them
//	costDetails.total          -> runagain.cost.reported_usd
func lfGenAI(m map[string]field, attrs pcommon.Map) {
	if model := jsonString(m["model"].raw); model != "" && genai.Model(attrs) == "" {
		attrs.PutStr(genai.AttrRequestModel, model)
	}
	if strings.EqualFold(jsonString(m["type"].raw), "GENERATION") && genai.Classify(attrs) == genai.KindOther {
		attrs.PutStr(genai.AttrOperationName, "chat")
	}
	var usage map[string]json.Number
	if err := json.Unmarshal(m["usageDetails"].raw, &usage); err == nil && len(usage) > 0 && genai.TokenUsage(attrs) == (genai.Usage{}) {
		get := func(keys ...string) (int64, bool) {
			for _, k := range keys {
				if n, ok := usage[k]; ok {
					if v, err := n.Int64(); err == nil && v >= 0 && v <= genai.MaxTokens {
						return v, true
					}
				}
			}
			return 0, false
		}
		in, hasIn := get("input")
		out, hasOut := get("output")
		cr, hasCR := get("input_cache_read", "prompt_details.cache_read", "input_cached_tokens")
		cw, hasCW := get("input_cache_creation", "prompt_details.cache_creation", "input_cache_write")
		rs, hasRS := get("output_reasoning", "completion_details.reasoning")
		total, hasTotal := get("total")
		inT, outT := in+cr+cw, out+rs
		if hasTotal && total == in+out {
			inT, outT = in, out // input and output already include cache and reasoning counts
		} else if hasTotal && total == in+cr+cw+out {
			outT = out
		}
		if hasIn || hasCR || hasCW {
			attrs.PutInt(genai.AttrUsageInputTokens, inT)
		}
		if hasOut || hasRS {
			attrs.PutInt(genai.AttrUsageOutputTokens, outT)
		}
		if hasCR {
			attrs.PutInt(genai.AttrUsageCacheRead, cr)
		}
		if hasCW {
			attrs.PutInt(genai.AttrUsageCacheWrite, cw)
		}
		if hasRS {
			attrs.PutInt(genai.AttrUsageReasoning, rs)
		}
	}
	var cost map[string]json.Number
	if err := json.Unmarshal(m["costDetails"].raw, &cost); err == nil {
		if t, ok := cost["total"]; ok {
			if f, err := t.Float64(); err == nil && f >= 0 {
				if _, exists := attrs.Get(AttrReportedCost); !exists {
					attrs.PutDouble(AttrReportedCost, f)
				}
			}
		}
	}
}

// lfMessages puts back the messages Langfuse moved out of an OTel-ingested observation's
// attributes into its input and output fields (exports from late 2025 on keep the conversation
// there): an input or output that is a list of messages in the GenAI semantic conventions' form
// (objects with "role" and "parts", as gen_ai.input.messages and gen_ai.output.messages hold
// them since semconv 1.37; Pydantic AI's export of 2025-12) becomes that attribute again, as
// compact JSON text, unless the span already records it (or its offloaded reference). Any other
// non-empty input or output is kept in langfuse.observation.input / .output when the span's
// attributes hold that side in no form genai reads (and record no gen_ai.*.messages, inline or
// offloaded), so no export loses a conversation.
func lfMessages(m map[string]field, span ptrace.Span) {
	attrs := span.Attributes()
	for _, f := range []struct{ src, key string }{{"input", genai.AttrInputMessages}, {"output", genai.AttrOutputMessages}} {
		raw := m[f.src].raw
		if _, ok := attrs.Get(f.key); ok || !semconvMessages(raw) {
			continue
		}
		if _, ok := attrs.Get(f.key + genai.RefSuffix); ok {
			continue
		}
		attrs.PutStr(f.key, compactJSON(raw))
	}
	cm, _ := genai.LLMCallMessages(span, nil)
	for _, f := range []struct {
		src, key, conv string
		read           genai.Source
	}{{"input", genai.AttrLangfuseInput, genai.AttrInputMessages, cm.InputSource}, {"output", genai.AttrLangfuseOutput, genai.AttrOutputMessages, cm.OutputSource}} {
		_, hasConv := attrs.Get(f.conv)
		_, hasRef := attrs.Get(f.conv + genai.RefSuffix)
		if v := m[f.src]; f.read == "" && !hasConv && !hasRef && !isEmptyJSON(v.raw) {
			putStrIfAbsent(attrs, f.key, compactJSON(v.raw))
		}
	}
}

// semconvMessages reports whether raw is a non-empty JSON array of objects that each have a
// "role" string and a "parts" array.
func semconvMessages(raw []byte) bool {
	var msgs []struct {
		Role  *string            `json:"role"`
		Parts *[]json.RawMessage `json:"parts"`
	}
	if json.Unmarshal(raw, &msgs) != nil || len(msgs) == 0 {
		return false
	}
	for _, msg := range msgs {
		if msg.Role == nil || msg.Parts == nil {
			return false
		}
	}
	return true
}

// jsonString returns a JSON string value, "" for anything else.
func jsonString(raw []byte) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}
