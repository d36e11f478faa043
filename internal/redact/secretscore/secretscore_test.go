// SPDX-License-Identifier: Apache-2.0

package secretscore

import (
	"math/rand/v2"
	"path/filepath"
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

// TestScoresHoldTargets runs the whole score (as make secrets-score does): the gitleaks rule
// examples of the module (fetched with go mod download) and the corpus detect-secrets files.
func TestScoresHoldTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads the gitleaks module")
	}
	dir := corpus.Dir(t)
	mod, err := ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	gl, st, err := GitleaksExamples(mod)
	if err != nil {
		t.Fatal(err)
	}
	if st.Files < 80 || st.Positives < 400 || st.Negatives < 100 {
		t.Fatalf("read too few gitleaks examples: %+v", st)
	}
	ds, err := DetectSecretsExamples(filepath.Join(dir, "secrets", "detect-secrets", "test_data"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := redact.New(redact.Config{HashKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	fams := Score(r, append(gl, ds...))
	pos, found, _, fp := Totals(fams, "gitleaks")
	if rec := float64(found) / float64(pos); rec < 0.95 || Precision(found, fp) < 0.95 {
		t.Errorf("gitleaks: recall %.3f precision %.3f, want >= 0.95", rec, Precision(found, fp))
	}
	pos, found, _, fp = Totals(fams, "detect-secrets")
	if rec := float64(found) / float64(pos); rec < 0.55 || Precision(found, fp) < 0.95 {
		t.Errorf("detect-secrets: recall %.3f precision %.3f, want >= 0.55 and >= 0.95", rec, Precision(found, fp))
	}
}
