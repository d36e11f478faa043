// SPDX-License-Identifier: Apache-2.0

// Package pricing prices one LLM call in US dollars from its token usage.
//
// The default table (Default) is generated from pydantic/genai-prices (MIT licence, notice in
// GENAI_PRICES_LICENSE beside this file): the compiled v1 snapshot prices/data.json of
// commit 47df840a5ab1 as vendored in the runagain corpus, whose newest provider entry was checked
// on the date in Table.PricesChecked (2026-08-13 for the committed file). Regenerate with
// `go generate ./internal/pricing` (reads $RUNAGAIN_CORPUS/prices, default ../shared/corpus).
//
// Model matching follows genai-prices (packages/python/genai_prices/data_snapshot.py and
// types.py):
//   - the model reference is lower-cased; equals, starts_with, ends_with and contains compare
//     case-insensitively, regex is searched (unanchored unless the pattern anchors) in the
//     lower-cased reference; or/and combine clauses.
//   - a provider is found by exact id, then by its provider_match clause (on the lower-cased,
//     trimmed provider name); without a provider name, by the first provider whose model_match
//     matches the model.
//   - inside a provider the first model whose match clause matches wins; if none does, the
//     providers listed in fallback_model_providers are searched (one step only).
//   - of a model's conditional prices the last whose constraint holds at the request time wins
//     (start_date: on or after that UTC date; start_time/end_time: daily UTC interval), else
//     the first.
//   - tiered prices are "cliff" tiers: the tier is chosen by the total input tokens (the highest
//     tier whose start is below the total) and that rate applies to all tokens of the type.
//   - input_tokens is the total input, cache reads and writes included; uncached input is
//     input - cache_read - cache_write, each priced at its own rate.
//
// runagain extensions, used only when the rules above find nothing:
//   - OpenTelemetry semconv provider names that genai-prices does not match are mapped
//     (x_ai -> x-ai, azure.ai.openai / azure.ai.inference / az.ai.* -> azure);
//   - a "provider/model" reference (LiteLLM style, e.g. "mistral/mistral-small-latest") is
//     retried as provider "provider" and model "model" (genai-prices does this for provider
//     "litellm" only);
//   - a provider that has no price for the model is followed by the model_match search.
//
// An unknown model has no price: Lookup reports ok=false and callers must count it as unpriced,
// never as a zero cost.
package pricing

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

//go:generate go run ./gen -out genai_prices.json -license GENAI_PRICES_LICENSE

//go:embed genai_prices.json
var defaultJSON []byte

// Match is a genai-prices match clause. Exactly one field is set.
type Match struct {
	Equals     *string `json:"equals,omitempty" mapstructure:"equals"`
	StartsWith *string `json:"starts_with,omitempty" mapstructure:"starts_with"`
	EndsWith   *string `json:"ends_with,omitempty" mapstructure:"ends_with"`
	Contains   *string `json:"contains,omitempty" mapstructure:"contains"`
	Regex      *string `json:"regex,omitempty" mapstructure:"regex"`
	Or         []Match `json:"or,omitempty" mapstructure:"or"`
	And        []Match `json:"and,omitempty" mapstructure:"and"`

	re *regexp.Regexp
}

