// SPDX-License-Identifier: Apache-2.0

// Command secrets-score scores the redact secret detectors on examples written elsewhere: the
// true- and false-positive examples of every gitleaks rule (module
// github.com/zricethezav/gitleaks/v8@v8.30.1), the detector tests of OSV-SCALIBR's Veles (module
// github.com/google/osv-scalibr@v0.5.3, the second rule source; both read from the Go module
// cache, fetched with `go mod download` when missing), the labelled detect-secrets test files of
// the corpus (secrets/detect-secrets/test_data) and, as negatives, the corpus agent recordings.
//
// It prints, per source: recall per family and false positives on the negatives; the share of
// negatives left unchanged, with every rule and without the rules issue 33 added (measured in
// the same run); and the leave-one-family-out recall: each family's positives scored with the
// rules that find that family turned off, so that only the context rules and the generic
// detector remain (how a family nobody wrote a rule for fares).
//
//	go run ./internal/redact/cmd/secrets-score [-corpus DIR] [-v] [-lofo=false]
//
// DIR defaults to $RUNAGAIN_CORPUS or ../shared/corpus. Exit status 1 when the recall on the
// families with a rule falls below 0.95 (gitleaks; Veles without its fake-looking values), the
// share of negatives left unchanged (detect-secrets, recordings) below 0.98, or the precision of
// gitleaks or detect-secrets below 0.95.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/runagain/runagain/internal/redact"
	"github.com/runagain/runagain/internal/redact/secretscore"
)

func main() {
	def := os.Getenv("RUNAGAIN_CORPUS")
	if def == "" {
		def = filepath.Join("..", "shared", "corpus")
	}
	dir := flag.String("corpus", def, "corpus directory (holds secrets/)")
	verbose := flag.Bool("v", false, "list misses and false positives")
	lofo := flag.Bool("lofo", true, "compute the leave-one-family-out recall")
	flag.Parse()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "secrets-score:", err)
		os.Exit(2)
	}
	mod, err := secretscore.ModuleDir()
	if err != nil {
		fail(err)
	}
	gl, st, err := secretscore.GitleaksExamples(mod)
	if err != nil {
		fail(err)
	}
	vmod, err := secretscore.VelesModuleDir()
	if err != nil {
		fail(err)
	}
	ve, err := secretscore.VelesExamples(vmod)
	if err != nil {
		fail(err)
	}
	ds, err := secretscore.DetectSecretsExamples(filepath.Join(*dir, "secrets", "detect-secrets", "test_data"))
	if err != nil {
		fail(err)
	}
	rec, err := secretscore.RecordingExamples(*dir)
	if err != nil {
		fail(err)
	}
	cfg := redact.Config{HashKey: []byte("secrets-score")}
	r, err := redact.New(cfg)
	if err != nil {
		fail(err)
	}
	before := cfg
	before.Disabled = redact.Issue33Rules()
	r0, err := redact.New(before)
	if err != nil {
		fail(err)
	}
	vp, vn := 0, 0
	for _, e := range ve {
		if e.Positive {
			vp++
		} else {
			vn++
		}
	}
	fmt.Printf("gitleaks %s: %d rule files, %d rules, %d positive and %d negative examples (%d expressions not evaluated)\n",
		secretscore.GitleaksModule, st.Files, st.Rules, st.Positives, st.Negatives, st.Skipped)
	fmt.Printf("veles %s: %d positive and %d negative examples from its detector tests\n", secretscore.VelesModule, vp, vn)
	fmt.Printf("detect-secrets: %d labelled examples from %s\n", len(ds), filepath.Join(*dir, "secrets", "detect-secrets"))
	fmt.Printf("recordings: %d corpus agent recordings as negatives\n", len(rec))
	all := append(append(append(append([]secretscore.Example(nil), gl...), ve...), ds...), rec...)
	fams := secretscore.Score(r, all)
	fams0 := secretscore.Score(r0, all)
	secretscore.Print(os.Stdout, fams, *verbose)
	code := 0

	fmt.Printf("\nnegatives left unchanged (no secret finding), every rule / without the issue 33 rules (same run)\n")
	for _, src := range secretscore.Sources {
		_, _, neg, fp := secretscore.Totals(fams, src)
		_, _, _, fp0 := secretscore.Totals(fams0, src)
		if neg == 0 {
			continue
		}
		u, u0 := 1-float64(fp)/float64(neg), 1-float64(fp0)/float64(neg)
		fmt.Printf("%-16s %6d negatives   %.3f / %.3f\n", src, neg, u, u0)
		if (src == "detect-secrets" || src == "recordings") && u < 0.98 {
			fmt.Fprintf(os.Stderr, "secrets-score: %s negatives unchanged %.3f, below 0.98\n", src, u)
			code = 1
		}
	}
	fmt.Println("(gitleaks' and Veles' negatives are near misses of one rule: many hold another rule's credential,\n a token with a wrong checksum or a key file missing a field)")

	var ls []secretscore.LOFO
	if *lofo {
		ls, err = secretscore.LeaveOneFamilyOut(cfg, r, all, "gitleaks", "veles")
		if err != nil {
			fail(err)
		}
		secretscore.PrintLOFO(os.Stdout, ls, *verbose)
	}
	withRule := map[string]bool{}
	for _, l := range ls {
		withRule[l.Source+"\x00"+l.Name] = true
	}
	fmt.Printf("\nrecall by kind of family\n")
	for _, src := range []string{"gitleaks", "veles"} {
		var pos, found, npos, nfound int
		for _, f := range fams {
			if f.Source != src {
				continue
			}
			if !*lofo || withRule[src+"\x00"+f.Name] {
				pos += f.Positives
				found += f.Found
			} else {
				npos += f.Positives
				nfound += f.Found
			}
		}
		rec := float64(found) / float64(max(pos, 1))
		fmt.Printf("%-10s with a rule %5d positives recall %.3f; with none %4d positives recall %.3f\n", src, pos, rec, npos, float64(nfound)/float64(max(npos, 1)))
		if src == "veles" {
			// handwritten fake-looking values (abcdefgh..., test123...) are kept by design
			var rp, rf, fakes int
			for _, e := range ve {
				if !e.Positive || (*lofo && !withRule["veles\x00"+e.Family]) {
					continue
				}
				if secretscore.FakeLooking(e.Secret) || (e.Secret == "" && secretscore.FakeLooking(e.Text)) {
					fakes++
					continue
				}
				rp++
				if o := secretscore.Judge(r, e); o.Hit {
					rf++
				} else if *verbose {
					fmt.Printf("    MISS %s %s: %q\n", e.Family, e.RuleID, e.Text[:min(len(e.Text), 200)])
				}
			}
			rec = float64(rf) / float64(max(rp, 1))
			fmt.Printf("%-10s with a rule, without %d fake-looking values: %d positives recall %.3f\n", src, fakes, rp, rec)
		}
		if rec < 0.95 {
			fmt.Fprintf(os.Stderr, "secrets-score: %s recall on families with a rule %.3f, below 0.95\n", src, rec)
			code = 1
		}
	}
	for _, src := range []string{"gitleaks", "detect-secrets"} {
		_, found, _, fp := secretscore.Totals(fams, src)
		if prec := secretscore.Precision(found, fp); prec < 0.95 {
			fmt.Fprintf(os.Stderr, "secrets-score: %s precision %.3f, below 0.95\n", src, prec)
			code = 1
		}
	}
	os.Exit(code)
}
