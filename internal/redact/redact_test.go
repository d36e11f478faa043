// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

func newTest(t testing.TB, cfg Config) *Redactor {
	t.Helper()
	if cfg.HashKey == nil {
		cfg.HashKey = []byte("test-key")
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// rep repeats a pattern up to n bytes, to build key-shaped values in tests.
func rep(p string, n int) string { return strings.Repeat(p, n/len(p)+1)[:n] }

func TestRulesFindAndSkip(t *testing.T) {
	r := newTest(t, Config{})
	cases := []struct {
		name, text, rule, value string // value "" = nothing must be found
	}{
		{"email", "write to ana.maria+x@mail.example.co.uk please", RuleEmail, "ana.maria+x@mail.example.co.uk"},
		{"phone intl", "call +44 20 7946 0958 now", RulePhone, "+44 20 7946 0958"},
		{"phone us", "call (415) 555-2671 now", RulePhone, "(415) 555-2671"},
		{"phone not a date", "on 2024-05-12 we met", "", ""},
		{"phone before a name", "call 415 555 2671 Monday please", RulePhone, "415 555 2671"},
		{"street number", "ship to 3747 3911 Fourth Avenue", "", ""},
		{"card", "card 4111 1111 1111 1111 ok", RuleCreditCard, "4111 1111 1111 1111"},
		{"card bad luhn", "id 4111111111111112 ok", "", ""},
		{"ssn", "ssn 123-45-6789.", RuleUSSSN, "123-45-6789"},
		{"ssn invalid area", "ref 666-45-6789.", "", ""},
		{"iban", "to DE89 3704 0044 0532 0130 00 today", RuleIBAN, "DE89 3704 0044 0532 0130 00"},
		{"iban bad check", "to DE89 3704 0044 0532 0130 01 today", "", ""},
		{"ipv4", "from 203.0.113.7:443", RuleIPv4, "203.0.113.7"},
		{"version not ip", "version 1.2.3.4.5", "", ""},
		{"ipv6", "peer 2001:db8:85a3::8a2e:370:7334 up", RuleIPv6, "2001:db8:85a3::8a2e:370:7334"},
		{"time not ipv6", "at 12:30:45 ok", "", ""},
		{"openai", "key sk-proj-" + rep("Ab3dE5gH7jK9", 48) + " end", RuleOpenAI, "sk-proj-" + rep("Ab3dE5gH7jK9", 48)},
		{"anthropic", "sk-ant-api03-" + rep("xY7_kL2m-Qp9", 93) + "AA", RuleAnthropic, "sk-ant-api03-" + rep("xY7_kL2m-Qp9", 93) + "AA"},
		{"aws id", `"AKIAIOSFODNN7EXAMPLE"`, RuleAWSAccessKeyID, "AKIAIOSFODNN7EXAMPLE"},
		{"aws placeholder", "AKIATEST1234567890AB", "", ""},
		{"aws secret", "aws_secret_access_key = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'", RuleAWSSecretKey, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
		{"sigv4", "Authorization: AWS4-HMAC-SHA256 Credential=ASIAXYZ1234567890ABC/20240101/us-east-1/s3/aws4_request, SignedHeaders=host", RuleAWSSigV4, "ASIAXYZ1234567890ABC"},
		{"google", "AIza" + rep("SyD3x_9-Kq", 35), RuleGoogleAPIKey, "AIza" + rep("SyD3x_9-Kq", 35)},
		{"github", "ghp_" + rep("a1B2c3D4e5", 36), RuleGitHub, "ghp_" + rep("a1B2c3D4e5", 36)},
		{"gitlab", "glpat-" + rep("Zx9_Yw8-Vu7", 20), RuleGitLab, "glpat-" + rep("Zx9_Yw8-Vu7", 20)},
		{"slack", "xoxb-123456789012-1234567890123-" + rep("AbCdEf123", 24), RuleSlackToken, "xoxb-123456789012-1234567890123-" + rep("AbCdEf123", 24)},
		{"stripe", "sk_live_" + rep("4eC39HqLyjWDarjtT1zdp7dc", 24), RuleStripe, "sk_live_" + rep("4eC39HqLyjWDarjtT1zdp7dc", 24)},
		{"huggingface", "hf_" + rep("aBcDeFgHiJkLmNoPqRsTuVwXyZ12", 34), RuleHuggingFace, "hf_" + rep("aBcDeFgHiJkLmNoPqRsTuVwXyZ12", 34)},
		{"perplexity", "key pplx-" + rep("a1B2c3D4e5F6", 48) + " ok", RulePerplexity, "pplx-" + rep("a1B2c3D4e5F6", 48)},
		{"tavily", "tvly-dev-" + rep("Zx9Yw8Vu7", 32), RuleTavily, "tvly-dev-" + rep("Zx9Yw8Vu7", 32)},
		{"langsmith", "lsv2_pt_" + rep("0a1b2c3d4e5f6789", 32) + "_" + rep("9f8e7d", 10), RuleLangSmith, "lsv2_pt_" + rep("0a1b2c3d4e5f6789", 32) + "_" + rep("9f8e7d", 10)},
		{"pinecone", "pcsk_" + rep("3xYz_Q9wE8rT7", 60), RulePinecone, "pcsk_" + rep("3xYz_Q9wE8rT7", 60)},
		{"notion", "ntn_" + rep("a1B2c3D4e5F6g7", 46), RuleNotion, "ntn_" + rep("a1B2c3D4e5F6g7", 46)},
		{"linear", "lin_api_" + rep("Qw3Er5Ty7Ui9", 40), RuleLinear, "lin_api_" + rep("Qw3Er5Ty7Ui9", 40)},
		{"shopify", "shpat_" + rep("0a1b2c3d4e5f6789", 32), RuleShopify, "shpat_" + rep("0a1b2c3d4e5f6789", 32)},
		{"digitalocean", "dop_v1_" + rep("0a1b2c3d4e5f6789", 64), RuleDigitalOcean, "dop_v1_" + rep("0a1b2c3d4e5f6789", 64)},
		{"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", RuleJWT, "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"},
		{"pem", "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY-----\ny", RulePEMPrivateKey, "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY-----"},
		{"url creds", "postgres://admin:s3cr3tPass@db.local:5432/app", RuleURLCredentials, "admin:s3cr3tPass"},
		{"url placeholder", "postgres://user:${DB_PASSWORD}@db/app", "", ""},
		{"bearer", "Authorization: Bearer abc123XYZ789def456", RuleAuthorization, "abc123XYZ789def456"},
		{"bearer placeholder", "Authorization: Bearer test_openai_api_key", "", ""},
		{"bearer env name", "Authorization: Bearer OPENAI_API_KEY", "", ""},
		{"basic", "Authorization: Basic dXNlcjpodW50ZXIy", RuleAuthorization, "dXNlcjpodW50ZXIy"},
		{"basic prose", "Basic information about the plan", "", ""},
		{"cookie", "Cookie: session=8f14e45fceea167a; theme=dark", RuleCookie, "session=8f14e45fceea167a; theme=dark"},
		{"password key", "db_password=hunter2hunter2", RulePasswordKey, "hunter2hunter2"},
		{"max_tokens is not a secret", `max_tokens: 4096, "prompt_tokens": 12345`, "", ""},
		{"model version", `"model":"claude-haiku-4-5-20251001"`, "", ""},
		{"float", `"logprob": -0.7750023603439331, x`, "", ""},
		{"year range", "Population (1950-2026) | Macro", "", ""},
		{"thousands", "population is 8 967 665.", "", ""},
		{"unix time", `"created": 1773338921,`, "", ""},
		{"json number after colon", `"total_duration":8633813833,`, "", ""},
		{"date range", "this week (17.02.26-23.02.26)", "", ""},
		{"iso standard", "ISO 8859-1 (1987).", "", ""},
		{"counter", "x-ratelimit: '9999999893'", "", ""},
		{"decimal with commas", "**-428,330,955.97745**", "", ""},
		{"loopback", "http://127.0.0.1:11434/api", "", ""},
		{"api key from env", `API_KEY = os.getenv("API_KEY")`, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := r.Find(c.text)
			if c.value == "" {
				if len(fs) != 0 {
					t.Fatalf("want nothing, found %v (%q)", fs, c.text[fs[0].Start:fs[0].End])
				}
				return
			}
			var got []string
			for _, f := range fs {
				got = append(got, f.Rule+"="+c.text[f.Start:f.End])
				if f.Rule == c.rule && c.text[f.Start:f.End] == c.value {
					return
				}
			}
			t.Fatalf("want %s=%q, got %q", c.rule, c.value, got)
		})
	}
}

func TestActionsAndTokens(t *testing.T) {
	r := newTest(t, Config{RuleActions: map[string]Action{RuleUSSSN: ActionDrop}})
	out, fs := r.RedactString("mail bob@example.com key ghp_" + rep("a1B2c3D4e5", 36))
	if len(fs) != 2 {
		t.Fatalf("findings %v", fs)
	}
	if !strings.Contains(out, "[REDACTED:github_token]") {
		t.Errorf("secret default is mask: %q", out)
	}
	tok := r.Token(RuleEmail, ActionHash, "bob@example.com")
	if !strings.Contains(out, tok) || len(tok) != len("email:")+12 {
		t.Errorf("pii default is hash %q in %q", tok, out)
	}
	// same value, same key: same token in another Redactor; other key: other token
	if r2 := newTest(t, Config{}); r2.Token(RuleEmail, ActionHash, "bob@example.com") != tok {
		t.Error("token not stable across redactors with one key")
	}
	if r3 := newTest(t, Config{HashKey: []byte("other")}); r3.Token(RuleEmail, ActionHash, "bob@example.com") == tok {
		t.Error("token does not depend on the key")
	}
	_, fs = r.RedactString("ssn 123-45-6789")
	if !HasDrop(fs) {
		t.Errorf("drop action not reported: %v", fs)
	}
}

func TestCustomRule(t *testing.T) {
	r := newTest(t, Config{Custom: []CustomRule{
		{Name: "employee_id", Regex: `EMP-(?P<value>\d{6})`, Keywords: []string{"EMP-"}, Category: CategoryPII},
		{Name: "card_like", Regex: `\bZZ\d{16}\b`, Validator: ValidatorLuhn, Action: ActionDrop},
	}})
	out, fs := r.RedactString("badge EMP-123456 and ZZ4111111111111111 and ZZ4111111111111112")
	if len(fs) != 2 {
		t.Fatalf("findings %v in %q", fs, out)
	}
	if !strings.HasPrefix(out, "badge EMP-employee_id:") {
		t.Errorf("value group only: %q", out)
	}
	if fs[1].Rule != "card_like" || fs[1].Action != ActionDrop {
		t.Errorf("second finding %+v", fs[1])
	}
}

func TestConfigValidateNamesField(t *testing.T) {
	cases := map[string]Config{
		"custom_rules[0].regex":     {Custom: []CustomRule{{Name: "x", Regex: "("}}},
		"custom_rules[0].name":      {Custom: []CustomRule{{Name: "Bad Name", Regex: "a"}}},
		"custom_rules[0].validator": {Custom: []CustomRule{{Name: "x", Regex: "a", Validator: "crc"}}},
		"custom_rules[0].action":    {Custom: []CustomRule{{Name: "x", Regex: "a", Action: "erase"}}},
		"disabled_rules":            {Disabled: []string{"nope"}},
		"rule_actions":              {RuleActions: map[string]Action{"email": "erase"}},
		"pii_action":                {PIIAction: "x"},
	}
	for field, cfg := range cases {
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: error %v does not name the field", field, err)
		}
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted an invalid config", field)
		}
	}
}

