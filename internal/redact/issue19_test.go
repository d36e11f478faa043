// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runagain/runagain/internal/corpus"
)

// The misses, false positives and placeholder cases reported in issue 19, one case each. A find
// case names the values that must not survive and the text around them that must stay byte for
// byte (an edit never extends past the secret); a keep case must come out unchanged.
func TestIssue19SecretsFound(t *testing.T) {
	r := newTest(t, Config{})
	cases := []struct {
		name, in string
		gone     []string
		kept     []string // substrings that must survive unchanged
	}{
		{"gitlab runner token", `runner_registration: GR1348941RcY5HhGmzwHsLjMqgqAu`, []string{"GR1348941RcY5HhGmzwHsLjMqgqAu"}, []string{"runner_registration: "}},
		{"base64 PEM private key", "tls.key: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVBOXIxZ1h1NXRiS05tNGU2bWhJRHkzVWVaZ0FiZ0xVQlcyekNRdEs2RzFrWU85QW9YSUtVZ1pueW1paU9GZ0pURAphOUQ1RU1oSEUwR0Z4QjVJM2w0YXBmYkR5Q2hSVFBxN2lFc0N6c1ZrREN0dFJXY2VudFI5V0FnRGVER0NROWJsCi0tLS0tRU5EIFJTQSBQUklWQVRFIEtFWS0tLS0tCg==\ntls.crt: none",
			[]string{"LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVkt", "S0tLS0tCg=="}, []string{"tls.key: ", "\ntls.crt: none"}},
		{"azure storage connection string", "DefaultEndpointsProtocol=https;AccountName=acct1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuffix=core.windows.net",
			[]string{"Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="}, []string{"AccountName=acct1;AccountKey=", ";EndpointSuffix=core.windows.net"}},
		{"azure service bus connection string", "Endpoint=sb://ns1.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=OMrlGzNoo/Ll9a+cbKozM0+mgybAsNK4VLTIAiW73sk=",
			[]string{"OMrlGzNoo/Ll9a+cbKozM0+mgybAsNK4VLTIAiW73sk="}, []string{"SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey="}},
		{"multi-host postgres URI", "DATABASE_URL=postgres://app:Zq7rT9xW@db1:5432,app:Kd2vL8wQ@db2:5432/orders",
			[]string{"Zq7rT9xW", "Kd2vL8wQ"}, []string{"@db1:5432,", "@db2:5432/orders"}},
		{"mongodb password with @", "mongodb://admin:p@ss9Wq!z@cluster0.example.net/db?retryWrites=true",
			[]string{"p@ss9Wq!z"}, []string{"@cluster0.example.net/db?retryWrites=true"}},
		{"age secret key", "# created: 2025-01-01\nAGE-SECRET-KEY-1M3Y9G2MJA8V7YMFQCJZKSDS5RP3DYVJAG5SNJM7RWFZA8XSAC54HTU4XU6\n",
			[]string{"M3Y9G2MJA8V7YMFQCJZKSDS5RP3DYVJAG5SNJM7RWFZA8XSAC54HTU4XU6"}, []string{"# created: 2025-01-01\n"}},
		{"vault token", `export VAULT_ADDR=https://vault:8200 VAULT_TOKEN=hvs.fUlO3U6UfLHJlCYevv8nle3frPFeJysFLp4qj5NZCTnEHrS6C5Mh4pyi-qXJ_S5g2dCNFnZ1rDt6x9lJZ4iaEkIF_uYH72c`,
			[]string{"fUlO3U6UfLHJlCYevv8nle3frPFeJysFLp4qj5NZCTnEHrS6C5Mh4pyi"}, []string{"export VAULT_ADDR=https://vault:8200 VAULT_TOKEN="}},
		{"docker hub token", `docker login -u me -p dckr_pat_rmw2cI_QFNxjMdpjgl6ielW_NVR`, []string{"dckr_pat_rmw2cI_QFNxjMdpjgl6ielW_NVR"}, []string{"docker login -u me -p "}},
		{"doppler token", `DOPPLER_TOKEN="dp.pt.rjhdcxlhv5wq3g8nckryubn85eb5ollkyk8emqgk576"`, []string{"rjhdcxlhv5wq3g8nckryubn85eb5ollkyk8emqgk576"}, []string{`DOPPLER_TOKEN="`, `"`}},
		{"new relic user key", `key NRAK-0N8E71WMU7JMACQT13L8EZ6B2Q7 works`, []string{"NRAK-0N8E71WMU7JMACQT13L8EZ6B2Q7"}, []string{"key ", " works"}},
		{"atlassian token", `curl -u deploy:ATATT3J5XOm9qYtgYBEmkSs9YVn9fsc9uQ_4tJqKQN_XLZXcDzUvybqeLjSR9VZ069iiTUtzKtUIW-RxPT=e27Jk4kP-erBUrZ4HOwF_dv7AOJNaV3qOrwo4eJTGMJHrjU=Ub1MK4x86DR-LhEVpU5iF66tmH3Z3vooRoARtsX-MREt68-boq00flkAOQSw3 https://x.atlassian.net`,
			[]string{"ATATT3J5XOm9qYtgYBEmkSs9YVn9fsc9uQ"}, []string{" https://x.atlassian.net"}},
		{"wireguard private key", "[Interface]\nPrivateKey = yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\nListenPort = 51820\n[Peer]\nPublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=",
			[]string{"yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk="}, []string{"[Interface]\nPrivateKey = ", "\nListenPort = 51820\n[Peer]\nPublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg="}},
		{"telegram bot token", `bot = Bot("7123456789:AAEywZ4w94j587C5nd_FtVUTa4Mx9O6yMpD")`, []string{"AAEywZ4w94j587C5nd_FtVUTa4Mx9O6yMpD"}, []string{`bot = Bot("`, `")`}},
		{"okta SSWS", "Authorization: SSWS 005-2STOrp9C9UcvykYY1aTxlgUC_ZUnMBRld4IVnn", []string{"005-2STOrp9C9UcvykYY1aTxlgUC_ZUnMBRld4IVnn"}, []string{"Authorization: SSWS "}},
		{"ruby hash rocket", `config = { password => 'Xk9#mP2vQw' }`, []string{"Xk9#mP2vQw"}, []string{`config = { password => '`, `' }`}},
		{"go short assignment", `my_password := "Xk9#mP2vQw"`, []string{"Xk9#mP2vQw"}, []string{`my_password := "`, `"`}},
		{"backtick is not part of the key", "Set `OPENAI_API_KEY=sk-proj-nMAOmCEhNxaAyLUjLtlhTest5ujGsYDiWi4imz75FvE06qtR` first.",
			[]string{"nMAOmCEhNxaAyLUjLtlh"}, []string{"Set `OPENAI_API_KEY=", "` first."}},
		{"a key containing test", `OPENAI_API_KEY=sk-proj-nMAOmCEhNxaAyLUjLtlhTest5ujGsYDiWi4imz75FvE06qtR`, []string{"Test5ujGsYDiWi4imz75FvE06qtR"}, []string{"OPENAI_API_KEY="}},
		{"a password containing < and >", `password = "Kq9<vT2>mZ"`, []string{"Kq9<vT2>mZ"}, []string{`password = "`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := checkGoneKept(t, r, c.in, c.gone, c.kept)
			for _, f := range fs {
				if f.Category != CategorySecret {
					t.Errorf("%s finding %s at %q", f.Category, f.Rule, c.in[f.Start:f.End])
				}
			}
		})
	}
}

