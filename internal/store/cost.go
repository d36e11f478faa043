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
	return r.Cost(pricingUsage(u), start.AsTime().UTC()), false
}

// pricingUsage converts semconv usage to genai-prices usage, as agent_guard does: semconv input
// tokens include cached tokens; when cache reads plus writes exceed the input (instrumentations
// reporting only uncached input), they are added. Negative counts count as not recorded.
func pricingUsage(u genai.Usage) pricing.Usage {
	u.Input, u.Output, u.CacheRead, u.CacheWrite = max(u.Input, 0), max(u.Output, 0), max(u.CacheRead, 0), max(u.CacheWrite, 0)
	in := u.Input
	if u.CacheRead+u.CacheWrite > in {
		in += u.CacheRead + u.CacheWrite
	}
	return pricing.Usage{Input: in, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, Output: u.Output}
}
