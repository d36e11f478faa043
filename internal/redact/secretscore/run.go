// SPDX-License-Identifier: Apache-2.0

package secretscore

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/runagain/runagain/internal/redact"
)

// Floors are the figures the score must hold (README, "Secret detection"): make secrets-score
// exits 1 and TestScoreFloors (run by make test) fails below any of them.
const (
	FloorRecallWithRule = 0.95 // gitleaks; Veles on values that do not look fake
	FloorLOFO           = 0.80 // leave-one-family-out (issue 33's goal): gitleaks; Veles on the honest denominator (Honest)
	FloorUnchanged      = 0.98 // negatives left unchanged: detect-secrets, corpus recordings
	FloorPrecision      = 0.95 // gitleaks, detect-secrets
	// FloorDetectSecrets is the recall on detect-secrets' 17 labelled secrets (issue 33's 0.95
	// on examples of a rule: its keyword and high-entropy plugins' cases, which block_value,
	// password_key and high_entropy_value cover): 1.000 since 2026-12-07, one miss is 0.941.
	FloorDetectSecrets = 0.95
)

// Ratchets hold the figures reached (2026-12-04: leave-one-family-out gitleaks 0.935 of 6,111,
// Veles 0.896 of its 346 honest positives; 2026-12-07, Veles pairs scored by their secret half:
// Veles 0.893 of 356 honest, Veles with a rule 0.960 of all 454, fake-looking values included)
// about two points below, so that a change that gives back what was gained fails the gate
// before the issue's goal is lost. The Veles families with no rule in either set reached issue
// 33's goal, 0.800 of 60 (2026-12-07, hashicorpvault's tables read, positives without a
// credential not scored, quotedPair): their ratchet is the goal itself.
const (
	RatchetLOFOGitleaks     = 0.92
	RatchetLOFOVelesHonest  = 0.87
	RatchetVelesWithRuleAll = 0.94
	RatchetVelesNoRule      = 0.80
)

// Report holds every figure of one run of the score.
type Report struct {
	Gitleaks               GitleaksStats
	VelesPos, VelesNeg     int
	VelesNotScored         map[string]int // positives left out, by reason (Example.NotScored)
	DetectSecrets, Records int
	Fams, FamsBefore       []*Family // every rule; without the issue 33 rules (same run)
	LOFO                   []LOFO    // nil without lofo
	// recall on the families with a rule (with lofo: those LOFO scored; else every family), and
	// on those with none
	WithRule, WithRuleFound, NoRule, NoRuleFound map[string]int
	// Veles with a rule on values that do not look fake (FakeLooking)
	VelesReal, VelesRealFound, VelesFakes int
	VelesRealMissed                       []Outcome
	// Veles families with no rule, on the honest denominator (Honest), as leave-one-family-out
	// reads it (with lofo only)
	NoRuleHonest, NoRuleHonestFound int
}

// Run scores the redact detectors: the gitleaks rule examples (module GitleaksModule) and Veles
// detector tests (VelesModule), both from the Go module cache (fetched with go mod download
// when missing), the labelled detect-secrets files and the agent recordings of corpusDir; lofo
// adds the leave-one-family-out figures (about ten seconds more).
func Run(corpusDir string, lofo bool) (*Report, error) {
	mod, err := ModuleDir()
	if err != nil {
		return nil, err
	}
	gl, st, err := GitleaksExamples(mod)
	if err != nil {
		return nil, err
	}
	vmod, err := VelesModuleDir()
	if err != nil {
		return nil, err
	}
	ve, err := VelesExamples(vmod)
	if err != nil {
		return nil, err
	}
	ds, err := DetectSecretsExamples(filepath.Join(corpusDir, "secrets", "detect-secrets", "test_data"))
	if err != nil {
		return nil, err
	}
	rec, err := RecordingExamples(corpusDir)
	if err != nil {
		return nil, err
	}
	cfg := redact.Config{HashKey: []byte("secrets-score")}
	r, err := redact.New(cfg)
	if err != nil {
		return nil, err
	}
	before := cfg
	before.Disabled = redact.Issue33Rules()
	r0, err := redact.New(before)
	if err != nil {
		return nil, err
	}
	rep := &Report{Gitleaks: st, DetectSecrets: len(ds), Records: len(rec),
		WithRule: map[string]int{}, WithRuleFound: map[string]int{}, NoRule: map[string]int{}, NoRuleFound: map[string]int{}}
	rep.VelesNotScored = map[string]int{}
	scored := ve[:0:0]
	for _, e := range ve {
		switch {
		case e.NotScored != "":
			rep.VelesNotScored[e.NotScored]++
			continue
		case e.Positive:
			rep.VelesPos++
		default:
			rep.VelesNeg++
		}
		scored = append(scored, e)
	}
	ve = scored
	all := append(append(append(append([]Example(nil), gl...), ve...), ds...), rec...)
	rep.Fams = Score(r, all)
	rep.FamsBefore = Score(r0, all)
	if lofo {
		if rep.LOFO, err = LeaveOneFamilyOut(cfg, r, all, "gitleaks", "veles"); err != nil {
			return nil, err
		}
	}
	withRule := map[string]bool{}
	for _, l := range rep.LOFO {
		withRule[l.Source+"\x00"+l.Name] = true
	}
	for _, f := range rep.Fams {
		if !lofo || withRule[f.Source+"\x00"+f.Name] {
			rep.WithRule[f.Source] += f.Positives
			rep.WithRuleFound[f.Source] += f.Found
		} else {
			rep.NoRule[f.Source] += f.Positives
			rep.NoRuleFound[f.Source] += f.Found
		}
	}
	for _, e := range ve {
		if lofo && e.Positive && !withRule["veles\x00"+e.Family] && Honest(e) {
			rep.NoRuleHonest++
			if Judge(r, e).Hit {
				rep.NoRuleHonestFound++
			}
		}
		if !e.Positive || (lofo && !withRule["veles\x00"+e.Family]) {
			continue
		}
		if ExampleFakeLooking(e) {
			rep.VelesFakes++
			continue
		}
		rep.VelesReal++
		if o := Judge(r, e); o.Hit {
			rep.VelesRealFound++
		} else {
			rep.VelesRealMissed = append(rep.VelesRealMissed, o)
		}
	}
	return rep, nil
}

