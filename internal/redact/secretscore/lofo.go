// SPDX-License-Identifier: Apache-2.0

package secretscore

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/runagain/runagain/internal/redact"
)

// contextRules find a credential by its context (a key, a URL, a header) or by a shape common to
// many families (prefixed_token: a short prefix and a long random body; encoded_credential: a
// base64-encoded JSON document in which the rules that are on find a secret), not by one
// family's format: leaving a family out keeps them, as they are what finds a family nobody
// wrote a rule for (encoded_credential finds only what the other rules still on find, decoded).
var contextRules = map[string]bool{redact.RuleGenericCredential: true, redact.RulePasswordKey: true, redact.RuleURLCredentials: true, redact.RuleURLToken: true,
	redact.RuleAuthorization: true, redact.RuleCookie: true, redact.RulePrefixedToken: true, redact.RuleNamedValue: true,
	redact.RuleEncodedCredential: true, redact.RuleBlockValue: true, redact.RuleHighEntropyValue: true}

// formatRules find a credential by a standard format many issuers use (a JWT, RFC 7519; a PEM
// private key block, RFC 7468, also base64-encoded as in Kubernetes secrets), not by one
// family's: leaving a family out keeps them, except for the family named after the format
// itself (Veles' and gitleaks' jwt, gitleaks' privatekey), whose own rule they are.
var formatRules = map[string]string{redact.RuleJWT: "jwt", redact.RulePEMPrivateKey: "privatekey", redact.RulePEMBase64: "privatekey"}

// keptInLOFO reports whether rule stays on when family is left out.
func keptInLOFO(rule, family string) bool {
	if contextRules[rule] {
		return true
	}
	f, ok := formatRules[rule]
	return ok && family != f
}

// LOFO is the leave-one-family-out recall of one family: its positives scored by a redactor
// without any rule of the family (the rules that found its positives with every rule on, and
// those named after it), so that only the context rules, the format rules (formatRules) and the
// generic detectors can find them.
type LOFO struct {
	Source, Name        string
	Disabled            []string
	Positives, Found    int
	Worded, WordFound   int // positives whose text holds a credential word, and those found
	Real, RealFound     int // positives whose value does not look fake (FakeLooking), and those found
	Honest, HonestFound int // positives in the honest denominator (Honest), and those found
	Missed              []Outcome
}

// credentialWords are the words the generic detector looks for.
var credentialWords = []string{"key", "token", "secret", "password", "passwd", "pwd", "auth", "bearer", "credential"}

