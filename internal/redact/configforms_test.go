// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestConfigFormsFound: the configuration forms detect-secrets' test files write credentials in
// (its short_files, config.ini, config.env and file_with_secrets.py, with values written here):
// an INI value on the indented lines below its name, a YAML member under a credential name, a
// tuple of literals given to one, a name that only spells "id" inside a word, the same secret
// repeated under a name that says nothing, and random values assigned with no credential word in
// an env file or to a constant.
func TestConfigFormsFound(t *testing.T) {
	r := newTest(t, Config{})
	cases := []struct {
		name, in string
		gone     []string
		kept     []string
	}{
		{"INI multi-line value", "[db]\ndb_passwords =\n    tulip77\n    Zx9vQ2rLmP\n\nhost = db1\n", []string{"tulip77", "Zx9vQ2rLmP"}, []string{"db_passwords =", "host = db1"}},
		{"INI multi-line value under a weak name", "[s]\nsecrets_we_keep =\n    orchid\n    N7kP2qW9zX4m\n", []string{"N7kP2qW9zX4m"}, []string{"secrets_we_keep ="}},
		{"YAML member under a credential name", "deploy:\n  user: ann\n  password:\n    secure: lilacsbloomintheevening\n  on:\n    branch: main\n", []string{"lilacsbloomintheevening"}, []string{"user: ann", "secure: ", "branch: main"}},
		{"tuple of literals", "API_SECRETS = 'f3a91c07d2b845e6a1c0e9d8b7a61234', '0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a'\n", []string{"f3a91c07d2b845e6a1c0e9d8b7a61234", "0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a"}, []string{"API_SECRETS = '"}},
		{"a name that spells id inside a word", "my_secret_not_an_i_d = Qw8eR7tY6uI5oP4aS3dF2gH1jK0lZ9xC\nother_id = Qw8eR7tY6uI5oP4aS3dF2gH1jK0lZ9xC\n", []string{"Qw8eR7tY6uI5oP4aS3dF2gH1jK0lZ9xC"}, []string{"my_secret_not_an_i_d = ", "other_id = "}},
		{"env file value without a credential word", "colour=blue\nzorp=Hq7Kd2Lm9Xp4Rt6Vw1Yz3Bc5Nf8Gj0Ts+Ua/Q\n", []string{"Hq7Kd2Lm9Xp4Rt6Vw1Yz3Bc5Nf8Gj0Ts+Ua/Q"}, []string{"colour=blue", "zorp="}},
		{"exported", "export ZORP=Hq7Kd2Lm9Xp4Rt6Vw1Yz3Bc5Nf8Gj0Ts+Ua/Q\n", []string{"Hq7Kd2Lm9Xp4Rt6Vw1Yz3Bc5Nf8Gj0Ts+Ua/Q"}, []string{"export ZORP="}},
		{"constant without a credential word", "ZORP_VALUE = 'bG9uZyByYW5kb20gbG9va2luZyBzdHJpbmcgb2YgYnl0ZXM9'  # later\n", []string{"bG9uZyByYW5kb20gbG9va2luZyBzdHJpbmcgb2YgYnl0ZXM9"}, []string{"ZORP_VALUE = '", "'  # later"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkGoneKept(t, r, c.in, c.gone, c.kept) })
	}
	// the same forms inside a JSON string leaf: the raw-JSON prefilter must let them through
	doc, err := json.Marshal(map[string]string{"stdout": cases[0].in + cases[5].in + cases[2].in})
	if err != nil {
		t.Fatal(err)
	}
	out, _, ok := r.RedactJSON(string(doc))
	if !ok {
		t.Fatalf("RedactJSON refused %s", doc)
	}
	for _, g := range []string{"Zx9vQ2rLmP", "Hq7Kd2Lm9Xp4Rt6Vw1Yz3Bc5Nf8Gj0Ts", "lilacsbloomintheevening"} {
		if strings.Contains(out, g) {
			t.Errorf("%q survived in JSON: %s", g, out)
		}
	}
	// a leaf that is one env line, with no other trigger
	out, _, ok = r.RedactJSON(`{"env":"zorp=Hq7Kd2Lm9Xp4Rt6Vw1Yz3Bc5Nf8Gj0Ts+Ua/Q"}`)
	if !ok || strings.Contains(out, "Hq7Kd2Lm9Xp4Rt6Vw1Yz3Bc5Nf8Gj0Ts") {
		t.Errorf("env line in a JSON leaf: %s", out)
	}
}

// TestConfigFormsKept: the same forms with data, not credentials: content hashes, ids and
// encoded data under names that say so, values of one case or without digits, code (spaced
// assignments to lower-case names), INI blocks and YAML mappings under other names, and the
// members of a credential block that name who holds it.
func TestConfigFormsKept(t *testing.T) {
	r := newTest(t, Config{})
	for _, in := range []string{
		"GIT_COMMIT=3f2a9c0d3b7e1f4a6c8d0e2f4a6b8c0d2e4f6a8b\n",
		"IMAGE_DIGEST=Hq7Kd2Lm9Xp4Rt6Vw1Yz3Bc5Nf8Gj0Ts+Ua/Q\n",
		"FILE_SHA256=Hq7Kd2Lm9Xp4Rt6Vw1Yz3Bc5Nf8Gj0Ts+Ua/Q=\n",
		"REQUEST_ID=Hq7Kd2Lm9Xp4Rt6Vw1Yz3Bc5Nf8Gj0Ts+Ua/Q\n",
		"ZORP=abcdefghijklmnopqrstuvwxyzabcdefghijkl\n",
		"ZORP=ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ABCD\n",
		"zorp = Hq7Kd2Lm9Xp4Rt6Vw1Yz3Bc5Nf8Gj0Ts+Ua/Q\n",
		"x = 'Hq7Kd2Lm9Xp4Rt6Vw1Yz3Bc5Nf8Gj0Ts+Ua/Q'\n",
		"url = https://example.com/?q=Hq7Kd2Lm9Xp4Rt6Vw1Yz3Bc5Nf8Gj0Ts+Ua/Q\n",
		"ZORP=6f1c2b0e-8a3d-4e5f-9b7a-1c2d3e4f5a6b\n",
		"ZORP_FIXTURE=eyJhbGciOiJIUzI1NiJ9eyJzdWIiOiIxMjM0NTY3ODkwIn0\n",
		"[values]\nkeyA =\n    Hq7Kd2Lm9Xp4\n    Rt6Vw1Yz3Bc5\n",
		"credentials:\n  username: ann\n",
		"secret:\n  secretName: tls-cert-for-the-frontend\n",
		"password:\n  - one\n  - two\n",
	} {
		if out, fs := r.Redact(in); len(fs) > 0 {
			t.Errorf("%q: changed to %q (findings %v)", in, out, fs)
		}
	}
}

// TestAboutCredential: names that end in a word about a credential, in one run or as words, and
// names that only spell such a word.
func TestAboutCredential(t *testing.T) {
	for name, want := range map[string]string{
		"api_key_id": "id", "apikeyid": "id", "SharedAccessKeyName": "name", "TOKEN_URL": "url", "token_expires_at": "expiresat",
		"tokenExpiresAt": "expiresat", "secret_path": "path", "real_secret_which_isnt_an_i_d": "", "password": "", "api-key": "",
		"client_secret_": "",
	} {
		if got := aboutCredential(name); got != want {
			t.Errorf("aboutCredential(%q) = %q, want %q", name, got, want)
		}
	}
}
