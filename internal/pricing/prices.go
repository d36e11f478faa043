// SPDX-License-Identifier: Apache-2.0

package pricing

import (
	"fmt"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/genai"
)

// Config is the price configuration of a deployment: the embedded genai-prices table changed by
// overrides. It is the `pricing` section of the runagain_storage extension (and, for older
// configurations, of agent_guard); every part that prices a call uses the Prices built from it.
type Config struct {
	// Models add or replace model prices; they are consulted before the embedded table, in order.
	Models []Override `mapstructure:"models"`
	// AddReasoningTokens adds gen_ai.usage.reasoning.output_tokens to the output tokens before
	// pricing. Off by default: semconv and OpenAI count reasoning inside the output tokens; turn
	// it on for instrumentations that report them apart (Gemini's thoughtsTokenCount as recorded
	// by some SDKs), which providers bill as output.
	AddReasoningTokens bool `mapstructure:"add_reasoning_tokens"`
}

// IsZero reports whether c changes nothing (no override, reasoning tokens not added).
func (c Config) IsZero() bool { return len(c.Models) == 0 && !c.AddReasoningTokens }

// Validate checks every override; the error names the field (models[i].input_mtok ...).
func (c Config) Validate() error {
	_, err := Default().WithOverrides(c.Models)
	return err
}

// Prices prices LLM calls with one table and one set of options. It is safe for concurrent use.
// Build it once per configuration (New) and share it: the collector's components get it from the
// runagain_storage extension, the CLI from the same configuration.
type Prices struct {
	table        *Table
	addReasoning bool
}

// New builds the Prices of c: the embedded table with c's overrides. Errors name the field.
func New(c Config) (*Prices, error) {
	t, err := Default().WithOverrides(c.Models)
	if err != nil {
		return nil, err
	}
	return &Prices{table: t, addReasoning: c.AddReasoningTokens}, nil
}

var (
	defaultOnce   sync.Once
	defaultPrices *Prices
)

// DefaultPrices is the embedded table with no overrides (New(Config{})), built once.
func DefaultPrices() *Prices {
	defaultOnce.Do(func() { defaultPrices = &Prices{table: Default()} })
	return defaultPrices
}

// Table is the table with the overrides applied.
func (p *Prices) Table() *Table { return p.table }

// CallCost is the price of one LLM call.
type CallCost struct {
	// USD is the cost in US dollars; 0 when the call is unpriced or recorded no usage.
	USD float64
	// HasUsage is true when the call recorded token usage (input, output, cache read or write).
	HasUsage bool
	// Unpriced is true for a call with usage whose model has no known price: its cost is
	// unknown, never 0.
	Unpriced bool
	// ProviderID and ModelID name the price used (genai-prices ids, or the override's model).
	ProviderID, ModelID string
}

// SpanCost prices one span from its attributes (model, provider, token usage as read by
// genai.RunUsage) at its start time (for dated prices). A span without usage costs 0 and is
// not unpriced; so does an agent invocation, whose usage is its calls' (priced on them). It is
// the one place runagain prices a call: agent_guard's runagain.cost metric, the warm and cold
// summaries, the hot tier's per-span cost and the CLI's views all call it (or UsageCost).
func (p *Prices) SpanCost(attrs pcommon.Map, start pcommon.Timestamp) CallCost {
	return p.UsageCost(genai.RunUsage(genai.Classify(attrs), attrs), attrs, start)
}

// UsageCost is SpanCost for a caller that has already read the span's usage: u must be
// genai.RunUsage(genai.Classify(attrs), attrs) (the hot write path and the summaries compute it
// for their own columns), so the span is not classified and its usage not read a second time.
// The model and provider are read from attrs.
func (p *Prices) UsageCost(u genai.Usage, attrs pcommon.Map, start pcommon.Timestamp) CallCost {
	if u.Input <= 0 && u.Output <= 0 && u.CacheRead <= 0 && u.CacheWrite <= 0 {
		return CallCost{}
	}
	r, ok := p.table.Lookup(genai.Provider(attrs), genai.Model(attrs))
	if !ok {
		return CallCost{HasUsage: true, Unpriced: true}
	}
	pu := FromSemconv(u)
	if p.addReasoning && u.Reasoning > 0 {
		pu.Output += u.Reasoning
	}
	return CallCost{USD: r.Cost(pu, start.AsTime().UTC()), HasUsage: true, ProviderID: r.ProviderID, ModelID: r.ModelID}
}

// FormatUSD renders a cost for people, in the one form the CLI and the UI (`runagain ui`) share:
// "$0" for a cost of zero, "$0.001234" (6 decimals) below one cent, so a priced call below
// $0.0001 is never shown as $0.0000, "<$0.000001" for a positive cost that 6 decimals would
// round to zero, "$1.2340" (4 decimals) from one cent; "unpriced" when some call had usage but no
// price and nothing was priced, "$x + N unpriced" when both, "-" when nothing had usage.
func FormatUSD(usd float64, unpriced int64, hasUsage bool) string {
	if !hasUsage && unpriced == 0 && usd == 0 {
		return "-"
	}
	var s string
	switch {
	case usd == 0 && unpriced > 0:
		return "unpriced"
	case usd == 0:
		s = "$0"
	case usd < 0.01:
		s = fmt.Sprintf("$%.6f", usd)
		if usd > 0 && s == "$0.000000" { // decided on the printed digits: 5e-7 rounds down
			s = "<$0.000001"
		}
	default:
		s = fmt.Sprintf("$%.4f", usd)
	}
	if unpriced > 0 {
		s += fmt.Sprintf(" + %d unpriced", unpriced)
	}
	return s
}