func hasCredentialWord(text string) bool {
	l := strings.ToLower(text)
	for _, w := range credentialWords {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// LeaveOneFamilyOut computes LOFO for every family of sources that has a rule (a rule found one
// of its positives with every rule on), with cfg as the base configuration.
func LeaveOneFamilyOut(cfg redact.Config, full *redact.Redactor, exs []Example, sources ...string) ([]LOFO, error) {
	want := map[string]bool{}
	for _, s := range sources {
		want[s] = true
	}
	type key struct{ src, fam string }
	byFam := map[key][]Example{}
	rules := map[key]map[string]bool{}
	var order []key
	for _, e := range exs {
		if !e.Positive || !want[e.Source] {
			continue
		}
		k := key{e.Source, e.Family}
		if byFam[k] == nil {
			order = append(order, k)
			rules[k] = map[string]bool{}
		}
		byFam[k] = append(byFam[k], e)
		for _, r := range Judge(full, e).Rules {
			if !keptInLOFO(r, e.Family) {
				rules[k][r] = true
			}
		}
		if e.Source == "gitleaks" && e.RuleID != "" {
			rules[k][e.RuleID] = true
		}
	}
	known := map[string]bool{}
	for _, n := range full.Rules() {
		known[n] = true
	}
	for _, n := range redact.Issue33Rules() {
		known[n] = true
	}
	var out []LOFO
	for _, k := range order {
		if k.src == "veles" {
			for _, n := range full.Rules() {
				if strings.HasPrefix(n, "veles."+k.fam+".") {
					rules[k][n] = true
				}
			}
		}
		var dis []string
		for n := range rules[k] {
			if known[n] {
				dis = append(dis, n)
			}
		}
		if len(dis) == 0 {
			continue // no rule finds this family: it is scored as it is
		}
		sort.Strings(dis)
		c := cfg
		c.Disabled = append(append([]string(nil), cfg.Disabled...), dis...)
		r, err := redact.New(c)
		if err != nil {
			return nil, fmt.Errorf("family %s: %w", k.fam, err)
		}
		l := LOFO{Source: k.src, Name: k.fam, Disabled: dis}
		for _, e := range byFam[k] {
			o := Judge(r, e)
			hit := o.Hit
			l.Positives++
			if hit {
				l.Found++
			} else {
				l.Missed = append(l.Missed, o)
			}
			if !ExampleFakeLooking(e) {
				l.Real++
				if hit {
					l.RealFound++
				}
			}
			if Honest(e) {
				l.Honest++
				if hit {
					l.HonestFound++
				}
			}
			if hasCredentialWord(e.Text) {
				l.Worded++
				if hit {
					l.WordFound++
				}
			}
		}
		out = append(out, l)
	}
	return out, nil
}

// ExampleFakeLooking: the example's secret (its text when the secret is not known) is written
// to look fake (FakeLooking).
func ExampleFakeLooking(e Example) bool {
	return FakeLooking(e.Secret) || (e.Secret == "" && FakeLooking(e.Text))
}

// LOFOTotals sums the LOFO figures of one source.
func LOFOTotals(ls []LOFO, source string) (pos, found, worded, wordFound int) {
	for _, l := range ls {
		if l.Source == source {
			pos += l.Positives
			found += l.Found
			worded += l.Worded
			wordFound += l.WordFound
		}
	}
	return
}

// LOFORealTotals sums the LOFO figures of one source over the positives that do not look fake.
func LOFORealTotals(ls []LOFO, source string) (real, found int) {
	for _, l := range ls {
		if l.Source == source {
			real += l.Real
			found += l.RealFound
		}
	}
	return
}

// LOFOHonestTotals sums the LOFO figures of one source over the honest denominator (Honest).
func LOFOHonestTotals(ls []LOFO, source string) (n, found int) {
	for _, l := range ls {
		if l.Source == source {
			n += l.Honest
			found += l.HonestFound
		}
	}
	return
}

// PrintLOFO writes one line per family and the totals per source; verbose adds each miss.
func PrintLOFO(w io.Writer, ls []LOFO, verbose bool) {
	for _, src := range Sources {
		n := 0
		for _, l := range ls {
			if l.Source == src {
				n++
			}
		}
		if n == 0 {
			continue
		}
		fmt.Fprintf(w, "\nleave-one-family-out, %s (its rules off: only context rules and the generic detectors)\n%-34s %9s %7s %12s %7s %10s %7s %8s %7s\n",
			src, "family", "positives", "recall", "with a word", "recall", "not fake", "recall", "honest", "recall")
		for _, l := range ls {
			if l.Source == src {
				fmt.Fprintf(w, "%-34s %9d %7.3f %12d %7.3f %10d %7.3f %8d %7.3f\n", l.Name, l.Positives, ratio(l.Found, l.Positives), l.Worded, ratio(l.WordFound, l.Worded),
					l.Real, ratio(l.RealFound, l.Real), l.Honest, ratio(l.HonestFound, l.Honest))
				if verbose {
					for _, o := range l.Missed {
						kind := "MISS"
						switch {
						case !ExampleFakeLooking(o.Example):
						case Honest(o.Example):
							kind = "MISS (fake-looking, explicit context)"
						default:
							kind = "miss (fake-looking)"
						}
						fmt.Fprintf(w, "    %s %s: %s\n", kind, o.RuleID, clip(o.Text, o.Secret))
					}
				}
			}
		}
		pos, found, worded, wf := LOFOTotals(ls, src)
		real, rf := LOFORealTotals(ls, src)
		hn, hf := LOFOHonestTotals(ls, src)
		fmt.Fprintf(w, "%-34s %9d %7.3f %12d %7.3f %10d %7.3f %8d %7.3f\n", "TOTAL "+src, pos, ratio(found, pos), worded, ratio(wf, worded), real, ratio(rf, real),
			hn, ratio(hf, hn))
	}
}