func TestRedactJSONKeepsOtherBytes(t *testing.T) {
	r := newTest(t, Config{})
	in := "[ {\"role\": \"user\",\n  \"parts\": [{\"type\":\"text\", \"content\": \"mail me: bob@example.com \\u00e9t\\u00e9 \\\"q\\\"\"}]},\n" +
		"{\"headers\": {\"Authorization\": \"Bearer abcDEF1234567890xyz\", \"x-api-key\": \"test_openai_api_key\"}, \"max_tokens\": 4096,\n" +
		" \"args\": \"{\\\"password\\\": \\\"hunter2!x\\\", \\\"n\\\": 1}\", \"alice@example.org\": 1} ]"
	out, fs, ok := r.RedactJSON(in)
	if !ok {
		t.Fatal("valid JSON not walked")
	}
	if !json.Valid([]byte(out)) {
		t.Fatalf("output is not JSON: %s", out)
	}
	rules := map[string]int{}
	for _, f := range fs {
		rules[f.Rule]++
	}
	if rules[RuleEmail] != 2 || rules[RuleAuthorization] != 1 || rules[RulePasswordKey] != 1 || len(fs) != 4 {
		t.Fatalf("findings %v\n%s", fs, out)
	}
	for _, secret := range []string{"bob@example.com", "abcDEF1234567890xyz", "hunter2!x", "alice@example.org"} {
		if strings.Contains(out, secret) {
			t.Errorf("%q survived: %s", secret, out)
		}
	}
	// every byte outside the findings is unchanged: removing the replacements from out and the
	// findings from in leaves the same bytes.
	var rest strings.Builder
	prev := 0
	for _, f := range fs {
		rest.WriteString(in[prev:f.Start])
		prev = f.End
	}
	rest.WriteString(in[prev:])
	stripped := out
	for _, tok := range []string{"[REDACTED:authorization]", "[REDACTED:password_key]"} {
		stripped = strings.Replace(stripped, tok, "", 1)
	}
	for _, v := range []string{"bob@example.com", "alice@example.org"} {
		stripped = strings.Replace(stripped, r.Token(RuleEmail, ActionHash, v), "", 1)
	}
	if stripped != rest.String() {
		t.Errorf("bytes outside findings changed:\n got %q\nwant %q", stripped, rest.String())
	}
	if !strings.Contains(out, `"x-api-key": "test_openai_api_key"`) || !strings.Contains(out, `\u00e9t\u00e9 \"q\"`) {
		t.Errorf("placeholder or escapes changed: %s", out)
	}
}

