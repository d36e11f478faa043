// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"strings"
	"testing"
)

// The cases of issue 33's "What fails today", one each: an explicit credential context (a URL's
// userinfo, KEY=VALUE, a credential key in YAML or JSON) makes its value the secret whatever it
// looks like; password hashes are credentials; a token of a family no rule knows is found next
// to a credential word by the generic detector.
func TestIssue33SecretsFound(t *testing.T) {
	r := newTest(t, Config{})
	cases := []struct {
		name, in string
		gone     []string
		kept     []string
	}{
		{"connection string password that reads as a word", "postgresql://user:secret@localhost/db", []string{":secret@"}, []string{"postgresql://", "@localhost/db"}},
		{"ADO.NET Password=word", "Server=myServerAddress;Database=myDataBase;User Id=myUsername;Password=myPassword;", []string{"myPassword"}, []string{"User Id=myUsername;Password=", ";"}},
		{"env var with a plain word", "REACT_APP_AUTH_PASSWORD=whiteduke", []string{"whiteduke"}, []string{"REACT_APP_AUTH_PASSWORD="}},
		{"dotted token under a credential key", "apikey: hvs.CAESIJlU9kQ2bE8rT5wXnYp3mZa7", []string{"CAESIJlU9kQ2bE8rT5wXnYp3mZa7"}, []string{"apikey: "}},
		{"mapbox secret token", "MAPBOX_SECRET_TOKEN=sk.eyJ1IjoibWFwYm94dXNlciIsImEiOiJja2x0eXBlMnMwMGFlMnVwZnZ6dXZ4Y2dhIn0.Qm9vS2V5U2VjcmV0VmFsdWU", []string{"eyJ1IjoibWFwYm94dXNlciIsImEiOiJja2x0eXBlMnMwMGFlMnVwZnZ6dXZ4Y2dhIn0"}, []string{"MAPBOX_SECRET_TOKEN="}},
		{"JSON password that reads as a word", `{"user": "ann", "password": "sunshine"}`, []string{"sunshine"}, []string{`"password": "`}},
		{"bcrypt hash", "admin:$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW\n", []string{"R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW"}, []string{"admin:"}},
		{"argon2 hash", "hash = $argon2id$v=19$m=65536,t=3,p=4$c29tZXNhbHRzb21lc2FsdA$RdescudvJCsgt3ub+b+dWRWJTmaaJObG", []string{"RdescudvJCsgt3ub+b+dWRWJTmaaJObG"}, nil},
		{"sha512-crypt in shadow", "root:$6$saltsalt$qFmFH.bQmmtXzyBY0s9v7Oicd2z4XSIecDzlB5KiA2/jctKu9YterLp8wwnSq.qc.eoxqOmSuNp2xS0ktL3nh/:19000:0:99999:7:::", []string{"qFmFH.bQmmtXzyBY0s9v7Oicd2z4XSIecDzlB5KiA2"}, []string{"root:", ":19000:0:99999:7:::"}},
		{"md5-crypt", "user1:$1$28772684$iEwNOgGugqO9.bIz5sk8k/:18000", []string{"iEwNOgGugqO9.bIz5sk8k/"}, []string{"user1:"}},
		{"django pbkdf2", "pbkdf2_sha256$260000$Bq3gL0Ds2uYv$J6qWz1bqvWnB2yTf7lI8kP0oZ4nX9cR3sE5dA1mH6uQ=", []string{"J6qWz1bqvWnB2yTf7lI8kP0oZ4nX9cR3sE5dA1mH6uQ="}, nil},
		{"phpass", "wp_user pass $P$BdIpQmKq6sM8zX1vN2cR4tY7uW9oE0a. stored", []string{"BdIpQmKq6sM8zX1vN2cR4tY7uW9oE0a."}, []string{"wp_user pass ", " stored"}},
		{"unseen family after a credential word", "here is the zorp api key zk_8fK2pQ9xZr7LmN4vB6tY1wE3uD5s for staging", []string{"zk_8fK2pQ9xZr7LmN4vB6tY1wE3uD5s"}, []string{"here is the zorp api key ", " for staging"}},
		{"unseen family in a custom header", "X-Zorp-Auth: 7Gq2mW9xK4pL8vN3bT6yR1cZ5hJ0dF2s", []string{"7Gq2mW9xK4pL8vN3bT6yR1cZ5hJ0dF2s"}, []string{"X-Zorp-Auth: "}},
		{"SigV4 presigned URL", "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAZ5QW3HN7PL2RT2NQ%2F20251201%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20251201T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Security-Token=IQoJb3JpZ2luX2VjEJr9Qm7XkLp2Wn4Rt8Yz&X-Amz-Signature=5f2a9c0d3b7e1f4a6c8d0e2f4a6b8c0d2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b",
			[]string{"AKIAZ5QW3HN7PL2RT2NQ", "IQoJb3JpZ2luX2VjEJr9Qm7XkLp2Wn4Rt8Yz", "5f2a9c0d3b7e1f4a6c8d0e2f4a6b8c0d2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b"}, []string{"X-Amz-Date=20251201T000000Z&X-Amz-Expires=3600"}},
		{"unseen family as a CLI flag", "zorpctl login --token zk_8fK2pQ9xZr7LmN4vB6tY1wE3uD5s --region eu", []string{"zk_8fK2pQ9xZr7LmN4vB6tY1wE3uD5s"}, []string{"zorpctl login --token ", " --region eu"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkGoneKept(t, r, c.in, c.gone, c.kept) })
	}
}

