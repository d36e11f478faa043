// SPDX-License-Identifier: Apache-2.0

package store

import (
	"encoding/json"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/pricing"
)

// summarizeLegacy is Summarize as it was before attrJSON (a map of raw values and json.Marshal
// per span): the oracle of TestSummarizeMatchesLegacy and the baseline of BenchmarkRecords.
func summarizeLegacy(td ptrace.Traces, sessionKeys []string, prices *pricing.Prices) ([]SpanSummary, []KeyEvent) {
	if sessionKeys == nil {
		sessionKeys = genai.DefaultSessionKeys
	}
	var spans []SpanSummary
	var events []KeyEvent
	eachSpan(td, func(res pcommon.Resource, s ptrace.Span) {
		if s.TraceID().IsEmpty() || s.SpanID().IsEmpty() {
			return
		}
		attrs := s.Attributes()
		session, _ := genai.SessionID(attrs, res.Attributes(), sessionKeys)
		usage := genai.TokenUsage(attrs)
		sum := SpanSummary{
			TraceID: s.TraceID().String(), SpanID: s.SpanID().String(), SessionID: session,
			Name: s.Name(), Kind: int32(s.Kind()), Start: int64(s.StartTimestamp()), End: int64(SaneEnd(s.StartTimestamp(), s.EndTimestamp())),
			StatusCode: int32(s.Status().Code()), StatusMessage: s.Status().Message(),
			Service: str(res.Attributes(), genai.AttrServiceName), GenAIKind: string(genai.Classify(attrs)),
			Model: genai.Model(attrs), InputTokens: usage.Input, OutputTokens: usage.Output,
			ToolName: str(attrs, genai.AttrToolName), AgentName: str(attrs, genai.AttrAgentName),
			ErrorType: str(attrs, "error.type"),
		}
		cost, unpriced := spanCost(prices, attrs, s.StartTimestamp())
		sum.CostUSD = cost
		if unpriced {
			sum.Unpriced = 1
		}
		if !s.ParentSpanID().IsEmpty() {
			sum.ParentSpanID = s.ParentSpanID().String()
		}
		keep := map[string]any{}
		attrs.Range(func(k string, v pcommon.Value) bool {
			if SummaryAttribute(k) {
				keep[k] = v.AsRaw()
			}
			return true
		})
		sum.Attributes = mustJSON(keep)
		for i := 0; i < s.Events().Len(); i++ {
			ev := s.Events().At(i)
			if ev.Name() != "exception" {
				continue
			}
			typ := str(ev.Attributes(), "exception.type")
			if sum.ErrorType == "" {
				sum.ErrorType = typ
			}
			ea := map[string]any{}
			ev.Attributes().Range(func(k string, v pcommon.Value) bool {
				if k != "exception.stacktrace" && !strings.HasSuffix(k, genai.RefSuffix) {
					ea[k] = bounded(v.AsRaw())
				}
				return true
			})
			ke := KeyEvent{TraceID: sum.TraceID, SpanID: sum.SpanID, SessionID: session, Time: int64(ev.Timestamp()),
				Kind: "exception", Name: typ, Service: sum.Service,
				Message: bounded(str(ev.Attributes(), "exception.message")).(string), Attributes: mustJSON(ea)}
			ke.EventID = eventID(ke, i)
			events = append(events, ke)
		}
		spans = append(spans, sum)
	})
	return spans, events
}

// mustJSON is the legacy attributes encoding (a map through json.Marshal).
func mustJSON(m map[string]any) string {
	b, err := json.Marshal(m)
	if err != nil { // AsRaw values always marshal; keep the record rather than fail the batch
		return "{}"
	}
	return string(b)
}
