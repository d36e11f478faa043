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

// TestFailuresLOFORatchet: leave-one-family-out figures above the 0.8 but below the
// ratchets fail, naming the ratchet; the honest denominator, not the values that do not look
// fake, is what the Veles figure is judged on.
func TestFailuresLOFORatchet(t *testing.T) {
	rep := &Report{LOFO: []LOFO{
		{Source: "gitleaks", Positives: 100, Found: 90},
		{Source: "veles", Positives: 100, Found: 60, Real: 50, RealFound: 50, Honest: 80, HonestFound: 68},
	}, WithRule: map[string]int{"veles": 10}, WithRuleFound: map[string]int{"veles": 10}}
	got := rep.Failures()
	want := []string{"gitleaks leave-one-family-out recall, ratchet 0.900, below 0.92",
		"veles leave-one-family-out recall (honest denominator), ratchet 0.850, below 0.87"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("failures %q, want %q", got, want)
	}
}

// TestHonestDenominator: a fake-looking value counts when it sits in an explicit credential
// context and is not a placeholder the issue names; a bare one and a filler do not.
func TestHonestDenominator(t *testing.T) {
	for _, c := range []struct {
		text, secret string
		want         bool
	}{
		{"ZORP_KEY=zk-test1234567890abcdef", "zk-test1234567890abcdef", true},
		{`{"zorp_secret": "zk-test1234567890abcdef"}`, "zk-test1234567890abcdef", true},
		{`cfg: "{"zorp_token": "zk-test1234567890abcdef"}"`, "zk-test1234567890abcdef", true},
		{"zk-test1234567890abcdef", "zk-test1234567890abcdef", false},
		{"ZORP_KEY=zk_aaaaaaaaaaaaaaaaaaaa", "zk_aaaaaaaaaaaaaaaaaaaa", false},
		{"ZORP_KEY=zk_XXXXXXXXXXXXXX", "zk_XXXXXXXXXXXXXX", false},
		{"ZORP_KEY=Rk7vQ2mW9xK4pL8vN3bT", "Rk7vQ2mW9xK4pL8vN3bT", true}, // does not look fake
	} {
		e := Example{Positive: true, Text: c.text, Secret: c.secret}
		if got := Honest(e); got != c.want {
			t.Errorf("Honest(%q) = %v, want %v", c.text, got, c.want)
		}
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

// TestKeptInLOFO: the standard-format rules (JWT, PEM private keys) stay on when another
// family is left out and go off for the family named after the format.
func TestKeptInLOFO(t *testing.T) {
	for _, c := range []struct {
		rule, family string
		want         bool
	}{
		{redact.RulePEMPrivateKey, "salesforceoauth2jwt", true},
		{redact.RulePEMBase64, "gcpsak", true},
		{redact.RulePEMPrivateKey, "privatekey", false},
		{redact.RuleJWT, "supabase", true},
		{redact.RuleJWT, "jwt", false},
		{redact.RuleNamedValue, "recaptchakey", true},
		{redact.RuleGoogleOAuthClient, "gcpoauth2client", false},
	} {
		if got := keptInLOFO(c.rule, c.family); got != c.want {
			t.Errorf("keptInLOFO(%s, %s) = %v, want %v", c.rule, c.family, got, c.want)
		}
	}
}

// TestIdentifierField: the halves of a Veles secret that name or pair the credential are not
// what the score asks to be removed; the credential halves are.
func TestIdentifierField(t *testing.T) {
	for name, want := range map[string]bool{"ClientID": true, "AccessID": true, "RoleID": true, "PublicB64": true, "Username": true,
		"RepoURL": true, "ClientSecret": false, "Secret": false, "SecretID": false, "PrivateB64": false, "Token": false, "FullURL": false, "Key": false} {
		if got := identifierField(name); got != want {
			t.Errorf("identifierField(%s) = %v, want %v", name, got, want)
		}
	}
}

// TestFailuresNoRuleRatchet: the recall on the Veles families with no rule in either set below
// its ratchet fails, naming it.
func TestFailuresNoRuleRatchet(t *testing.T) {
	rep := &Report{LOFO: []LOFO{
		{Source: "gitleaks", Positives: 100, Found: 100},
		{Source: "veles", Positives: 100, Found: 100, Honest: 100, HonestFound: 100},
	}, WithRule: map[string]int{"veles": 10}, WithRuleFound: map[string]int{"veles": 10},
		NoRule: map[string]int{"veles": 60}, NoRuleFound: map[string]int{"veles": 47}}
	got := rep.Failures()
	want := "veles recall on families with no rule, ratchet 0.783, below 0.80"
	if len(got) != 1 || got[0] != want {
		t.Errorf("failures %q, want %q", got, want)
	}
}

// TestNotScored: a URL whose password is empty and a text holding only the identifier of a
// secret are not scored; a password, even one byte, is.
func TestNotScored(t *testing.T) {
	for v, want := range map[string]bool{"http://user:@example.com": true, "http://user%40name:@example.com": true,
		"http://user:p@example.com": false, "http://:password@example.com": false, "http://example.com/a:@b": false, "user:@": false} {
		if got := emptyPassword(v); got != want {
			t.Errorf("emptyPassword(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestLabelledHalves: the score follows the labels a text gives the halves of a key pair: a
// secret half the text names public, beside an identifier half it names private, swaps.
func TestLabelledHalves(t *testing.T) {
	text := "VAPIDPublicKey:  \"rrvz\",\nVAPIDPrivateKey: \"BFKS\","
	if !labelledBefore(text, "rrvz", "public") || labelledBefore(text, "rrvz", "private") || !labelledBefore(text, "BFKS", "private") {
		t.Errorf("labels of %q misread", text)
	}
	if labelledBefore("public\nrrvz", "rrvz", "public") {
		t.Error("a label on the line before counted")
	}
}

// TestVelesExamplesFixture reads a Veles-style test of an invented family
// (testdata/velesmod): cases with want or expected, a case holding only an identifier and one
// with an empty password (not scored), labels swapped between a pair's halves (the half the text
// names private is the secret), and a test of known misses (not negatives).
func TestVelesExamplesFixture(t *testing.T) {
	exs, err := VelesExamples("testdata/velesmod")
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		pos               bool
		secret, notScored string
	}
	by := map[string]got{}
	for _, e := range exs {
		by[e.Text] = got{e.Positive, e.Secret, e.NotScored}
	}
	want := map[string]got{
		"ZORP_TOKEN=zorp_Wq7Rk2Lp9Xz4Mn6Bv1Tc8Hy3": {true, "zorp_Wq7Rk2Lp9Xz4Mn6Bv1Tc8Hy3", ""},
		"no token here": {false, "", ""},
		"zorp_id: 87654321-4321-4321-4321-210987654321":                                     {true, "87654321-4321-4321-4321-210987654321", NotScoredIdentifier},
		"http://zorp:@zorp.test":                                                            {true, "http://zorp:@zorp.test", NotScoredEmpty},
		"ZorpPublicKey: \"Kq9mVx4LpT8sZb3N\"\nZorpPrivateKey: \"R2d7wY6cHf1JgE5aUo0iBfPq\"": {true, "R2d7wY6cHf1JgE5aUo0iBfPq", ""},
		"zorp.Wq7Rk2Lp9Xz4Mn6Bv1Tc8Hy3":                                                     {true, "zorp.Wq7Rk2Lp9Xz4Mn6Bv1Tc8Hy3", ""},
		"zorp.short":                                                                        {false, "", ""},
		"ZXhhbXBsZQ==":                                                                      {false, "", NotScoredKnownMiss},
	}
	if len(by) != len(want) {
		t.Errorf("read %d examples, want %d: %+v", len(by), len(want), by)
	}
	for text, w := range want {
		if g, ok := by[text]; !ok || g != w {
			t.Errorf("%q: %+v (read %v), want %+v", text, g, ok, w)
		}
	}
}