// Unchanged is the share of the negatives of source left without a secret finding, with every
// rule and without the issue 33 rules; n is the number of negatives.
func (rep *Report) Unchanged(source string) (u, before float64, n int) {
	_, _, neg, fp := Totals(rep.Fams, source)
	_, _, _, fp0 := Totals(rep.FamsBefore, source)
	if neg == 0 {
		return 1, 1, 0
	}
	return 1 - float64(fp)/float64(neg), 1 - float64(fp0)/float64(neg), neg
}

// Failures lists the floors the report falls below (empty when it holds them all).
func (rep *Report) Failures() []string {
	var out []string
	below := func(what string, v, floor float64) {
		if v < floor {
			out = append(out, fmt.Sprintf("%s %.3f, below %.2f", what, v, floor))
		}
	}
	below("gitleaks recall on families with a rule", ratio(rep.WithRuleFound["gitleaks"], rep.WithRule["gitleaks"]), FloorRecallWithRule)
	below("veles recall on families with a rule (values that do not look fake)", ratio(rep.VelesRealFound, rep.VelesReal), FloorRecallWithRule)
	if rep.LOFO != nil { // WithRule holds the families LOFO scored only with lofo
		below("veles recall on families with a rule (every value), ratchet", ratio(rep.WithRuleFound["veles"], rep.WithRule["veles"]), RatchetVelesWithRuleAll)
		below("veles recall on families with no rule, ratchet", ratio(rep.NoRuleFound["veles"], rep.NoRule["veles"]), RatchetVelesNoRule)
	}
	dsPos, dsFound, _, _ := Totals(rep.Fams, "detect-secrets")
	below("detect-secrets recall", ratio(dsFound, dsPos), FloorDetectSecrets)
	for _, src := range []string{"detect-secrets", "recordings"} {
		u, _, _ := rep.Unchanged(src)
		below(src+" negatives unchanged", u, FloorUnchanged)
	}
	for _, src := range []string{"gitleaks", "detect-secrets"} {
		_, found, _, fp := Totals(rep.Fams, src)
		below(src+" precision", Precision(found, fp), FloorPrecision)
	}
	if rep.LOFO != nil {
		pos, found, _, _ := LOFOTotals(rep.LOFO, "gitleaks")
		below("gitleaks leave-one-family-out recall", ratio(found, pos), FloorLOFO)
		hn, hf := LOFOHonestTotals(rep.LOFO, "veles")
		below("veles leave-one-family-out recall (honest denominator)", ratio(hf, hn), FloorLOFO)
		below("gitleaks leave-one-family-out recall, ratchet", ratio(found, pos), RatchetLOFOGitleaks)
		below("veles leave-one-family-out recall (honest denominator), ratchet", ratio(hf, hn), RatchetLOFOVelesHonest)
	}
	return out
}

