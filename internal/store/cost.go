package store

import (
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/pricing"
)

var (
	pricesOnce sync.Once
	prices     *pricing.Table
)

// SpanCost prices one span from its model, provider and token usage with the default
// genai-prices table (internal/pricing), at the span's start time. It returns the cost in USD
// and whether the span is an unpriced LLM call: one that recorded usage but whose model has no
// known price (counted, never treated as free). Spans without usage cost 0 and are not unpriced.
// Per-deployment price overrides (agent_guard's pricing.models) are not applied here.
func SpanCost(attrs pcommon.Map, start pcommon.Timestamp) (usd float64, unpriced bool) {
	u := genai.TokenUsage(attrs)
	if u.Input <= 0 && u.Output <= 0 && u.CacheRead <= 0 && u.CacheWrite <= 0 {
		return 0, false
	}
	pricesOnce.Do(func() { prices = pricing.Default() })
	r, ok := prices.Lookup(genai.Provider(attrs), genai.Model(attrs))
	if !ok {
		return 0, true
	}
	return r.Cost(pricing.FromSemconv(u), start.AsTime().UTC()), false
}
