// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// escapedCases are tool results stored as JSON string literals (gen_ai.tool.call.result holds
// the JSON encoding of what the tool returned) whose planted value is written with JSON escapes
// that encoders emit: \u0040 for '@' and \u002e for '.' (escaping everything outside [A-Za-z0-9]),
// \/ for '/' (PHP, some Java encoders), \" around a quoted secret. plain is the decoded value
// that must not appear in the output, decoded or as written.
var escapedCases = []struct {
	name, body, rule, plain string
}{
	{"email with \\u0040", `write to jane\u0040x.com before friday`, RuleEmail, "jane@x.com"},
	{"email with \\u0040, long", cleanProse + `write to jane.doe\u0040example.com before friday`, RuleEmail, "jane.doe@example.com"},
	{"email with \\u002e", `write to jane.doe@example\u002ecom before friday`, RuleEmail, "jane.doe@example.com"},
	{"email, every byte escaped", `mail \u006a\u0061\u006e\u0065\u0040\u0078\u002e\u0063\u006f\u006d now`, RuleEmail, "jane@x.com"},
	{"slack webhook with \\/", `post to https:\/\/hooks.slack.com\/services\/T0A1B2C3D\/B0A1B2C3D\/` + rep("aB3dE5gH7jK9", 24) + ` now`, RuleSlackWebhook, "hooks.slack.com/services/"},
	{"secret in escaped quotes", `config: {\"aws_secret_access_key\": \"wJalrXUtnFEMI\/K7MDENG\/bPxRfiCYEXAMPLEKEY\"}`, RuleAWSSecretKey, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
	{"password in escaped quotes", `{\"user\": \"ana\", \"password\": \"Tr0ub4dor&3x-horse\"}`, RulePasswordKey, "Tr0ub4dor&3x-horse"},
	{"card with \\u0020", `card 4111\u00201111\u00201111\u00201111 ok`, RuleCreditCard, "4111 1111 1111 1111"},
}

// TestEscapedToolResultRedacted: a tool result stored as a JSON string literal is redacted on
// its decoded text, so that a value written with JSON escapes (jane\u0040x.com) is found as it
// is in the same text unescaped; the output stays a JSON string literal, the escapes outside the
// finding are kept byte for byte, and the same holds with the CleanCache and when the result
// comes back as a leaf of the next call's input messages.
func TestEscapedToolResultRedacted(t *testing.T) {
	uncached := newTest(t, Config{})
	for _, tc := range escapedCases {
		q := `"` + tc.body + `"`
		var dec string
		if err := json.Unmarshal([]byte(q), &dec); err != nil {
			t.Fatalf("%s: test value is not a JSON string: %v", tc.name, err)
		}
		if !strings.Contains(dec, tc.plain) {
			t.Fatalf("%s: decoded %q does not hold %q", tc.name, dec, tc.plain)
		}
		cache := NewCleanCache(1 << 20)
		cached := newTest(t, Config{CleanCache: cache})
		for _, r := range []*Redactor{uncached, cached} {
			for i := range 2 {
				out, fs, bad := r.RedactValue("gen_ai.tool.call.result", q)
				if bad {
					t.Errorf("%s: valid string literal reported malformed", tc.name)
				}
				var got string
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatalf("%s: output is not a JSON string literal: %v\n%s", tc.name, err, out)
				}
				if strings.Contains(got, tc.plain) {
					t.Errorf("%s (call %d, cache %v): %q not redacted: %s", tc.name, i, r.cache != nil, tc.plain, out)
				}
				if !hasRule(fs, tc.rule) {
					t.Errorf("%s (call %d, cache %v): findings %v, want one of %s", tc.name, i, r.cache != nil, fs, tc.rule)
				}
				for _, f := range fs {
					if f.Start < 1 || f.End > len(q)-1 || f.Start >= f.End {
						t.Errorf("%s: finding %+v outside the body of %q", tc.name, f, q)
					}
				}
			}
			// the next LLM call resends the result as a string leaf of its input messages
			out, fs, _ := r.RedactValue("gen_ai.input.messages", toolResponseJSON(q))
			if !hasRule(fs, tc.rule) || strings.Contains(out, tc.body) {
				t.Errorf("%s (cache %v): resent as a leaf: findings %v\n%s", tc.name, r.cache != nil, fs, out)
			}
		}
	}
}

// TestEscapedToolResultKeepsOtherBytes: only the finding's bytes change; escapes around it stay
// as written.
func TestEscapedToolResultKeepsOtherBytes(t *testing.T) {
	r := newTest(t, Config{})
	q := `"caf\u00e9 \"menu\"\n write to jane\u0040x.com\/today \ud83d\ude00"`
	out, fs, bad := r.RedactValue("gen_ai.tool.call.result", q)
	if bad || len(fs) != 1 || fs[0].Rule != RuleEmail {
		t.Fatalf("findings %v, malformed %v: %s", fs, bad, out)
	}
	f := fs[0]
	if q[f.Start:f.End] != `jane\u0040x.com` {
		t.Fatalf("finding spans %q, want the escaped e-mail", q[f.Start:f.End])
	}
	if out[:f.Start] != q[:f.Start] || !strings.HasSuffix(out, q[f.End:]) {
		t.Errorf("bytes outside the finding changed: %s", out)
	}
}

// TestMalformedStringLiteralPassesThrough: a value that is quoted and holds a backslash but is
// not a valid JSON string literal (a bad escape, a raw control byte, an unescaped quote inside)
// is redacted as text exactly as before (only plain-text findings, no decoding) and reported
// malformed every time.
func TestMalformedStringLiteralPassesThrough(t *testing.T) {
	for _, cache := range []*CleanCache{nil, NewCleanCache(1 << 20)} {
		r := newTest(t, Config{CleanCache: cache})
		for _, q := range []string{
			`"jane\u0040x.com and a bad escape \q"`,
			`"jane\u0040x.com and a bad \u00zz"`,
			"\"jane\\u0040x.com and a raw\ttab " + cleanProse + "\"",
			`"jane\u0040x.com said "hi" twice` + cleanProse + `"`,
		} {
			for i := range 2 {
				out, fs, bad := r.RedactValue("gen_ai.tool.call.result", q)
				if out != q || len(fs) != 0 {
					t.Errorf("malformed %q changed (call %d): %q %v", q, i, out, fs)
				}
				if !bad {
					t.Errorf("malformed %q not reported (call %d)", q, i)
				}
			}
		}
		// plain-text findings of a malformed literal are still redacted
		q := `"mail bob@example.com \q"`
		out, fs, bad := r.RedactValue("gen_ai.tool.call.result", q)
		if !bad || len(fs) != 1 || strings.Contains(out, "bob@example.com") {
			t.Errorf("malformed with a plain e-mail: %q %v %v", out, fs, bad)
		}
	}
}

func hasRule(fs []Finding, rule string) bool {
	for _, f := range fs {
		if f.Rule == rule {
			return true
		}
	}
	return false
}
