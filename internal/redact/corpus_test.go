// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/runagain/runagain/internal/corpus"
)

// secretFiles are the corpus secrets/ files that hold test credentials: everything except the
// licences, compressed archives and the gitleaks rule files (*.toml hold rules, not secrets).
func secretFiles(t *testing.T) map[string]string {
	files := corpus.Walk(t, "secrets", func(p string) bool {
		base := filepath.Base(p)
		switch filepath.Ext(p) {
		case ".toml", ".gz", ".xz", ".zst", ".zip", ".tar":
			return false
		}
		return base != "LICENSE"
	})
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = string(b)
	}
	if len(out) < 40 {
		t.Fatalf("found %d files under secrets/, want the gitleaks and detect-secrets test data", len(out))
	}
	return out
}

// claim is a value that one rule, run alone over a whole file (no prefilter, no window), claims.
type claim struct {
	rule, file, value, context string
}

func claims(t *testing.T, r *Redactor, files map[string]string) []claim {
	var out []claim
	for _, ru := range r.rules {
		if ru.re == nil {
			continue
		}
		for f, text := range files {
			for _, m := range ru.re.FindAllStringSubmatchIndex(text, -1) {
				a, b := m[0], m[1]
				if ru.group > 0 {
					a, b = m[2*ru.group], m[2*ru.group+1]
				}
				ok := true
				if ru.check != nil {
					a, b, ok = ru.check(text, m, a, b)
				}
				if !ok || a >= b {
					continue
				}
				if !ru.digits && !ru.scanAll && len(ru.keywords) > 0 && !keywordNear(text, ru, m[0], m[1]) {
					continue // the redactor runs a keyword rule only near its keyword
				}
				// the whole lines around the regex match, as an agent would paste them
				lo := strings.LastIndexByte(text[:m[0]], '\n') + 1
				hi := len(text)
				if i := strings.IndexByte(text[m[1]:], '\n'); i >= 0 {
					hi = m[1] + i
				}
				out = append(out, claim{rule: ru.name, file: f, value: text[a:b], context: text[lo:hi]})
			}
		}
	}
	return out
}

// keywordNear reports whether one of ru's keywords occurs in its window around [a, b).
func keywordNear(text string, ru *rule, a, b int) bool {
	w := strings.ToLower(text[max(0, a-ru.before):min(len(text), b+ru.after)])
	for _, k := range ru.keywords {
		if strings.Contains(w, strings.ToLower(k)) {
			return true
		}
	}
	return false
}