// Print writes the report: per family and source, negatives, leave-one-family-out and recall
// by kind of family; verbose lists each miss and false positive.
func (rep *Report) Print(w io.Writer, verbose bool) {
	st := rep.Gitleaks
	fmt.Fprintf(w, "gitleaks %s: %d rule files, %d rules, %d positive and %d negative examples (%d expressions not evaluated)\n",
		GitleaksModule, st.Files, st.Rules, st.Positives, st.Negatives, st.Skipped)
	fmt.Fprintf(w, "veles %s: %d positive and %d negative examples from its detector tests", VelesModule, rep.VelesPos, rep.VelesNeg)
	if n := rep.VelesNotScored[NotScoredIdentifier] + rep.VelesNotScored[NotScoredEmpty]; n > 0 {
		fmt.Fprintf(w, " (%d positives not scored: %d holding %s of the secret, %d %s, which issue 33 lets pass)",
			n, rep.VelesNotScored[NotScoredIdentifier], NotScoredIdentifier, rep.VelesNotScored[NotScoredEmpty], NotScoredEmpty)
	}
	if n := rep.VelesNotScored[NotScoredKnownMiss]; n > 0 {
		fmt.Fprintf(w, "; %d texts of Veles' tests of its own misses (a credential its detector does not find) not scored as negatives", n)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "detect-secrets: %d labelled examples\n", rep.DetectSecrets)
	fmt.Fprintf(w, "recordings: %d corpus agent recordings as negatives\n", rep.Records)
	Print(w, rep.Fams, verbose)
	fmt.Fprintf(w, "\nnegatives left unchanged (no secret finding), every rule / without the issue 33 rules (same run)\n")
	for _, src := range Sources {
		u, u0, n := rep.Unchanged(src)
		if n > 0 {
			fmt.Fprintf(w, "%-16s %6d negatives   %.3f / %.3f\n", src, n, u, u0)
		}
	}
	fmt.Fprintln(w, "(gitleaks' and Veles' negatives are near misses of one rule: many hold another rule's credential,\n a token with a wrong checksum or a key file missing a field)")
	if rep.LOFO != nil {
		PrintLOFO(w, rep.LOFO, verbose)
	}
	fmt.Fprintf(w, "\nrecall by kind of family\n")
	for _, src := range []string{"gitleaks", "veles"} {
		fmt.Fprintf(w, "%-10s with a rule %5d positives recall %.3f; with none %4d positives recall %.3f\n", src,
			rep.WithRule[src], ratio(rep.WithRuleFound[src], rep.WithRule[src]), rep.NoRule[src], ratio(rep.NoRuleFound[src], rep.NoRule[src]))
	}
	if rep.LOFO != nil {
		fmt.Fprintf(w, "%-10s with none, honest denominator (as leave-one-family-out): %d positives recall %.3f\n", "veles",
			rep.NoRuleHonest, ratio(rep.NoRuleHonestFound, rep.NoRuleHonest))
	}
	if verbose && rep.LOFO != nil {
		withRule := map[string]bool{}
		for _, l := range rep.LOFO {
			withRule[l.Source+"\x00"+l.Name] = true
		}
		for _, f := range rep.Fams {
			if f.Source != "veles" || f.Positives == 0 || withRule[f.Source+"\x00"+f.Name] {
				continue
			}
			fmt.Fprintf(w, "    no rule: %-26s %3d positives recall %.3f\n", f.Name, f.Positives, f.Recall())
			for _, o := range f.Missed {
				fmt.Fprintf(w, "        MISS %s: %s\n", o.RuleID, clip(o.Text, o.Secret))
			}
		}
	}
	if verbose {
		for _, o := range rep.VelesRealMissed {
			fmt.Fprintf(w, "    MISS %s %s: %q\n", o.Family, o.RuleID, o.Text[:min(len(o.Text), 200)])
		}
	}
	fmt.Fprintf(w, "%-10s with a rule, without %d fake-looking values: %d positives recall %.3f\n", "veles",
		rep.VelesFakes, rep.VelesReal, ratio(rep.VelesRealFound, rep.VelesReal))
	if rep.LOFO != nil {
		pos, found, _, _ := LOFOTotals(rep.LOFO, "gitleaks")
		vpos, vfound, _, _ := LOFOTotals(rep.LOFO, "veles")
		real, rf := LOFORealTotals(rep.LOFO, "veles")
		hn, hf := LOFOHonestTotals(rep.LOFO, "veles")
		fmt.Fprintf(w, "leave-one-family-out: gitleaks %.3f of %d; veles %.3f of %d, %.3f of the %d values that do not look fake,\n"+
			"  %.3f of the %d of the honest denominator (values that do not look fake, and fake-looking ones in an explicit context)\n",
			ratio(found, pos), pos, ratio(vfound, vpos), vpos, ratio(rf, real), real, ratio(hf, hn), hn)
	}
}
