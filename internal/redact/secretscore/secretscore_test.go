// SPDX-License-Identifier: Apache-2.0

package secretscore

import (
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/redact"
)

func TestGenerateMatchesPattern(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range []string{`glpat-[0-9a-zA-Z_\-]{20}`, `AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}`, `(?:sk|rk)_live_[a-z0-9]{24,99}`, `[a-f0-9]{8}-[a-f0-9]{4}`} {
		s, err := generate(p, rng)
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^(?:` + p + `)$`).MatchString(s) {
			t.Errorf("generate(%q) = %q does not match", p, s)
		}
	}
}

func TestJudge(t *testing.T) {
	r, err := redact.New(redact.Config{HashKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	key := "ghp_" + "R2d7Kq9mVx4LpT8sZb3NwY6cHf1JgE5aUo0i"
	if !Judge(r, Example{Positive: true, Text: "token: " + key, Secret: key}).Hit {
		t.Error("a GitHub token was not found")
	}
	if Judge(r, Example{Text: "the weather is fine"}).Hit {
		t.Error("plain text taken for a secret")
	}
	if Judge(r, Example{Text: "user = 'Hippo'", Secret: "Hippo"}).Hit {
		t.Error("kept value taken")
	}
}

// TestScoreFloors runs the whole score, as make secrets-score does (the gitleaks and Veles
// modules, fetched with go mod download when missing; the corpus detect-secrets files and
// recordings; leave-one-family-out), and fails when a figure falls below its floor (Floors, the
// README's figures). It is the CI gate of the secret detectors: make test runs it, in about
// fifteen seconds.
func TestScoreFloors(t *testing.T) {
	if testing.Short() {
		t.Skip("reads two Go modules and the corpus")
	}
	dir := corpus.Dir(t)
	rep, err := Run(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Gitleaks.Files < 80 || rep.Gitleaks.Positives < 400 || rep.VelesPos < 400 || rep.DetectSecrets < 30 || rep.Records < 1000 {
		t.Fatalf("read too few examples: gitleaks %+v, veles %d, detect-secrets %d, recordings %d",
			rep.Gitleaks, rep.VelesPos, rep.DetectSecrets, rep.Records)
	}
	for _, f := range rep.Failures() {
		t.Error(f)
	}
}

// TestFailuresNameFloors: a report below a floor names the figure and the floor.
func TestFailuresNameFloors(t *testing.T) {
	rep := &Report{WithRule: map[string]int{"gitleaks": 10}, WithRuleFound: map[string]int{"gitleaks": 9}, VelesReal: 1, VelesRealFound: 1}
	fails := rep.Failures()
	if len(fails) != 1 || fails[0] != "gitleaks recall on families with a rule 0.900, below 0.95" {
		t.Errorf("failures %q", fails)
	}
}
