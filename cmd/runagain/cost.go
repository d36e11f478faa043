// SPDX-License-Identifier: Apache-2.0

package main

import (
	"github.com/runagain/runagain/internal/pricing"
)

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
