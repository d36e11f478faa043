package main

import (
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/store"
)

// priceShow sets the cost of each LLM call of view (and the run's total) from the spans of run,
// priced with prices: the same function and table (with the configured overrides) as the
// collector's agent_guard and tiers.
func priceShow(view *ShowRun, run *store.Run, prices *pricing.Prices) {
	costs := map[string]pricing.CallCost{}
	rss := run.Traces.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				s := spans.At(k)
				if c := prices.SpanCost(s.Attributes(), s.StartTimestamp()); c.HasUsage {
					costs[s.SpanID().String()] = c
				}
			}
		}
	}
	view.CostUSD, view.Unpriced = 0, 0
	for i := range view.Spans {
		c, ok := costs[view.Spans[i].SpanID]
		if !ok {
			continue
		}
		if c.Unpriced {
			view.Spans[i].Unpriced = true
			view.Unpriced++
			continue
		}
		usd := c.USD
		view.Spans[i].CostUSD = &usd
		view.CostUSD += usd
	}
	if view.CostUSD == 0 && view.Unpriced == 0 && run.Session != nil {
		// A cold-only run has no spans: its session's cost, priced when it was written.
		view.CostUSD, view.Unpriced = run.Session.CostUSD, run.Session.Unpriced
	}
}

// spanCostText is the cost part of a span's model line in `runagain show`: "  cost $0.000123",
// "  cost unpriced", or "" for a span without usage.
func spanCostText(s ShowSpan) string {
	switch {
	case s.Unpriced:
		return "  cost unpriced"
	case s.CostUSD != nil:
		return "  cost " + pricing.FormatUSD(*s.CostUSD, 0, true)
	}
	return ""
}