// compile checks that exactly one clause is set and compiles regexes; path names the position
// for errors.
func (m *Match) compile(path string) error {
	n := 0
	for _, p := range []*string{m.Equals, m.StartsWith, m.EndsWith, m.Contains, m.Regex} {
		if p != nil {
			n++
		}
	}
	if m.Or != nil {
		n++
	}
	if m.And != nil {
		n++
	}
	if n != 1 {
		return fmt.Errorf("%s: a match clause needs exactly one of equals, starts_with, ends_with, contains, regex, or, and (has %d)", path, n)
	}
	if m.Regex != nil {
		re, err := regexp.Compile(*m.Regex)
		if err != nil {
			return fmt.Errorf("%s.regex: %w", path, err)
		}
		m.re = re
	}
	for i := range m.Or {
		if err := m.Or[i].compile(fmt.Sprintf("%s.or[%d]", path, i)); err != nil {
			return err
		}
	}
	for i := range m.And {
		if err := m.And[i].compile(fmt.Sprintf("%s.and[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// IsMatch reports whether the lower-cased text matches the clause.
func (m *Match) IsMatch(lower string) bool {
	switch {
	case m.Equals != nil:
		return lower == strings.ToLower(*m.Equals)
	case m.StartsWith != nil:
		return strings.HasPrefix(lower, strings.ToLower(*m.StartsWith))
	case m.EndsWith != nil:
		return strings.HasSuffix(lower, strings.ToLower(*m.EndsWith))
	case m.Contains != nil:
		return strings.Contains(lower, strings.ToLower(*m.Contains))
	case m.Regex != nil:
		if m.re == nil {
			m.re = regexp.MustCompile(*m.Regex)
		}
		return m.re.MatchString(lower)
	case m.Or != nil:
		for i := range m.Or {
			if m.Or[i].IsMatch(lower) {
				return true
			}
		}
		return false
	case m.And != nil:
		for i := range m.And {
			if !m.And[i].IsMatch(lower) {
				return false
			}
		}
		return len(m.And) > 0
	}
	return false
}

// Tier is one price tier: from Start input tokens (exclusive) on, Price USD per million tokens.
type Tier struct {
	Start int64   `json:"start"`
	Price float64 `json:"price"`
}

// Rate is a price in USD per million tokens, flat (no Tiers) or tiered by total input tokens.
// In JSON it is a number or {"base": n, "tiers": [{"start": n, "price": n}]}.
type Rate struct {
	Base  float64
	Tiers []Tier
}

// UnmarshalJSON accepts a number or a tiered object.
func (r *Rate) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err == nil {
		*r = Rate{Base: f}
		return nil
	}
	var t struct {
		Base  *float64 `json:"base"`
		Tiers []Tier   `json:"tiers"`
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return fmt.Errorf("price must be a number or {base, tiers}: %w", err)
	}
	if t.Base == nil {
		return fmt.Errorf("tiered price has no base")
	}
	*r = Rate{Base: *t.Base, Tiers: t.Tiers}
	return nil
}

// MarshalJSON writes a number for a flat rate.
func (r Rate) MarshalJSON() ([]byte, error) {
	if len(r.Tiers) == 0 {
		return json.Marshal(r.Base)
	}
	return json.Marshal(struct {
		Base  float64 `json:"base"`
		Tiers []Tier  `json:"tiers"`
	}{r.Base, r.Tiers})
}

// perMillion is the USD cost of n tokens at this rate, the tier chosen by totalInput.
func (r *Rate) cost(n, totalInput int64) float64 {
	if r == nil || n <= 0 {
		return 0
	}
	p := r.Base
	for i := len(r.Tiers) - 1; i >= 0; i-- {
		if totalInput > r.Tiers[i].Start {
			p = r.Tiers[i].Price
			break
		}
	}
	return p * float64(n) / 1e6
}

// ModelPrice is the set of prices of a model, USD per million tokens (RequestsKCount: USD per
// thousand requests). A nil rate means the model has no price for that token type.
type ModelPrice struct {
	InputMTok      *Rate    `json:"input_mtok,omitempty"`
	CacheWriteMTok *Rate    `json:"cache_write_mtok,omitempty"`
	CacheReadMTok  *Rate    `json:"cache_read_mtok,omitempty"`
	OutputMTok     *Rate    `json:"output_mtok,omitempty"`
	RequestsKCount *float64 `json:"requests_kcount,omitempty"`
}

// Constraint limits when a conditional price applies: from StartDate (YYYY-MM-DD, UTC) on, or
// daily between StartTime and EndTime (HH:MM:SS, UTC).
type Constraint struct {
	StartDate string `json:"start_date,omitempty"`
	StartTime string `json:"start_time,omitempty"`
	EndTime   string `json:"end_time,omitempty"`
}

func (c *Constraint) active(at time.Time) bool {
	at = at.UTC()
	if c.StartDate != "" {
		return at.Format(time.DateOnly) >= c.StartDate
	}
	if c.StartTime != "" && c.EndTime != "" {
		hms := at.Format(time.TimeOnly)
		return strings.TrimSuffix(c.StartTime, "Z") <= hms && hms < strings.TrimSuffix(c.EndTime, "Z")
	}
	return true
}

// ConditionalPrice is a price with an optional constraint.
type ConditionalPrice struct {
	Constraint *Constraint `json:"constraint,omitempty"`
	Prices     ModelPrice  `json:"prices"`
}

// Model is one priced model.
type Model struct {
	ID     string             `json:"id"`
	Match  Match              `json:"match"`
	Prices []ConditionalPrice `json:"prices"`
}

// PriceAt returns the model's price at time at (genai-prices ModelInfo.get_prices).
func (m *Model) PriceAt(at time.Time) *ModelPrice {
	for i := len(m.Prices) - 1; i >= 0; i-- {
		if c := m.Prices[i].Constraint; c == nil || c.active(at) {
			return &m.Prices[i].Prices
		}
	}
	if len(m.Prices) == 0 {
		return nil
	}
	return &m.Prices[0].Prices
}

// Provider is one inference provider and its models.
type Provider struct {
	ID                     string   `json:"id"`
	ModelMatch             *Match   `json:"model_match,omitempty"`
	ProviderMatch          *Match   `json:"provider_match,omitempty"`
	FallbackModelProviders []string `json:"fallback_model_providers,omitempty"`
	Models                 []Model  `json:"models"`
}

// Table is a price table. Lookups are safe for concurrent use.
type Table struct {
	// Source names where the prices come from (upstream repository and commit).
	Source string `json:"source"`
	// PricesChecked is the newest prices_checked date among the upstream provider files.
	PricesChecked string     `json:"prices_checked"`
	Providers     []Provider `json:"providers"`

	overrides []Override
	mu        sync.RWMutex
	cache     map[lookupKey]*Result // bounded by maxCached; an empty Result caches "no price"
}

type lookupKey struct{ provider, model string }

// Usage is the token usage of one call, in tokens. Input is the total input tokens, cache
// reads and writes included (genai-prices convention).
type Usage struct {
	Input, CacheRead, CacheWrite, Output int64
}

// Result is the outcome of a lookup.
type Result struct {
	ProviderID string
	ModelID    string
	model      *Model
	override   *Override
}

// Cost returns the USD cost of usage at time at (the request time, for dated prices).
func (r *Result) Cost(u Usage, at time.Time) float64 {
	var p *ModelPrice
	if r.override != nil {
		p = &r.override.price
	} else {
		p = r.model.PriceAt(at)
	}
	if p == nil {
		return 0
	}
	return p.Cost(u)
}

// Cost prices u with this price (genai-prices ModelPrice.calc_price, text tokens only):
// uncached input = Input - CacheRead - CacheWrite (clamped at 0); tiers chosen by Input.
func (p *ModelPrice) Cost(u Usage) float64 {
	uncached := u.Input - u.CacheRead - u.CacheWrite
	if uncached < 0 {
		uncached = 0
	}
	c := p.InputMTok.cost(uncached, u.Input) +
		p.CacheWriteMTok.cost(u.CacheWrite, u.Input) +
		p.CacheReadMTok.cost(u.CacheRead, u.Input) +
		p.OutputMTok.cost(u.Output, u.Input)
	if p.RequestsKCount != nil {
		c += *p.RequestsKCount / 1000
	}
	return c
}

// Override adds or replaces the price of models, from configuration. Overrides are consulted
// before the table, in order.
type Override struct {
	// Provider restricts the override to a provider name as recorded (gen_ai.provider.name),
	// compared case-insensitively; empty matches any provider.
	Provider string `mapstructure:"provider"`
	// Model is the model name, compared case-insensitively; Match, if set, is used instead.
	Model string `mapstructure:"model"`
	Match *Match `mapstructure:"match"`
	// Prices in USD per million tokens.
	InputMTok      float64  `mapstructure:"input_mtok"`
	OutputMTok     float64  `mapstructure:"output_mtok"`
	CacheReadMTok  *float64 `mapstructure:"cache_read_mtok"`
	CacheWriteMTok *float64 `mapstructure:"cache_write_mtok"`

	price ModelPrice
}

// Validate checks the override; the error names the field.
func (o *Override) Validate() error {
	if o.Model == "" && o.Match == nil {
		return fmt.Errorf("model: either model or match is required")
	}
	if o.Match != nil {
		if err := o.Match.compile("match"); err != nil {
			return err
		}
	}
	for name, v := range map[string]float64{"input_mtok": o.InputMTok, "output_mtok": o.OutputMTok} {
		if v < 0 {
			return fmt.Errorf("%s: must not be negative, got %v", name, v)
		}
	}
	if o.CacheReadMTok != nil && *o.CacheReadMTok < 0 {
		return fmt.Errorf("cache_read_mtok: must not be negative")
	}
	if o.CacheWriteMTok != nil && *o.CacheWriteMTok < 0 {
		return fmt.Errorf("cache_write_mtok: must not be negative")
	}
	return nil
}

func (o *Override) prepare() {
	o.price = ModelPrice{InputMTok: &Rate{Base: o.InputMTok}, OutputMTok: &Rate{Base: o.OutputMTok}}
	// Cached tokens are priced as plain input unless a cache price is given.
	cr, cw := o.InputMTok, o.InputMTok
	if o.CacheReadMTok != nil {
		cr = *o.CacheReadMTok
	}
	if o.CacheWriteMTok != nil {
		cw = *o.CacheWriteMTok
	}
	o.price.CacheReadMTok = &Rate{Base: cr}
	o.price.CacheWriteMTok = &Rate{Base: cw}
}

func (o *Override) matches(provider, model string) bool {
	if o.Provider != "" && !strings.EqualFold(strings.TrimSpace(o.Provider), provider) {
		return false
	}
	if o.Match != nil {
		return o.Match.IsMatch(model)
	}
	return strings.ToLower(o.Model) == model
}

// Parse reads a table in the generated JSON format and compiles its match clauses; errors name
// the provider and model.
func Parse(data []byte) (*Table, error) {
	t := &Table{}
	if err := json.Unmarshal(data, t); err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	for i := range t.Providers {
		p := &t.Providers[i]
		if p.ModelMatch != nil {
			if err := p.ModelMatch.compile(p.ID + ".model_match"); err != nil {
				return nil, err
			}
		}
		if p.ProviderMatch != nil {
			if err := p.ProviderMatch.compile(p.ID + ".provider_match"); err != nil {
				return nil, err
			}
		}
		for j := range p.Models {
			m := &p.Models[j]
			if err := m.Match.compile(p.ID + "/" + m.ID + ".match"); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

var defaultTable = sync.OnceValues(func() (*Table, error) { return Parse(defaultJSON) })

// Default returns the embedded genai-prices table. It panics only if the embedded file is
// corrupt, which the package tests rule out.
func Default() *Table {
	t, err := defaultTable()
	if err != nil {
		panic(err)
	}
	return t
}

// WithOverrides returns a table that consults overrides (validated) first, then t.
func (t *Table) WithOverrides(overrides []Override) (*Table, error) {
	nt := &Table{Source: t.Source, PricesChecked: t.PricesChecked, Providers: t.Providers}
	for i := range overrides {
		o := overrides[i]
		if err := o.Validate(); err != nil {
			return nil, fmt.Errorf("models[%d].%w", i, err)
		}
		o.prepare()
		nt.overrides = append(nt.overrides, o)
	}
	return nt, nil
}

// semconvProviderAlias maps OpenTelemetry gen_ai.provider.name values that genai-prices'
// provider_match does not recognise to genai-prices provider ids.
var semconvProviderAlias = map[string]string{
	"x_ai":               "x-ai",
	"azure.ai.openai":    "azure",
	"azure.ai.inference": "azure",
	"az.ai.openai":       "azure",
	"az.ai.inference":    "azure",
}

const maxCached = 10000

// Lookup finds the price of model as served by provider (either may be empty; provider is
// gen_ai.provider.name or the older gen_ai.system). ok is false when no price is known.
func (t *Table) Lookup(provider, model string) (res *Result, ok bool) {
	provider = strings.ToLower(strings.TrimSpace(provider))
	model = strings.ToLower(strings.TrimSpace(model))
	if model == "" {
		return nil, false
	}
	key := lookupKey{provider, model}
	t.mu.RLock()
	r, hit := t.cache[key]
	t.mu.RUnlock()
	if !hit {
		if r = t.lookup(provider, model); r == nil {
			r = &Result{}
		}
		t.mu.Lock()
		if t.cache == nil {
			t.cache = map[lookupKey]*Result{}
		}
		if len(t.cache) < maxCached {
			t.cache[key] = r
		}
		t.mu.Unlock()
	}
	return r, r.model != nil || r.override != nil
}

func (t *Table) lookup(provider, model string) *Result {
	for i := range t.overrides {
		if o := &t.overrides[i]; o.matches(provider, model) {
			id := o.Model
			if id == "" {
				id = model
			}
			return &Result{ProviderID: o.Provider, ModelID: id, override: o}
		}
	}
	if short, ok := googleResourceModel(model); ok {
		return t.lookup(provider, short)
	}
	if provider != "" {
		if p := t.providerByID(provider); p != nil {
			if r := t.findModel(p, model, true); r != nil {
				return r
			}
		}
	}
	if i := strings.IndexByte(model, '/'); i > 0 {
		if p := t.providerByID(model[:i]); p != nil {
			if r := t.findModel(p, model[i+1:], true); r != nil {
				return r
			}
		}
	}
	for i := range t.Providers {
		p := &t.Providers[i]
		if p.ModelMatch != nil && p.ModelMatch.IsMatch(model) {
			if r := t.findModel(p, model, true); r != nil {
				return r
			}
		}
	}
	return nil
}

// googleResourceModel returns the model id of a Google model resource name: "models/{model}"
// (Gemini API, ai.google.dev/api/models) or "[projects/{project}/locations/{location}/]
// publishers/{publisher}/models/{model}" (Vertex AI, cloud.google.com/vertex-ai/docs/reference/rest),
// which Vertex AI clients record as gen_ai.request.model; ok is false for any other name.
func googleResourceModel(model string) (string, bool) {
	i := strings.LastIndex(model, "models/")
	if i < 0 || (i > 0 && !strings.HasSuffix(model[:i], "/")) {
		return "", false
	}
	head, id := model[:i], model[i+len("models/"):]
	if id == "" || strings.Contains(id, "/") {
		return "", false
	}
	if head != "" && !strings.HasPrefix(head, "publishers/") && !strings.HasPrefix(head, "projects/") {
		return "", false
	}
	return id, true
}

// providerByID is genai-prices find_provider_by_id plus semconvProviderAlias.
func (t *Table) providerByID(id string) *Provider {
	if a, ok := semconvProviderAlias[id]; ok {
		id = a
	}
	for i := range t.Providers {
		if t.Providers[i].ID == id {
			return &t.Providers[i]
		}
	}
	for i := range t.Providers {
		if pm := t.Providers[i].ProviderMatch; pm != nil && pm.IsMatch(id) {
			return &t.Providers[i]
		}
	}
	return nil
}

func (t *Table) findModel(p *Provider, model string, fallback bool) *Result {
	for j := range p.Models {
		if p.Models[j].Match.IsMatch(model) {
			return &Result{ProviderID: p.ID, ModelID: p.Models[j].ID, model: &p.Models[j]}
		}
	}
	if fallback {
		for _, id := range p.FallbackModelProviders {
			for i := range t.Providers {
				if t.Providers[i].ID == id {
					if r := t.findModel(&t.Providers[i], model, false); r != nil {
						return r
					}
				}
			}
		}
	}
	return nil
}