func TestRedactFallsBackToText(t *testing.T) {
	r := newTest(t, Config{})
	in := `{"broken": "bob@example.com"` // not valid JSON
	if _, _, ok := r.RedactJSON(in); ok {
		t.Fatal("invalid JSON reported as walked")
	}
	out, fs := r.Redact(in)
	if len(fs) != 1 || strings.Contains(out, "bob@") {
		t.Errorf("text fallback: %q %v", out, fs)
	}
	out, fs = r.RedactKeyed("http.request.header.authorization", "Bearer abcdef0123456789")
	if len(fs) != 1 || out != "[REDACTED:authorization]" {
		t.Errorf("keyed: %q %v", out, fs)
	}
	out, fs, _ = r.RedactJSON(`{"logprobs":[{"token":"Hello","logprob":-0.1},{"token":" world"}],"auth":{"token":"dG9rZW4tNzY1NDMyMS1hYmNkZWY"}}`)
	if len(fs) != 1 || !strings.Contains(out, `"token":"Hello"`) || strings.Contains(out, "dG9rZW4tNzY1NDMyMS1hYmNkZWY") {
		t.Errorf("bare token key: %q %v", out, fs)
	}
	out, fs = r.RedactKeyed("http.request.header.authorization", "Bearer test_openai_api_key")
	if len(fs) != 0 || out != "Bearer test_openai_api_key" {
		t.Errorf("placeholder under key: %q %v", out, fs)
	}
}

