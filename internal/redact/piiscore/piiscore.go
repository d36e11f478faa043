// SPDX-License-Identifier: Apache-2.0

// Package piiscore scores the PII detectors of package redact on labelled records in the
// presidio format (a JSON array of {full_text, spans: [{entity_type, entity_value,
// start_position, end_position}]}, positions in Unicode code points).
//
// Matching: a detection counts for an entity type through the rule that maps to it (Entities).
// A detection and a labelled span of the same type match when their overlap covers at least half
// of each. Precision = matched detections / detections; recall = matched labels / labels.
package piiscore

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/runagain/runagain/internal/redact"
)

// Entities maps the presidio entity types the redactor claims to the rules that find them.
var Entities = map[string][]string{
	"EMAIL_ADDRESS": {redact.RuleEmail},
	"PHONE_NUMBER":  {redact.RulePhone},
	"CREDIT_CARD":   {redact.RuleCreditCard},
	"US_SSN":        {redact.RuleUSSSN},
	"IBAN_CODE":     {redact.RuleIBAN},
	"IP_ADDRESS":    {redact.RuleIPv4, redact.RuleIPv6},
}

// Record is one labelled text.
type Record struct {
	FullText string `json:"full_text"`
	Spans    []struct {
		EntityType  string `json:"entity_type"`
		EntityValue string `json:"entity_value"`
		Start       int    `json:"start_position"`
		End         int    `json:"end_position"`
	} `json:"spans"`
}

// Files are the presidio record files below the corpus folder pii/.
var Files = []string{
	"presidio-research/data/synth_dataset_v2.even.json",
	"presidio-research/tests/data/generated_small.json",
}

// Load reads the records of Files below piiDir (the corpus pii/ folder).
func Load(piiDir string) ([]Record, error) {
	var all []Record
	for _, f := range Files {
		b, err := os.ReadFile(filepath.Join(piiDir, f))
		if err != nil {
			return nil, err
		}
		var recs []Record
		if err := json.Unmarshal(b, &recs); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		all = append(all, recs...)
	}
	return all, nil
}

// Split divides records into a tuning half (even positions) and a held-out half (odd
// positions). Detectors are tuned by looking at the tuning half only; the held-out half measures
// how they do on records nobody looked at.
func Split(recs []Record) (tune, held []Record) {
	for i, r := range recs {
		if i%2 == 0 {
			tune = append(tune, r)
		} else {
			held = append(held, r)
		}
	}
	return tune, held
}

// Stats are the counts for one entity type.
type Stats struct {
	Labels, Detections, MatchedLabels, MatchedDetections int
	Missed, Spurious                                     []string // values, for diagnosis of the corpus
}

// Precision is matched detections / detections (1 when nothing was detected).
func (s Stats) Precision() float64 {
	if s.Detections == 0 {
		return 1
	}
	return float64(s.MatchedDetections) / float64(s.Detections)
}

// Recall is matched labels / labels (1 when there are no labels).
func (s Stats) Recall() float64 {
	if s.Labels == 0 {
		return 1
	}
	return float64(s.MatchedLabels) / float64(s.Labels)
}

type span struct{ a, b int }

func matches(x, y span) bool {
	ov := min(x.b, y.b) - max(x.a, y.a)
	return ov > 0 && 2*ov >= x.b-x.a && 2*ov >= y.b-y.a
}

// matchesAny reports whether x matches one of ys.
func matchesAny(x span, ys []span) bool {
	return slices.ContainsFunc(ys, func(y span) bool { return matches(x, y) })
}

// Score runs r.Find on every record and counts per entity type.
func Score(r *redact.Redactor, recs []Record) map[string]*Stats {
	ruleEntity := map[string]string{}
	out := map[string]*Stats{}
	for e, rules := range Entities {
		out[e] = &Stats{}
		for _, ru := range rules {
			ruleEntity[ru] = e
		}
	}
	for _, rec := range recs {
		// code point index -> byte offset
		cp := make([]int, 0, len(rec.FullText)+1)
		for i := range rec.FullText {
			cp = append(cp, i)
		}
		cp = append(cp, len(rec.FullText))
		gold := map[string][]span{}
		for _, s := range rec.Spans {
			if _, ok := out[s.EntityType]; !ok || s.Start < 0 || s.End >= len(cp) || s.Start >= s.End {
				continue
			}
			gold[s.EntityType] = append(gold[s.EntityType], span{cp[s.Start], cp[s.End]})
		}
		pred := map[string][]span{}
		for _, f := range r.Find(rec.FullText) {
			if e, ok := ruleEntity[f.Rule]; ok {
				pred[e] = append(pred[e], span{f.Start, f.End})
			}
		}
		for e, st := range out {
			st.Labels += len(gold[e])
			st.Detections += len(pred[e])
			for _, g := range gold[e] {
				if matchesAny(g, pred[e]) {
					st.MatchedLabels++
				} else {
					st.Missed = append(st.Missed, rec.FullText[g.a:g.b])
				}
			}
			for _, p := range pred[e] {
				if matchesAny(p, gold[e]) {
					st.MatchedDetections++
				} else {
					st.Spurious = append(st.Spurious, rec.FullText[p.a:p.b])
				}
			}
		}
	}
	return out
}

// Print writes a table of precision and recall per entity type, and with verbose the missed
// labels and spurious detections.
func Print(w io.Writer, stats map[string]*Stats, verbose bool) {
	names := make([]string, 0, len(stats))
	for n := range stats {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(w, "%-14s %7s %10s %9s %7s\n", "entity", "labels", "detections", "precision", "recall")
	for _, n := range names {
		s := stats[n]
		fmt.Fprintf(w, "%-14s %7d %10d %9.3f %7.3f\n", n, s.Labels, s.Detections, s.Precision(), s.Recall())
	}
	if !verbose {
		return
	}
	for _, n := range names {
		s := stats[n]
		for _, m := range s.Missed {
			fmt.Fprintf(w, "missed   %-14s %q\n", n, m)
		}
		for _, m := range s.Spurious {
			fmt.Fprintf(w, "spurious %-14s %q\n", n, m)
		}
	}
}
