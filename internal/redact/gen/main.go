// SPDX-License-Identifier: Apache-2.0

// Command gen writes runagain's embedded secret rules from the gitleaks default configuration.
//
// It reads <corpus>/secrets/gitleaks/config/gitleaks.toml (gitleaks' generated default rule set,
// MIT licence), keeps what detection inside payloads needs (rule id, regex, secret group, entropy
// threshold, keywords, and the allowlists that test the secret, the match or the line: regexes and
// stopwords; path and commit allowlists do not apply to payloads), drops path-only rules and the
// rules that runagain implements itself (listed in -skip), checks that every regex compiles with
// Go's regexp (RE2, as gitleaks does), and writes compact JSON. It copies the upstream LICENSE next
// to the output.
//
// Usage: go run ./gen [-corpus DIR] -out gitleaks_rules.json -license GITLEAKS_LICENSE
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
	"strings"

	"github.com/BurntSushi/toml"
)

type allowlist struct {
	Description string   `toml:"description"`
	Condition   string   `toml:"condition"`
	RegexTarget string   `toml:"regexTarget"`
	Regexes     []string `toml:"regexes"`
	Stopwords   []string `toml:"stopwords"`
	Paths       []string `toml:"paths"`
	Commits     []string `toml:"commits"`
}

type inRule struct {
	ID          string      `toml:"id"`
	Regex       string      `toml:"regex"`
	Path        string      `toml:"path"`
	SecretGroup int         `toml:"secretGroup"`
	Entropy     float64     `toml:"entropy"`
	Keywords    []string    `toml:"keywords"`
	Allowlists  []allowlist `toml:"allowlists"`
}

type inConfig struct {
	Allowlist allowlist `toml:"allowlist"`
	Rules     []inRule  `toml:"rules"`
}

// OutAllow is one allowlist: the finding is allowed (not reported) when its target matches any
// regex, or the secret contains any stopword; with Condition "AND" both must hold.
type OutAllow struct {
	Target    string   `json:"target,omitempty"` // "secret" (default), "match" or "line"
	And       bool     `json:"and,omitempty"`
	Regexes   []string `json:"regexes,omitempty"`
	Stopwords []string `json:"stopwords,omitempty"`
}

// OutRule is one generated rule.
type OutRule struct {
	ID          string     `json:"id"`
	Regex       string     `json:"regex"`
	SecretGroup int        `json:"secret_group,omitempty"`
	Entropy     float64    `json:"entropy,omitempty"`
	Keywords    []string   `json:"keywords"`
	Path        bool       `json:"path_restricted,omitempty"`
	Allow       []OutAllow `json:"allow,omitempty"`
}

// Out is the generated file.
type Out struct {
	Source  string   `json:"source"`
	Licence string   `json:"licence"`
	Global  OutAllow `json:"global"`
	// GenericAllow are the allowlists of the skipped generic-api-key rule (match and secret
	// targets), which runagain applies to its own keyword-anchored detector.
	GenericAllow []OutAllow `json:"generic_allow"`
	Skipped      []string   `json:"skipped"`
	Rules        []OutRule  `json:"rules"`
}

func main() {
	corpus := flag.String("corpus", "", "corpus directory (default $RUNAGAIN_CORPUS or ../../shared/corpus)")
	out := flag.String("out", "gitleaks_rules.json", "output JSON")
	lic := flag.String("license", "GITLEAKS_LICENSE", "where to copy the upstream licence")
	skip := flag.String("skip", "generic-api-key,private-key", "comma-separated gitleaks rule ids runagain implements itself")
	source := flag.String("source", "gitleaks/gitleaks config/gitleaks.toml (commit b58d3f102cf3, = v8.30.1)", "source note")
	flag.Parse()
	dir := *corpus
	if dir == "" {
		dir = os.Getenv("RUNAGAIN_CORPUS")
	}
	if dir == "" {
		dir = "../../shared/corpus"
	}
	src := filepath.Join(dir, "secrets", "gitleaks", "config", "gitleaks.toml")
	var cfg inConfig
	if _, err := toml.DecodeFile(src, &cfg); err != nil {
		log.Fatalf("%s: %v", src, err)
	}
	skipped := map[string]bool{}
	for _, s := range strings.Split(*skip, ",") {
		if s != "" {
			skipped[s] = true
		}
	}
	o := Out{Source: *source, Licence: "MIT, Copyright (c) 2019 Zachary Rice; see GITLEAKS_LICENSE"}
	o.Global = convAllow(cfg.Allowlist)
	for _, r := range cfg.Rules {
		if r.ID == "generic-api-key" {
			for _, a := range r.Allowlists {
				if len(a.Regexes) > 0 && len(a.Paths) == 0 {
					o.GenericAllow = append(o.GenericAllow, convAllow(OutAllowRegexesOnly(a)))
				}
			}
		}
		if skipped[r.ID] {
			o.Skipped = append(o.Skipped, r.ID+" (implemented by runagain)")
			continue
		}
		if r.Regex == "" {
			o.Skipped = append(o.Skipped, r.ID+" (path-only rule)")
			continue
		}
		if _, err := regexp.Compile(r.Regex); err != nil {
			log.Fatalf("%s: rule %s: regex: %v", src, r.ID, err)
		}
		if len(r.Keywords) == 0 {
			log.Fatalf("%s: rule %s: no keywords (runagain runs rules only near a keyword)", src, r.ID)
		}
		or := OutRule{ID: r.ID, Regex: r.Regex, SecretGroup: r.SecretGroup, Entropy: r.Entropy, Path: r.Path != ""}
		for _, k := range r.Keywords {
			or.Keywords = append(or.Keywords, strings.ToLower(k))
		}
		for _, a := range r.Allowlists {
			if len(a.Regexes) == 0 && len(a.Stopwords) == 0 {
				continue // path or commit allowlist: payloads have neither
			}
			if strings.EqualFold(a.Condition, "AND") && (len(a.Paths) > 0 || len(a.Commits) > 0) {
				continue // needs a path or commit as well: never applies to payloads
			}
			or.Allow = append(or.Allow, convAllow(a))
		}
		o.Rules = append(o.Rules, or)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(o); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	l, err := os.ReadFile(filepath.Join(dir, "secrets", "gitleaks", "LICENSE"))
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*lic, l, 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d rules written to %s (%d skipped)\n", len(o.Rules), *out, len(o.Skipped))
}

func convAllow(a allowlist) OutAllow {
	for _, re := range a.Regexes {
		if _, err := regexp.Compile(re); err != nil {
			log.Fatalf("allowlist regex %q: %v", re, err)
		}
	}
	t := a.RegexTarget
	if t == "secret" {
		t = ""
	}
	sw := make([]string, len(a.Stopwords))
	for i, s := range a.Stopwords {
		sw[i] = strings.ToLower(s)
	}
	return OutAllow{Target: t, And: strings.EqualFold(a.Condition, "AND"), Regexes: a.Regexes, Stopwords: sw}
}

// OutAllowRegexesOnly drops the stopwords of an allowlist: generic-api-key's 1,500 stopwords
// ("admin", "client", ...) would let human-chosen passwords through.
func OutAllowRegexesOnly(a allowlist) allowlist {
	a.Stopwords = nil
	return a
}
