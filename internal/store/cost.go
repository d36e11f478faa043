// SPDX-License-Identifier: Apache-2.0

package store

import (
	"strings"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/runagainattr"
)

// DerivedExchange reports whether span is a recorded HTTP exchange (runagain.fixture.source) whose GenAI
// attributes the proxy or importer derived from its bodies (runagain.genai.derived) into an LLM or
// tool call (kind: genai.Classify of its attributes). Such a call counts only where no
// instrumented span covers it (internal/runview/rule): the writers of run totals mark it so the
// rule can be applied to their rows.
func DerivedExchange(span ptrace.Span, kind genai.Kind) bool {
	if kind != genai.KindLLM && kind != genai.KindTool {
		return false
	}
	v, ok := span.Attributes().Get(runagainattr.GenAIDerived)
	_, src := span.Attributes().Get(runagainattr.FixtureSource)
	return ok && src && v.Type() == pcommon.ValueTypeBool && v.Bool()
}

// EditedExchange reports whether span is a derived exchange (DerivedExchange) whose request a
// rerun's --set changed (runagainattr.RerunEdits): the counting rule counts it in place of the
// instrumented call that covers it (internal/runview/rule).
func EditedExchange(span ptrace.Span, kind genai.Kind) bool {
	if !DerivedExchange(span, kind) {
		return false
	}
	_, ok := span.Attributes().Get(runagainattr.RerunEdits)
	return ok
}

// SummaryExchange is DerivedExchange and EditedExchange read from a span summary's GenAIKind and
// Attributes JSON (SummaryAttribute keeps the three runagain keys they test), as the ClickHouse
// run index reads them (clickhousestore derivedExpr): for summaries read back from a sending
// queue's encoding (UnmarshalRecords), which carries neither flag.
func SummaryExchange(kind, attrs string) (exchange, edited bool) {
	if kind != string(genai.KindLLM) && kind != string(genai.KindTool) || !strings.Contains(attrs, runagainattr.GenAIDerived) {
		return false, false
	}
	r := gjson.GetMany(attrs, gjson.Escape(runagainattr.GenAIDerived), gjson.Escape(runagainattr.FixtureSource), gjson.Escape(runagainattr.RerunEdits))
	exchange = r[0].Type == gjson.True && r[1].Exists()
	return exchange, exchange && r[2].Exists()
}

// spanCost prices one span with prices (nil: the embedded table without overrides). It returns
// the cost in USD and whether the span is an unpriced LLM call: one that recorded usage but whose
// model has no known price (counted, never treated as free).
func spanCost(prices *pricing.Prices, attrs pcommon.Map, start pcommon.Timestamp) (usd float64, unpriced bool) {
	return usageCost(prices, genai.RunUsage(genai.Classify(attrs), attrs), attrs, start)
}

// usageCost is spanCost for a caller that has read the span's usage already: u is
// genai.RunUsage(genai.Classify(attrs), attrs) (see pricing.Prices.UsageCost).
func usageCost(prices *pricing.Prices, u genai.Usage, attrs pcommon.Map, start pcommon.Timestamp) (usd float64, unpriced bool) {
	if prices == nil {
		prices = pricing.DefaultPrices()
	}
	c := prices.UsageCost(u, attrs, start)
	return c.USD, c.Unpriced
}
