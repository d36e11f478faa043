// SPDX-License-Identifier: Apache-2.0

package pricing

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.yaml.in/yaml/v3"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/genai"
)

// upstreamPrice reads the price entry of model id from the upstream provider YAML file
// (prices/providers/<file>.yml, the human-edited source, not the compiled data.json the
// generator reads) and computes the cost of u at time at with the documented genai-prices
// formula. It shares no code with the package under test.
func upstreamPrice(t *testing.T, file, id string, u Usage, at time.Time) float64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpus.Dir(t), "prices", "providers", file+".yml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Models []struct {
			ID     string `yaml:"id"`
			Prices any    `yaml:"prices"`
		} `yaml:"models"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, m := range doc.Models {
		if m.ID != id {
			continue
		}
		var prices map[string]any
		switch p := m.Prices.(type) {
		case map[string]any:
			prices = p
		case []any:
			prices = p[0].(map[string]any)["prices"].(map[string]any)
			for i := len(p) - 1; i >= 0; i-- {
				e := p[i].(map[string]any)
				c, has := e["constraint"].(map[string]any)
				if !has {
					prices = e["prices"].(map[string]any)
					break
				}
				active := false
				if sd, ok := c["start_date"]; ok {
					var d time.Time
					switch v := sd.(type) {
					case time.Time:
						d = v
					case string:
						d, _ = time.Parse(time.DateOnly, v)
					}
					active = !at.UTC().Before(d)
				} else {
					st, _ := time.Parse("15:04:05Z", c["start_time"].(string))
					et, _ := time.Parse("15:04:05Z", c["end_time"].(string))
					sec := at.UTC().Hour()*3600 + at.UTC().Minute()*60 + at.UTC().Second()
					active = st.Hour()*3600+st.Minute()*60 <= sec && sec < et.Hour()*3600+et.Minute()*60
				}
				if active {
					prices = e["prices"].(map[string]any)
					break
				}
			}
		}
		rate := func(key string) float64 {
			v, ok := prices[key]
			if !ok {
				return 0
			}
			switch r := v.(type) {
			case int:
				return float64(r)
			case float64:
				return r
			case map[string]any:
				p := num(r["base"])
				for _, ti := range r["tiers"].([]any) {
					tm := ti.(map[string]any)
					if u.Input > int64(num(tm["start"])) {
						p = num(tm["price"])
					}
				}
				return p
			}
			t.Fatalf("%s/%s: unexpected price %T", file, id, v)
			return 0
		}
		return (float64(u.Input-u.CacheRead-u.CacheWrite)*rate("input_mtok") +
			float64(u.CacheRead)*rate("cache_read_mtok") +
			float64(u.CacheWrite)*rate("cache_write_mtok") +
			float64(u.Output)*rate("output_mtok")) / 1e6
	}
	t.Fatalf("model %s not in %s.yml", id, file)
	return 0
}

func num(v any) float64 {
	switch n := v.(type) {
	case int:
		return float64(n)
	case float64:
		return n
	}
	return math.NaN()
}

func TestLookupAndCostAgainstUpstreamYAML(t *testing.T) {
	day := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name, provider, model string
		u                     Usage
		at                    time.Time
		wantProvider, wantID  string
		file                  string
	}{
		{"openai dated snapshot", "openai", "gpt-4o-2024-08-06", Usage{Input: 1200, CacheRead: 200, Output: 500}, day, "openai", "gpt-4o", "openai"},
		{"anthropic tier crossed by total input", "anthropic", "claude-sonnet-4-5-20250929", Usage{Input: 250000, CacheRead: 10000, CacheWrite: 5000, Output: 2000}, day, "anthropic", "claude-sonnet-4-5", "anthropic"},
		{"anthropic below tier", "anthropic", "claude-sonnet-4-5-20250929", Usage{Input: 150000, CacheRead: 10000, CacheWrite: 5000, Output: 2000}, day, "anthropic", "claude-sonnet-4-5", "anthropic"},
		{"provider by provider_match (semconv name)", "gcp.vertex.agent", "gemini-2.0-flash", Usage{Input: 5000, Output: 300}, day, "google", "gemini-2.0-flash", "google"},
		{"litellm-style provider/model", "", "mistral/mistral-small-latest", Usage{Input: 900, Output: 100}, day, "mistral", "mistral-small-latest", "mistral"},
		{"provider from model_match regex, case-insensitive", "", "O3-Mini", Usage{Input: 1000, Output: 1000}, day, "openai", "o3-mini", "openai"},
		{"time-of-day constraint (peak)", "deepseek", "deepseek-chat", Usage{Input: 1e6, Output: 1e6}, day, "deepseek", "deepseek-chat", "deepseek"},
		{"time-of-day constraint (off-peak)", "deepseek", "deepseek-chat", Usage{Input: 1e6, Output: 1e6}, day.Add(10 * time.Hour), "deepseek", "deepseek-chat", "deepseek"},
		{"start_date constraint before", "anthropic", "claude-opus-4-6", Usage{Input: 300000, Output: 1000}, time.Date(2026, 3, 12, 23, 0, 0, 0, time.UTC), "anthropic", "claude-opus-4-6", "anthropic"},
		{"start_date constraint after", "anthropic", "claude-opus-4-6", Usage{Input: 300000, Output: 1000}, time.Date(2026, 3, 13, 1, 0, 0, 0, time.UTC), "anthropic", "claude-opus-4-6", "anthropic"},
	}
	tab := Default()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := tab.Lookup(tc.provider, tc.model)
			if !ok {
				t.Fatalf("Lookup(%q, %q): no price", tc.provider, tc.model)
			}
			if r.ProviderID != tc.wantProvider || r.ModelID != tc.wantID {
				t.Fatalf("Lookup(%q, %q) = %s/%s, want %s/%s", tc.provider, tc.model, r.ProviderID, r.ModelID, tc.wantProvider, tc.wantID)
			}
			got := r.Cost(tc.u, tc.at)
			want := upstreamPrice(t, tc.file, tc.wantID, tc.u, tc.at)
			if want <= 0 || math.Abs(got-want) > 1e-12*math.Max(1, want) {
				t.Fatalf("cost = %.12f, upstream YAML gives %.12f", got, want)
			}
		})
	}
}

func TestConstraintsChangePrice(t *testing.T) {
	r, _ := Default().Lookup("deepseek", "deepseek-chat")
	u := Usage{Input: 1e6, Output: 1e6}
	peak := r.Cost(u, time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	off := r.Cost(u, time.Date(2026, 1, 1, 20, 0, 0, 0, time.UTC))
	if !(peak > off) {
		t.Fatalf("peak %v should cost more than off-peak %v", peak, off)
	}
}

func TestUnknownModelHasNoPrice(t *testing.T) {
	for _, m := range []struct{ p, m string }{{"", "my-private-llm-7b"}, {"acme", "acme-1"}, {"openai", ""}} {
		if r, ok := Default().Lookup(m.p, m.m); ok {
			t.Errorf("Lookup(%q, %q) = %s/%s, want no price", m.p, m.m, r.ProviderID, r.ModelID)
		}
	}
}

func TestOverrides(t *testing.T) {
	cr := 0.5
	tab, err := Default().WithOverrides([]Override{
		{Provider: "acme", Model: "Acme-1", InputMTok: 2, OutputMTok: 8, CacheReadMTok: &cr},
		{Match: &Match{StartsWith: ptr("gpt-4o")}, InputMTok: 100, OutputMTok: 100},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, ok := tab.Lookup("ACME", "acme-1")
	if !ok {
		t.Fatal("override not found")
	}
	u := Usage{Input: 1000, CacheRead: 400, Output: 100}
	if got, want := r.Cost(u, time.Now()), (600*2+400*0.5+100*8)/1e6; math.Abs(got-want) > 1e-15 {
		t.Fatalf("override cost %v, want %v", got, want)
	}
	r, _ = tab.Lookup("openai", "gpt-4o-mini")
	if got, want := r.Cost(Usage{Input: 1e6}, time.Now()), 100.0; got != want {
		t.Fatalf("override must win over the table: %v, want %v", got, want)
	}
	if _, ok := tab.Lookup("openai", "acme-1"); ok {
		t.Fatal("provider-restricted override matched another provider")
	}
	if _, err := Default().WithOverrides([]Override{{Model: "x", InputMTok: -1}}); err == nil || err.Error() != "models[0].input_mtok: must not be negative, got -1" {
		t.Fatalf("negative price: err = %v", err)
	}
	if _, err := Default().WithOverrides([]Override{{Match: &Match{Regex: ptr("(")}}}); err == nil {
		t.Fatal("bad regex accepted")
	}
}

func ptr(s string) *string { return &s }

// TestEmbeddedTableMatchesCorpus regenerates nothing but checks that every model of the corpus
// data.json is present with the same id in the embedded table, so a stale generated file fails.
func TestEmbeddedTableMatchesCorpus(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(corpus.Dir(t), "prices", "data.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw []struct {
		ID     string `yaml:"id"`
		Models []struct {
			ID string `yaml:"id"`
		} `yaml:"models"`
	}
	if err := yaml.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	tab := Default()
	if len(raw) != len(tab.Providers) {
		t.Fatalf("providers: corpus %d, embedded %d (run go generate ./internal/pricing)", len(raw), len(tab.Providers))
	}
	for i, p := range raw {
		if tab.Providers[i].ID != p.ID || len(tab.Providers[i].Models) != len(p.Models) {
			t.Fatalf("provider %d: corpus %s (%d models), embedded %s (%d)", i, p.ID, len(p.Models), tab.Providers[i].ID, len(tab.Providers[i].Models))
		}
	}
	if tab.PricesChecked == "" || tab.Source == "" {
		t.Fatal("embedded table lacks its source and date")
	}
}

// TestUsageCostIsSpanCost: UsageCost given the usage SpanCost reads (genai.RunUsage of the span's
// kind) prices exactly as SpanCost does, for a priced call, an unpriced one and an agent
// invocation whose usage is its calls' (costs 0, no usage).
func TestUsageCostIsSpanCost(t *testing.T) {
	start := pcommon.NewTimestampFromTime(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC))
	span := func(kv map[string]any) pcommon.Map {
		m := pcommon.NewMap()
		if err := m.FromRaw(kv); err != nil {
			t.Fatal(err)
		}
		return m
	}
	usage := map[string]any{genai.AttrUsageInputTokens: 1000, genai.AttrUsageOutputTokens: 200}
	with := func(kv map[string]any) map[string]any {
		for k, v := range usage {
			kv[k] = v
		}
		return kv
	}
	p := DefaultPrices()
	for _, tc := range []struct {
		name  string
		attrs pcommon.Map
		want  func(CallCost) bool
	}{
		{"priced", span(with(map[string]any{genai.AttrProviderName: "openai", genai.AttrRequestModel: "gpt-4o"})),
			func(c CallCost) bool { return c.USD > 0 && c.HasUsage && !c.Unpriced }},
		{"unpriced", span(with(map[string]any{genai.AttrRequestModel: "my-private-llm-7b"})),
			func(c CallCost) bool { return c.USD == 0 && c.HasUsage && c.Unpriced }},
		{"agent", span(with(map[string]any{genai.AttrAgentName: "planner"})),
			func(c CallCost) bool { return c == CallCost{} }},
	} {
		got := p.SpanCost(tc.attrs, start)
		if !tc.want(got) {
			t.Errorf("%s: SpanCost = %+v", tc.name, got)
		}
		if u := p.UsageCost(genai.RunUsage(genai.Classify(tc.attrs), tc.attrs), tc.attrs, start); u != got {
			t.Errorf("%s: UsageCost = %+v, SpanCost = %+v", tc.name, u, got)
		}
	}
}

// BenchmarkUsageCost prices one LLM span as the hot write path does: "spancost" (SpanCost: the
// baseline, which classifies the span and reads its usage itself) against "usagecost" (UsageCost
// given the usage the caller read for its own columns). Compare the rows as a ratio.
//
//	go test -run '^$' -bench UsageCost -benchmem ./internal/pricing/
func BenchmarkUsageCost(b *testing.B) {
	attrs := pcommon.NewMap()
	if err := attrs.FromRaw(map[string]any{genai.AttrProviderName: "openai", genai.AttrRequestModel: "gpt-4o",
		"gen_ai.operation.name": "chat", genai.AttrUsageInputTokens: 1000, genai.AttrUsageOutputTokens: 200}); err != nil {
		b.Fatal(err)
	}
	start := pcommon.NewTimestampFromTime(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC))
	p := DefaultPrices()
	u := genai.RunUsage(genai.Classify(attrs), attrs)
	b.Run("spancost", func(b *testing.B) {
		for b.Loop() {
			p.SpanCost(attrs, start)
		}
	})
	b.Run("usagecost", func(b *testing.B) {
		for b.Loop() {
			p.UsageCost(u, attrs, start)
		}
	})
}

// TestFormatUSD: the one form of a cost the CLI and the UI print.
func TestFormatUSD(t *testing.T) {
	for _, tc := range []struct {
		usd      float64
		unpriced int64
		usage    bool
		want     string
	}{
		{0, 0, false, "-"},
		{0, 0, true, "$0"},
		{0, 2, true, "unpriced"},
		{0.0000001, 0, true, "<$0.000001"},
		{0.0000005, 0, true, "<$0.000001"}, // the float64 nearest 5e-7 is below it: %.6f prints 0.000000
		{0.00000051, 0, true, "$0.000001"},
		{0.00001, 0, true, "$0.000010"},
		{0.00875, 0, true, "$0.008750"},
		{1.234, 1, true, "$1.2340 + 1 unpriced"},
	} {
		if got := FormatUSD(tc.usd, tc.unpriced, tc.usage); got != tc.want {
			t.Errorf("FormatUSD(%v, %d, %v) = %q, want %q", tc.usd, tc.unpriced, tc.usage, got, tc.want)
		}
	}
}

// TestLookupGoogleResourceNames: Vertex AI clients record the model as a resource name (the
// corpus's vertex-ai-2025-08-01 trace: projects/…/publishers/google/models/gemini-2.5-flash),
// the Gemini API as models/{id}; both are priced as the model id, other slashed names are not
// taken apart.
func TestLookupGoogleResourceNames(t *testing.T) {
	tab := Default()
	want, ok := tab.Lookup("", "gemini-2.5-flash")
	if !ok {
		t.Fatal("gemini-2.5-flash has no price in the default table")
	}
	for _, m := range []string{
		"models/gemini-2.5-flash",
		"publishers/google/models/gemini-2.5-flash",
		"projects/vertex-ai-integration-467711/locations/europe-central2/publishers/google/models/gemini-2.5-flash",
	} {
		got, ok := tab.Lookup("gcp.vertex_ai", m)
		if !ok || got.ModelID != want.ModelID {
			t.Errorf("Lookup(%q) = %+v, %v; want model %q", m, got, ok, want.ModelID)
		}
	}
	for _, m := range []string{"models/", "projects/p/locations/l/endpoints/123", "mymodels/gemini-2.5-flash", "other/models/gemini-2.5-flash"} {
		if _, ok := googleResourceModel(m); ok {
			t.Errorf("googleResourceModel(%q) took it apart", m)
		}
	}
}

// TestUsageSpellingsPricedOnce: each usage spelling is priced at its own rate (cached input at
// the cache-read price, not the input price), and a run's cost is its leaf calls', each once: the
// Vercel AI SDK's outer span over its doGenerate call costs nothing itself.
func TestUsageSpellingsPricedOnce(t *testing.T) {
	p := DefaultPrices()
	r, ok := p.Table().Lookup("openai", "gpt-4o-mini")
	if !ok {
		t.Fatal("gpt-4o-mini not priced")
	}
	at := time.Now()
	span := func(raw map[string]any) pcommon.Map {
		m := pcommon.NewMap()
		if err := m.FromRaw(raw); err != nil {
			t.Fatal(err)
		}
		return m
	}
	base := map[string]any{"gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o-mini"}
	with := func(kv map[string]any) map[string]any {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range kv {
			m[k] = v
		}
		return m
	}
	doGenerate := with(map[string]any{"ai.operationId": "ai.generateText.doGenerate",
		"gen_ai.usage.input_tokens": 1000, "gen_ai.usage.output_tokens": 100, "ai.usage.cachedInputTokens": 800})
	outer := with(map[string]any{"ai.operationId": "ai.generateText",
		"ai.usage.inputTokens": 1000, "ai.usage.outputTokens": 100, "ai.usage.cachedInputTokens": 800})
	want := r.Cost(Usage{Input: 1000, CacheRead: 800, Output: 100}, at)
	uncached := r.Cost(Usage{Input: 1000, Output: 100}, at)
	if !(want < uncached) {
		t.Fatalf("cached input must cost less: %v vs %v", want, uncached)
	}
	start := pcommon.NewTimestampFromTime(at)
	total := p.SpanCost(span(doGenerate), start).USD + p.SpanCost(span(outer), start).USD
	if math.Abs(total-want) > 1e-12 {
		t.Fatalf("run cost %v, want the doGenerate call's %v priced once with its cached input (uncached would be %v)", total, want, uncached)
	}
	// Anthropic's flat cache fields: input counts only the uncached tokens; reads and writes are
	// priced at their own rates.
	ra, ok := p.Table().Lookup("anthropic", "claude-sonnet-4-5")
	if !ok {
		t.Fatal("claude-sonnet-4-5 not priced")
	}
	flat := map[string]any{"gen_ai.system": "anthropic", "gen_ai.request.model": "claude-sonnet-4-5",
		"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5,
		"cache_read_input_tokens": 1000, "cache_creation_input_tokens": 200}
	if got, want := p.SpanCost(span(flat), start).USD, ra.Cost(Usage{Input: 1210, CacheRead: 1000, CacheWrite: 200, Output: 5}, at); math.Abs(got-want) > 1e-12 {
		t.Fatalf("Anthropic flat cache fields: cost %v, want %v", got, want)
	}
}
