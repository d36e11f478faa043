// SPDX-License-Identifier: Apache-2.0

package secretscore

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/runagain/runagain/internal/redact"
)

//go:embed detect_secrets_labels.json
var labelsJSON []byte

type fileLabel struct {
	Secrets  []string `json:"secrets"`
	Keep     []string `json:"keep"`
	Negative bool     `json:"negative"`
}

// DetectSecretsExamples reads the labelled detect-secrets test files below dir (the corpus
// folder secrets/detect-secrets/test_data). Each labelled secret is one positive example (the
// whole file is its text, Secret the value); each kept value and each negative file is one
// negative example.
func DetectSecretsExamples(dir string) ([]Example, error) {
	var l struct {
		Files map[string]fileLabel `json:"files"`
	}
	if err := json.Unmarshal(labelsJSON, &l); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(l.Files))
	for n := range l.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Example
	for _, n := range names {
		fl := l.Files[n]
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		text := string(b)
		for _, s := range fl.Secrets {
			if !strings.Contains(text, s) {
				return nil, fmt.Errorf("%s: labelled secret %q not in the file", n, s)
			}
			out = append(out, Example{Source: "detect-secrets", Family: n, RuleID: "labelled", Text: text, Positive: true, Secret: s})
		}
		for _, s := range fl.Keep {
			if !strings.Contains(text, s) {
				return nil, fmt.Errorf("%s: labelled value %q not in the file", n, s)
			}
			out = append(out, Example{Source: "detect-secrets", Family: n, RuleID: "keep", Text: text, Secret: s})
		}
		if fl.Negative {
			out = append(out, Example{Source: "detect-secrets", Family: n, RuleID: "negative-file", Text: text})
		}
	}
	return out, nil
}

// Sources are the example sources in the order they are printed.
var Sources = []string{"gitleaks", "veles", "detect-secrets", "recordings"}

// RecordingExamples returns one negative example per agent recording of the corpus (the JSON
// and YAML files outside secrets/ and pii/: cassettes, traces, fixtures; code, prose, UUIDs,
// content hashes, base64 images, placeholdered keys and JWT-shaped fixtures, no credential). A
// recorded Cookie header is a credential, so cookie findings do not count against them.
func RecordingExamples(corpusDir string) ([]Example, error) {
	var out []Example
	err := filepath.WalkDir(corpusDir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(corpusDir, p)
		if d.IsDir() {
			if rel == "secrets" || rel == "pii" {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); ext != ".json" && ext != ".yaml" && ext != ".yml" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fam := strings.SplitN(rel, string(filepath.Separator), 2)[0]
		out = append(out, Example{Source: "recordings", Family: fam, RuleID: "recording", Text: string(b), IgnoreRule: redact.RuleCookie})
		return nil
	})
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("%s: no recordings", corpusDir)
	}
	return out, err
}

// Outcome is the judgement of one example.
type Outcome struct {
	Example
	Hit      bool     // positive: the secret was removed; negative: something was taken (a false positive)
	Rules    []string // rules of the secret findings
	Redacted string   // the redacted text (for listing misses)
}

// Judge redacts e.Text as text with r. A positive example is found when its secret (if known)
// no longer occurs in the output, or (secret unknown) when at least one secret finding was made.
// A negative example is a false positive when a finding takes its kept value (if given) or, for
// a whole negative text, when any secret finding is made.
func Judge(r *redact.Redactor, e Example) Outcome {
	out, fs := r.Redact(e.Text)
	o := Outcome{Example: e, Redacted: out}
	var secret []redact.Finding
	for _, f := range fs {
		if f.Category == redact.CategorySecret && f.Rule != e.IgnoreRule {
			secret = append(secret, f)
			o.Rules = append(o.Rules, f.Rule)
		}
	}
	switch {
	case e.Positive && e.Secret != "":
		o.Hit = !strings.Contains(out, e.Secret)
	case e.Positive:
		o.Hit = len(secret) > 0
	case e.Secret != "":
		// a kept value is taken when a finding overlaps any of its occurrences
		for i := 0; ; {
			j := strings.Index(e.Text[i:], e.Secret)
			if j < 0 {
				break
			}
			a, b := i+j, i+j+len(e.Secret)
			for _, f := range secret {
				if f.Start < b && f.End > a {
					o.Hit = true
				}
			}
			i = b
		}
	default:
		o.Hit = len(secret) > 0
	}
	return o
}

