package store

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/pricing"
)

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