func TestIssue19CodeAndPlaceholdersKept(t *testing.T) {
	r := newTest(t, Config{})
	for _, in := range []string{
		`this.addPassword = "#add-password";`,
		`IAMUserChangePassword = "arn:aws:iam::aws:policy/IAMUserChangePassword"`,
		`const pw = process.env.REACT_APP_FIREBASE_DEV_PASSWORD;`,
		`password: process.env.REACT_APP_FIREBASE_DEV_PASSWORD,`,
		`db.connect(user, password: "#{password}")`,
		`var secret = +new Buffer(token, 'base64');`,
		"Set `OPENAI_API_KEY=sk-...` in your shell.",
		`api_key = "<your-api-key>"`,
		`api_key: ${OPENAI_API_KEY}`,
		`token = "xxx"`,
		`password = "xxxxxxxx"`,
		`OPENAI_API_KEY="sk-..."`,
		`secret_key = "your_secret_key_here"`,
		`administrator_login_password = var.db_password`,
		`SUMO_ACCESS_KEY={SumoAccessKey}`,
		`public_key = "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg="`,
		`csrf_token = "Mj2qykJO5rELyHgezQ69nzUX0i3OH67V7"`,
		`"hashed_secret": "a2480a72004fc40d124495fd59f5b482034fbadd"`,
		`password: String,`,
		`if (password == null) return;`,
		`{"key": "9ac73818a528f9f1a3f1067bc358e549", "role": "researcher"}`,
	} {
		out, fs := r.Redact(in)
		if out != in {
			t.Errorf("changed %q -> %q (%v)", in, out, fs)
		}
	}
}

