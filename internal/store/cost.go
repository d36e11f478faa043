package store

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/pricing"
)

// spanCost prices one span with prices (nil: the embedded table without overrides). It returns
// the cost in USD and whether the span is an unpriced LLM call: one that recorded usage but whose
// model has no known price (counted, never treated as free).
func spanCost(prices *pricing.Prices, attrs pcommon.Map, start pcommon.Timestamp) (usd float64, unpriced bool) {
	if prices == nil {
		prices = pricing.DefaultPrices()
	}
	c := prices.SpanCost(attrs, start)
	return c.USD, c.Unpriced
}