// Family is the score of one rule family.
type Family struct {
	Source, Name                 string
	Positives, Found             int
	Negatives, FalsePositives    int
	Missed, FalsePositiveSamples []Outcome
}

// Recall is found positives / positives (1 without positives).
func (f *Family) Recall() float64 {
	if f.Positives == 0 {
		return 1
	}
	return float64(f.Found) / float64(f.Positives)
}

// Score judges every example and groups the outcomes by source and family.
func Score(r *redact.Redactor, exs []Example) []*Family {
	by := map[string]*Family{}
	var order []string
	for _, e := range exs {
		k := e.Source + "\x00" + e.Family
		f := by[k]
		if f == nil {
			f = &Family{Source: e.Source, Name: e.Family}
			by[k] = f
			order = append(order, k)
		}
		o := Judge(r, e)
		if e.Positive {
			f.Positives++
			if o.Hit {
				f.Found++
			} else {
				f.Missed = append(f.Missed, o)
			}
		} else {
			f.Negatives++
			if o.Hit {
				f.FalsePositives++
				f.FalsePositiveSamples = append(f.FalsePositiveSamples, o)
			}
		}
	}
	out := make([]*Family, len(order))
	for i, k := range order {
		out[i] = by[k]
	}
	return out
}

// Totals sums families of one source: positives, found, negatives, false positives.
func Totals(fams []*Family, source string) (pos, found, neg, fp int) {
	for _, f := range fams {
		if f.Source == source {
			pos += f.Positives
			found += f.Found
			neg += f.Negatives
			fp += f.FalsePositives
		}
	}
	return
}

// Precision is found / (found + false positives): of everything taken in the examples, the share
// that was a secret.
func Precision(found, fp int) float64 {
	if found+fp == 0 {
		return 1
	}
	return float64(found) / float64(found+fp)
}

// Print writes one line per family (recall, false positives on its negatives) and the totals per
// source; verbose adds each miss and false positive.
func Print(w io.Writer, fams []*Family, verbose bool) {
	for _, src := range Sources {
		fmt.Fprintf(w, "\n%s\n%-34s %9s %7s %9s %6s\n", src, "family", "positives", "recall", "negatives", "FP")
		for _, f := range fams {
			if f.Source != src {
				continue
			}
			fmt.Fprintf(w, "%-34s %9d %7.3f %9d %6d\n", f.Name, f.Positives, f.Recall(), f.Negatives, f.FalsePositives)
			if verbose {
				for _, o := range f.Missed {
					fmt.Fprintf(w, "    MISS %s: %s\n", o.RuleID, clip(o.Text, o.Secret))
				}
				for _, o := range f.FalsePositiveSamples {
					fmt.Fprintf(w, "    FP   %s (%s): %s\n", o.RuleID, strings.Join(o.Rules, ","), clip(o.Text, o.Secret))
				}
			}
		}
		pos, found, neg, fp := Totals(fams, src)
		fmt.Fprintf(w, "%-34s %9d %7.3f %9d %6d   precision %.3f\n", "TOTAL "+src, pos, ratio(found, pos), neg, fp, Precision(found, fp))
	}
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

func clip(text, around string) string {
	if around != "" {
		if i := strings.Index(text, around); i >= 0 {
			text = text[max(0, i-60):min(len(text), i+len(around)+30)]
		}
	}
	if len(text) > 220 {
		text = text[:220] + "…"
	}
	return fmt.Sprintf("%q", text)
}