func TestIssue19PII(t *testing.T) {
	r := newTest(t, Config{})
	for _, c := range []struct{ in, rule, value string }{
		{"Maestro card 6759 6498 2648 on file", RuleCreditCard, "6759 6498 2648"},
		{"Maestro card 675964982648 on file", RuleCreditCard, "675964982648"},
		{"Call me at 99 668472 tonight", RulePhone, "99 668472"},
	} {
		_, fs := r.Redact(c.in)
		ok := false
		for _, f := range fs {
			if f.Rule == c.rule && c.in[f.Start:f.End] == c.value {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%q: want %s %q, got %v", c.in, c.rule, c.value, fs)
		}
	}
	// not a card: 12 digits failing Luhn; not a phone: a counter pair
	for _, in := range []string{"order 675964982643 shipped", "build 12 345678 done"} {
		if out, fs := r.Redact(in); out != in {
			t.Errorf("changed %q -> %q (%v)", in, out, fs)
		}
	}
}

// TestCorpusRecordingsNoSecretFalsePositives: the corpus agent recordings (cassettes, traces;
// their authors replaced the credentials with placeholders) hold no credential but recorded
// cookies; none of the 219 gitleaks rules nor the keyword-anchored detector may claim anything
// in them (ids, hashes, signatures, base64 images are not secrets).
func TestCorpusRecordingsNoSecretFalsePositives(t *testing.T) {
	r := newTest(t, Config{})
	files := corpus.Walk(t, ".", func(p string) bool {
		if strings.Contains(p, "/secrets/") || strings.Contains(p, "/pii/") {
			return false
		}
		ext := filepath.Ext(p)
		return ext == ".json" || ext == ".yaml" || ext == ".yml"
	})
	cookies := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		_, fs := r.Redact(s)
		for _, x := range fs {
			switch {
			case x.Category != CategorySecret:
			case x.Rule == RuleCookie:
				cookies++
			default:
				t.Errorf("%s: %s takes %q", filepath.Base(f), x.Rule, s[max(0, x.Start-40):min(len(s), x.End+10)])
			}
		}
	}
	if cookies == 0 {
		t.Error("no recorded cookie found: the corpus recordings were not read")
	}
}

// checkGoneKept redacts in as text: no value of gone may survive, every substring of kept must
// (an edit never extends past the secret). It returns the findings.
func checkGoneKept(t *testing.T, r *Redactor, in string, gone, kept []string) []Finding {
	t.Helper()
	out, fs := r.Redact(in)
	for _, g := range gone {
		if strings.Contains(out, g) {
			t.Errorf("%q survived: %q (findings %v)", g, out, fs)
		}
	}
	for _, k := range kept {
		if !strings.Contains(out, k) {
			t.Errorf("%q was changed: %q (findings %v)", k, out, fs)
		}
	}
	return fs
}