// TestIssue33PlaceholdersKept: explicit contexts still pass placeholders and empty values, and
// the generic detector leaves words, ids and content hashes near credential words alone.
func TestIssue33PlaceholdersKept(t *testing.T) {
	r := newTest(t, Config{})
	for _, in := range []string{
		"postgresql://user:<password>@localhost/db",
		"postgresql://user:${DB_PASSWORD}@localhost/db",
		"REACT_APP_AUTH_PASSWORD=",
		"API_KEY=changeme",
		"API_KEY=xxxx",
		`{"password": ""}`,
		`{"api_key": "<your-key>"}`,
		"the token count was 1234 for this request",
		"set your api key in the settings page before you start",
		"auth failed for request 6f1c2b0e-8a3d-4e5f-9b7a-1c2d3e4f5a6b",
		"the secret sha256 is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"pass the --token flag to authenticate",
	} {
		if out, fs := r.Redact(in); out != in {
			t.Errorf("changed %q -> %q (%v)", in, out, fs)
		}
	}
}

// TestBuiltinKeywordsPrefilterRawJSON: no generated keyword (gitleaks, Veles) holds a byte that
// JSON escapes, so RedactJSON's prefilter may search raw JSON bytes (one such keyword would
// make every string leaf hot: every leaf scanned, the clean cache bypassed).
func TestBuiltinKeywordsPrefilterRawJSON(t *testing.T) {
	if !newTest(t, Config{}).prefilterOK {
		t.Fatal("a built-in keyword holds a quote, a backslash or a control byte")
	}
}

// TestFormatFillersFound: a match of an issuer's format (its literal prefix: sk_live_, SG.,
// packagist_ack_) is taken when its body is a filler, an example word or a counting run; only
// the placeholders issue 33 names pass (TestFormatPlaceholdersKept).
func TestFormatFillersFound(t *testing.T) {
	r := newTest(t, Config{})
	for _, c := range readCases(t, "format_found.txt") {
		if len(c) != 2 {
			t.Fatalf("case %q: want input and value", c)
		}
		if out, fs := r.Redact(c[0]); strings.Contains(out, c[1]) {
			t.Errorf("%q: %q kept (%v)", c[0], c[1], fs)
		}
	}
}

// TestFormatPlaceholdersKept: elisions, templates, marker words and words naming the
// credential pass in an issuer's format.
func TestFormatPlaceholdersKept(t *testing.T) {
	r := newTest(t, Config{})
	for _, c := range readCases(t, "format_kept.txt") {
		if out, fs := r.Redact(c[0]); out != c[0] {
			t.Errorf("changed %q -> %q (%v)", c[0], out, fs)
		}
	}
}

// TestIssue33PairsFound: a Google OAuth client id next to its client secret, a credential in
// the value attribute of a name/value pair, and a Veles format match holding the alphabet are
// taken; an id alone, other names, placeholders and anti-forgery tokens stay
// (TestIssue33PairsKept).
func TestIssue33PairsFound(t *testing.T) {
	r := newTest(t, Config{})
	for _, c := range readCases(t, "issue33_round2_found.txt") {
		if len(c) != 2 {
			t.Fatalf("case %q: want input and value", c)
		}
		if out, fs := r.Redact(c[0]); strings.Contains(out, c[1]) {
			t.Errorf("%q: %q kept (%v)", c[0], c[1], fs)
		}
	}
}

func TestIssue33PairsKept(t *testing.T) {
	r := newTest(t, Config{})
	for _, c := range readCases(t, "issue33_round2_kept.txt") {
		if out, fs := r.Redact(c[0]); out != c[0] {
			t.Errorf("changed %q -> %q (%v)", c[0], out, fs)
		}
	}
}