// inputMessages builds a gen_ai.input.messages value (OTel GenAI parts model) holding text.
func inputMessages(t testing.TB, text string) string {
	msgs := []map[string]any{
		{"role": "system", "parts": []map[string]any{{"type": "text", "content": "You are a coding assistant."}}},
		{"role": "user", "parts": []map[string]any{{"type": "text", "content": "Why does this config fail?\n" + text + "\nThanks."}}},
		{"role": "assistant", "parts": []map[string]any{{"type": "tool_call", "id": "call_1", "name": "read_file",
			"arguments": map[string]any{"path": "config.env", "content": text}}}},
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// leaves returns every decoded string (keys and values) of a JSON document.
func leaves(t testing.TB, doc string) []string {
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				out = append(out, k)
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// TestCorpusSecretsFoundInMessages: every credential that a rule claims in the corpus secrets/
// files is removed when the lines holding it are embedded in a gen_ai.input.messages JSON value.
func TestCorpusSecretsFoundInMessages(t *testing.T) {
	r := newTest(t, Config{})
	cs := claims(t, r, secretFiles(t))
	perRule := map[string]int{}
	for _, c := range cs {
		perRule[c.rule]++
		doc := inputMessages(t, c.context)
		out, fs, ok := r.RedactJSON(doc)
		if !ok || !json.Valid([]byte(out)) {
			t.Fatalf("%s: output not JSON", c.file)
		}
		if len(fs) == 0 {
			t.Errorf("%s %s: nothing found", filepath.Base(c.file), c.rule)
			continue
		}
		for _, l := range leaves(t, out) {
			if strings.Contains(l, c.value) {
				t.Errorf("%s: %s value survived in %q", filepath.Base(c.file), c.rule, l)
				break
			}
		}
	}
	t.Logf("claims per rule: %v", perRule)
	// the corpus files hold at least these kinds of credentials; a rule that stops claiming them
	// must fail here rather than pass vacuously.
	for _, must := range []string{RuleAWSAccessKeyID, RuleAWSSecretKey, RuleURLCredentials, RulePEMPrivateKey, RulePasswordKey} {
		if perRule[must] == 0 {
			t.Errorf("rule %s claims nothing in the corpus secrets/ files", must)
		}
	}
}

// TestCorpusPlaceholdersLeftAlone: the placeholder credentials in the corpus cassettes
// ("Bearer test_openai_api_key", "Credential=AKIATEST...") survive redaction of the whole file.
func TestCorpusPlaceholdersLeftAlone(t *testing.T) {
	r := newTest(t, Config{})
	markers := []string{"test_openai_api_key", "AKIATEST1234567890AB"}
	files := corpus.Walk(t, ".", func(p string) bool {
		if strings.Contains(p, "/secrets/") || strings.Contains(p, "/pii/") || strings.HasSuffix(p, "README.md") {
			return false
		}
		ext := filepath.Ext(p)
		return ext == ".json" || ext == ".yaml" || ext == ".yml"
	})
	seen := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in := string(b)
		n := 0
		for _, m := range markers {
			n += strings.Count(in, m)
		}
		if n == 0 {
			continue
		}
		seen += n
		out, _ := r.Redact(in)
		got := 0
		for _, m := range markers {
			got += strings.Count(out, m)
		}
		if got != n {
			t.Errorf("%s: %d of %d placeholders left", f, got, n)
		}
	}
	if seen < 100 {
		t.Fatalf("found %d placeholders in the corpus cassettes, want the ~136 known ones", seen)
	}
	t.Logf("%d placeholders left alone", seen)
}

// TestCorpusRecordingsKeepNumbers: the corpus agent recordings (cassettes, traces, fixtures; 14
// MB) hold many numbers (timestamps, durations, model versions, logprobs, embeddings, token
// counts, rate limits) and no phone, card, SSN or IBAN; none of them may be taken for one.
func TestCorpusRecordingsKeepNumbers(t *testing.T) {
	r := newTest(t, Config{})
	files := corpus.Walk(t, ".", func(p string) bool {
		if strings.Contains(p, "/secrets/") || strings.Contains(p, "/pii/") || strings.Contains(p, "/large-payloads/") {
			return false
		}
		ext := filepath.Ext(p)
		return ext == ".json" || ext == ".yaml" || ext == ".yml"
	})
	digitRules := map[string]bool{RulePhone: true, RuleCreditCard: true, RuleUSSSN: true, RuleIBAN: true}
	total, perRule := 0, map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		total += len(s)
		_, fs := r.Redact(s)
		for _, x := range fs {
			perRule[x.Rule]++
			if digitRules[x.Rule] {
				t.Errorf("%s: %s taken in %q", filepath.Base(f), x.Rule, s[max(0, x.Start-30):min(len(s), x.End+10)])
			}
		}
	}
	if total < 5_000_000 {
		t.Fatalf("read %d bytes of recordings, want the ~14 MB in the corpus", total)
	}
	t.Logf("%d files, %d bytes, findings per rule %v", len(files), total, perRule)
}

// gitleaksIDs maps gitleaks rule ids to the rule here that claims the same credentials.
var gitleaksIDs = map[string]string{
	"aws-access-token":         RuleAWSAccessKeyID,
	"anthropic-api-key":        RuleAnthropic,
	"openai-api-key":           RuleOpenAI,
	"github-pat":               RuleGitHub,
	"github-oauth":             RuleGitHub,
	"github-fine-grained-pat":  RuleGitHub,
	"gitlab-pat":               RuleGitLab,
	"gcp-api-key":              RuleGoogleAPIKey,
	"slack-bot-token":          RuleSlackToken,
	"slack-user-token":         RuleSlackToken,
	"slack-webhook-url":        RuleSlackWebhook,
	"stripe-access-token":      RuleStripe,
	"huggingface-access-token": RuleHuggingFace,
	"npm-access-token":         RuleNPM,
	"sendgrid-api-token":       RuleSendGrid,
	"databricks-api-token":     RuleDatabricks,
	"jwt":                      RuleJWT,
	"private-key":              RulePEMPrivateKey,
}

// gitleaksRules reads id and regex of the mapped rules from the corpus gitleaks.toml.
func gitleaksRules(t *testing.T) map[string]*regexp.Regexp {
	b, err := os.ReadFile(filepath.Join(corpus.Dir(t), "secrets", "gitleaks", "config", "gitleaks.toml"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*regexp.Regexp{}
	id := ""
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, `id = "`); ok {
			id = strings.TrimSuffix(v, `"`)
		}
		if v, ok := strings.CutPrefix(l, "regex = '''"); ok && gitleaksIDs[id] != "" {
			re, err := regexp.Compile(strings.TrimSuffix(v, "'''"))
			if err != nil {
				t.Fatalf("gitleaks %s: %v", id, err)
			}
			out[id] = re
		}
	}
	if len(out) < len(gitleaksIDs)-2 {
		t.Fatalf("found %d of the %d mapped gitleaks rules", len(out), len(gitleaksIDs))
	}
	return out
}

// TestGitleaksRulesAgree uses gitleaks' own rules (corpus secrets/gitleaks/config/gitleaks.toml)
// as an independent judge for the provider formats we claim: every credential they find in the
// corpus secrets/ files is removed from a gen_ai.input.messages value (unless it is a placeholder
// such as AKIATEST...).
func TestGitleaksRulesAgree(t *testing.T) {
	r := newTest(t, Config{})
	rules := gitleaksRules(t)
	found := 0
	for f, text := range secretFiles(t) {
		for id, re := range rules {
			for _, m := range re.FindAllStringSubmatch(text, -1) {
				v := m[0]
				if len(m) > 1 && m[1] != "" {
					v = m[1]
				}
				if isPlaceholder(v) {
					continue
				}
				found++
				out, _ := r.Redact(inputMessages(t, v))
				for _, l := range leaves(t, out) {
					if strings.Contains(l, v) {
						t.Errorf("gitleaks %s finds %q in %s; it survived", id, v, filepath.Base(f))
						break
					}
				}
			}
		}
	}
	if found == 0 {
		t.Fatal("gitleaks rules found nothing in the corpus secrets/ files")
	}
	t.Logf("%d gitleaks findings in corpus secrets/ removed", found)
}
