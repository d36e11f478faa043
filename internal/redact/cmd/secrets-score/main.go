// Command secrets-score scores the redact secret detectors on examples written elsewhere: the
// true- and false-positive examples of every gitleaks rule (module
// github.com/zricethezav/gitleaks/v8@v8.30.1, read from the Go module cache, fetched with
// `go mod download` when missing) and the labelled detect-secrets test files of the corpus
// (secrets/detect-secrets/test_data). It prints recall per rule family and false positives on the
// negative examples, and the totals with precision.
//
//	go run ./internal/redact/cmd/secrets-score [-corpus DIR] [-v]
//
// DIR defaults to $RUNAGAIN_CORPUS or ../shared/corpus. Exit status 1 when the gitleaks recall
// falls below 0.95 or the precision of either source below 0.95.
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
	ds, err := secretscore.DetectSecretsExamples(filepath.Join(*dir, "secrets", "detect-secrets", "test_data"))
	if err != nil {
		fail(err)
	}
	r, err := redact.New(redact.Config{HashKey: []byte("secrets-score")})
	if err != nil {
		fail(err)
	}
	fmt.Printf("gitleaks %s: %d rule files, %d rules, %d positive and %d negative examples (%d expressions not evaluated)\n",
		secretscore.GitleaksModule, st.Files, st.Rules, st.Positives, st.Negatives, st.Skipped)
	fmt.Printf("detect-secrets: %d labelled examples from %s\n", len(ds), filepath.Join(*dir, "secrets", "detect-secrets"))
	fams := secretscore.Score(r, append(gl, ds...))
	secretscore.Print(os.Stdout, fams, *verbose)
	code := 0
	for _, src := range []string{"gitleaks", "detect-secrets"} {
		pos, found, _, fp := secretscore.Totals(fams, src)
		rec, prec := float64(found)/float64(max(pos, 1)), secretscore.Precision(found, fp)
		if (src == "gitleaks" && rec < 0.95) || prec < 0.95 {
			fmt.Fprintf(os.Stderr, "secrets-score: %s below target (recall %.3f, precision %.3f)\n", src, rec, prec)
			code = 1
		}
	}
	os.Exit(code)
}
