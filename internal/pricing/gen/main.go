// SPDX-License-Identifier: Apache-2.0

// Command gen writes runagain's embedded price table from pydantic/genai-prices data.
//
// It reads <corpus>/prices/data.json (the compiled genai-prices snapshot), keeps what pricing
// needs (provider and model ids, match clauses, fallback providers, text-token and request
// prices, conditional prices), normalises every model's prices to a list of conditional prices
// and writes it as compact JSON. It also copies the upstream LICENSE (MIT) next to the output
// and records the newest prices_checked date found in <corpus>/prices/providers/*.yml.
//
// Usage: go run ./gen [-corpus DIR] [-source TEXT] -out genai_prices.json -license GENAI_PRICES_LICENSE
// The corpus defaults to $RUNAGAIN_CORPUS, else ../../shared/corpus relative to the package
// directory in which `go generate` runs.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"sort"
)

type provider struct {
	ID                     string            `json:"id"`
	ModelMatch             json.RawMessage   `json:"model_match,omitempty"`
	ProviderMatch          json.RawMessage   `json:"provider_match,omitempty"`
	FallbackModelProviders []string          `json:"fallback_model_providers,omitempty"`
	Models                 []json.RawMessage `json:"models"`
}

type inModel struct {
	ID     string          `json:"id"`
	Match  json.RawMessage `json:"match"`
	Prices json.RawMessage `json:"prices"`
}

type condPrice struct {
	Constraint json.RawMessage            `json:"constraint,omitempty"`
	Prices     map[string]json.RawMessage `json:"prices"`
}

type outModel struct {
	ID     string          `json:"id"`
	Match  json.RawMessage `json:"match"`
	Prices []condPrice     `json:"prices"`
}

type outProvider struct {
	ID                     string          `json:"id"`
	ModelMatch             json.RawMessage `json:"model_match,omitempty"`
	ProviderMatch          json.RawMessage `json:"provider_match,omitempty"`
	FallbackModelProviders []string        `json:"fallback_model_providers,omitempty"`
	Models                 []outModel      `json:"models"`
}

type table struct {
	Source        string        `json:"source"`
	PricesChecked string        `json:"prices_checked"`
	Providers     []outProvider `json:"providers"`
}

// kept are the price keys runagain prices (text tokens and requests); audio, image and video
// prices are dropped because GenAI spans do not record those token counts separately.
var kept = map[string]bool{"input_mtok": true, "cache_write_mtok": true, "cache_read_mtok": true, "output_mtok": true, "requests_kcount": true}

func main() {
	def := os.Getenv("RUNAGAIN_CORPUS")
	if def == "" {
		def = filepath.Join("..", "..", "..", "shared", "corpus")
	}
	corpus := flag.String("corpus", def, "runagain corpus directory holding prices/")
	source := flag.String("source", "https://github.com/pydantic/genai-prices prices/data.json @ 47df840a5ab1 (MIT)", "source note written into the table")
	out := flag.String("out", "genai_prices.json", "output file")
	lic := flag.String("license", "GENAI_PRICES_LICENSE", "where to copy the upstream LICENSE")
	flag.Parse()

	dir := filepath.Join(*corpus, "prices")
	raw, err := os.ReadFile(filepath.Join(dir, "data.json"))
	if err != nil {
		log.Fatalf("read genai-prices data (set RUNAGAIN_CORPUS or -corpus): %v", err)
	}
	t, err := convert(raw)
	if err != nil {
		log.Fatal(err)
	}
	t.Source = *source
	t.PricesChecked, err = newestChecked(filepath.Join(dir, "providers"))
	if err != nil {
		log.Fatal(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(t); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	l, err := os.ReadFile(filepath.Join(dir, "LICENSE"))
	if err != nil {
		log.Fatalf("genai-prices LICENSE must be kept with the data: %v", err)
	}
	notice := "The file genai_prices.json in this directory is derived from pydantic/genai-prices\n" +
		"(" + *source + "), distributed under the following licence:\n\n"
	if err := os.WriteFile(*lic, append([]byte(notice), l...), 0o644); err != nil {
		log.Fatal(err)
	}
	n := 0
	for _, p := range t.Providers {
		n += len(p.Models)
	}
	fmt.Printf("wrote %s: %d providers, %d models, prices checked up to %s\n", *out, len(t.Providers), n, t.PricesChecked)
}

func convert(raw []byte) (*table, error) {
	var in []provider
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("data.json: %w", err)
	}
	t := &table{}
	for _, p := range in {
		op := outProvider{ID: p.ID, ModelMatch: p.ModelMatch, ProviderMatch: p.ProviderMatch, FallbackModelProviders: p.FallbackModelProviders}
		for i, rm := range p.Models {
			var m inModel
			if err := json.Unmarshal(rm, &m); err != nil {
				return nil, fmt.Errorf("data.json: provider %s model %d: %w", p.ID, i, err)
			}
			om := outModel{ID: m.ID, Match: m.Match}
			var conds []condPrice
			if len(m.Prices) > 0 && m.Prices[0] == '[' {
				if err := json.Unmarshal(m.Prices, &conds); err != nil {
					return nil, fmt.Errorf("data.json: %s/%s prices: %w", p.ID, m.ID, err)
				}
			} else {
				var mp map[string]json.RawMessage
				if err := json.Unmarshal(m.Prices, &mp); err != nil {
					return nil, fmt.Errorf("data.json: %s/%s prices: %w", p.ID, m.ID, err)
				}
				conds = []condPrice{{Prices: mp}}
			}
			for ci := range conds {
				for k := range conds[ci].Prices {
					if !kept[k] {
						delete(conds[ci].Prices, k)
					}
				}
			}
			om.Prices = conds
			op.Models = append(op.Models, om)
		}
		t.Providers = append(t.Providers, op)
	}
	return t, nil
}

var checkedRE = regexp.MustCompile(`(?m)^\s*prices_checked:\s*'?(\d{4}-\d{2}-\d{2})`)

func newestChecked(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yml"))
	if err != nil || len(files) == 0 {
		return "", fmt.Errorf("no provider files in %s", dir)
	}
	var dates []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		for _, m := range checkedRE.FindAllSubmatch(b, -1) {
			dates = append(dates, string(m[1]))
		}
	}
	sort.Strings(dates)
	if len(dates) == 0 {
		return "", fmt.Errorf("no prices_checked in %s", dir)
	}
	return dates[len(dates)-1], nil
}