func TestDecodeJSONStringOffsets(t *testing.T) {
	raw := `a\n\u00e9\ud83d\ude00\"b`
	dec := string(appendUnescaped(nil, raw))
	m := offsetMap{raw: raw}
	offs := make([]int, len(dec)+1)
	for i := range offs {
		offs[i] = m.at(i)
	}
	if dec != "a\né😀\"b" {
		t.Fatalf("decoded %q", dec)
	}
	if len(offs) != len(dec)+1 || offs[len(dec)] != len(raw) {
		t.Fatalf("offsets %v", offs)
	}
	if offs[1] != 1 || offs[2] != 3 || offs[4] != 9 || offs[8] != 21 || offs[9] != 23 {
		t.Errorf("offsets %v", offs)
	}
}

func TestManyTriggers(t *testing.T) {
	r := newTest(t, Config{})
	// two keys inside one window: both values found
	out, fs := r.RedactString("password=hunter2hunter2 password=correcthorse9")
	if len(fs) != 2 || strings.Contains(out, "hunter2") || strings.Contains(out, "correcthorse9") {
		t.Errorf("close keys: %q %v", out, fs)
	}
	// thousands of triggers of one rule are merged into one scan; the real key after them is found
	noise := strings.Repeat("-----BEGIN sk- eyJ @ ", 5000)
	pem := "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
	key := "sk-proj-" + rep("Ab3dE5gH7jK9", 48)
	out, fs = r.RedactString(noise + pem + " " + key)
	if strings.Contains(out, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC") || strings.Contains(out, key) {
		t.Errorf("after %d bytes of triggers: findings %v", len(noise), fs)
	}
}

// TestIdempotent: redacting redacted output finds nothing more, under mask and hash.
func TestIdempotent(t *testing.T) {
	for _, a := range []Action{ActionMask, ActionHash} {
		r := newTest(t, Config{PIIAction: a, SecretAction: a})
		in := `{"password":"hunter2hunter2","headers":{"Authorization":"Bearer abcDEF1234567890xyz"},` +
			`"text":"mail bob@example.com, call +44 20 7946 0958, card 4111 1111 1111 1111, ssn 123-45-6789, ip 203.0.113.7, key ghp_` + rep("a1B2c3D4e5", 36) + `"}`
		once, fs, ok := r.RedactJSON(in)
		if !ok || len(fs) != 8 {
			t.Fatalf("%s: first pass %v", a, fs)
		}
		twice, fs, _ := r.RedactJSON(once)
		if len(fs) != 0 || twice != once {
			t.Errorf("%s: second pass found %v in %s", a, fs, once)
		}
	}
}
