// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"strings"
	"testing"
)

// TestEncodedCredentialFound: a credential inside a base64-encoded JSON document (standard and
// URL alphabets, padded or not; objects, pretty-printed and tab-indented, and arrays) takes the
// encoded run, as text and, for a JSON document, through RedactJSON (its prefilter on raw bytes).
func TestEncodedCredentialFound(t *testing.T) {
	r := newTest(t, Config{})
	for _, c := range readCases(t, "encoded_found.txt") {
		if len(c) != 2 {
			t.Fatalf("case %q: want input and value", c)
		}
		if out, fs := r.Redact(c[0]); strings.Contains(out, c[1]) {
			t.Errorf("%q: %q kept (%v)", c[0], c[1], fs)
		}
		if out, fs, ok := r.RedactJSON(c[0]); ok && strings.Contains(out, c[1]) {
			t.Errorf("JSON %q: %q kept (%v)", c[0], c[1], fs)
		}
	}
}

// TestEncodedCredentialKept: encoded JSON without a credential (a pagination cursor, a
// placeholder), a JWT's segments and encoded bytes that are not text are not taken by
// encoded_credential.
func TestEncodedCredentialKept(t *testing.T) {
	r := newTest(t, Config{})
	for _, c := range readCases(t, "encoded_kept.txt") {
		for _, f := range r.Find(c[0]) {
			if f.Rule == RuleEncodedCredential {
				t.Errorf("%q: %q taken", c[0], c[0][f.Start:f.End])
			}
		}
	}
}

// TestVaultRules: Vault's hvs./hvb. tokens and AppRole secret ids are found by the Veles rules
// genveles keeps; another prefix, a short body, the one-letter legacy prefix and role ids are not.
func TestVaultRules(t *testing.T) {
	r := newTest(t, Config{})
	for _, c := range readCases(t, "vault_found.txt") {
		if len(c) != 2 {
			t.Fatalf("case %q: want input and value", c)
		}
		if out, fs := r.Redact(c[0]); strings.Contains(out, c[1]) {
			t.Errorf("%q: %q kept (%v)", c[0], c[1], fs)
		}
	}
	for _, c := range readCases(t, "vault_kept.txt") {
		if out, fs := r.Redact(c[0]); out != c[0] {
			t.Errorf("changed %q -> %q (%v)", c[0], out, fs)
		}
	}
}
