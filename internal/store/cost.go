package store

import (
	"sync"

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

var (
	processPricesMu sync.RWMutex
	processPrices   *pricing.Prices
)

// SetPrices sets the prices SpanCost uses in this process (nil: the embedded table). The runagain
// CLI sets them from --config (the runagain_storage extension's pricing) when it opens the store,
// so views that price calls (diff, dataset) agree with the collector.
func SetPrices(p *pricing.Prices) {
	processPricesMu.Lock()
	processPrices = p
	processPricesMu.Unlock()
}

// SpanCost prices one span with the process's prices (SetPrices; default the embedded
// genai-prices table without overrides), at the span's start time. It returns the cost in USD and
// whether the span is an unpriced LLM call (usage recorded, no known price: counted, never free).
// Spans without usage cost 0 and are not unpriced. Code that holds a *pricing.Prices (components
// given one by the runagain_storage extension) calls its SpanCost instead.
func SpanCost(attrs pcommon.Map, start pcommon.Timestamp) (usd float64, unpriced bool) {
	processPricesMu.RLock()
	p := processPrices
	processPricesMu.RUnlock()
	return spanCost(p, attrs, start)
}
