// SPDX-License-Identifier: Apache-2.0

package store

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/otlpid"
	"github.com/runagain/runagain/internal/runview/rule"
)

// RuleRow is one span row of a run index, as the writers of run totals store it (the SQLite hot
// and warm tiers' span rows, ClickHouse's runagain_span_summaries): what the counting rule
// (internal/runview/rule) reads of it, and the usage it may count.
type RuleRow struct {
	SpanID, ParentSpanID string // lowercase hex ('' for a root)
	Start, End           int64  // Unix ns
	GenAIKind            string // genai.Kind as stored: llm | tool | agent | other
	Model                string
	// Exchange: a derived exchange (DerivedExchange); Edited: one a rerun's --set changed
	// (EditedExchange), counted in place of the call covering it.
	Exchange, Edited          bool
	InputTokens, OutputTokens int64
	CostUSD                   float64 // USD
	Unpriced                  int64   // 1 for an unpriced LLM call
}

// RuleTotals is a run's usage as the counting rule counts it.
type RuleTotals struct {
	InputTokens, OutputTokens int64
	CostUSD                   float64 // USD
	Unpriced                  int64
}

// CountByRule sums the usage of the rows of one run that rule.Apply counts: a derived exchange
// covered by an instrumented span, an agent span and an aggregate LLM span over calls that record
// usage add nothing. Rows may come in any order; a span id repeated is read as its first row.
func CountByRule(rows []RuleRow) RuleTotals {
	spans := make([]rule.Span, len(rows))
	for i, r := range rows {
		id, _ := otlpid.ParseSpanID(r.SpanID)
		var parent pcommon.SpanID
		if r.ParentSpanID != "" {
			parent, _ = otlpid.ParseSpanID(r.ParentSpanID)
		}
		spans[i] = rule.Span{ID: id, Parent: parent, Start: pcommon.Timestamp(r.Start), End: pcommon.Timestamp(r.End),
			Kind: genai.Kind(r.GenAIKind), Exchange: r.Exchange, Derived: r.Exchange, Edited: r.Exchange && r.Edited, Model: r.Model,
			HasUsage: r.InputTokens != 0 || r.OutputTokens != 0 || r.CostUSD != 0 || r.Unpriced != 0}
	}
	var t RuleTotals
	for i, v := range rule.Apply(spans) {
		if v.CountUsage {
			t.InputTokens += rows[i].InputTokens
			t.OutputTokens += rows[i].OutputTokens
			t.CostUSD += rows[i].CostUSD
			t.Unpriced += rows[i].Unpriced
		}
	}
	return t
}
