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
// DIR defaults to $RUNAGAIN_CORPUS or ../shared/corpus. Exit status 1 when a figure falls below
// its floor (secretscore.Floors: recall on the families with a rule 0.95, gitleaks and Veles
// without its fake-looking values; leave-one-family-out recall 0.8, gitleaks on every positive and
// Veles on the honest denominator (secretscore.Honest), with ratchets at 0.92 and 0.87, Veles with a
// rule on every value at 0.94 and the Veles families with no rule in either set at 0.80; negatives of
// detect-secrets and the recordings left unchanged 0.98; precision of gitleaks and
// detect-secrets 0.95); secretscore's TestScoreFloors, run by make test, holds the same floors.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

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
	rep, err := secretscore.Run(*dir, *lofo)
	if err != nil {
		fmt.Fprintln(os.Stderr, "secrets-score:", err)
		os.Exit(2)
	}
	rep.Print(os.Stdout, *verbose)
	fails := rep.Failures()
	for _, f := range fails {
		fmt.Fprintln(os.Stderr, "secrets-score:", f)
	}
	if len(fails) > 0 {
		os.Exit(1)
	}
}
