// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// readCases reads a testdata file of one case a line (# starts a comment line, \n in a line
// stands for a newline), split at tabs.
func readCases(t *testing.T, name string) [][]string {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, strings.Split(strings.ReplaceAll(l, `\n`, "\n"), "\t"))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no cases", name)
	}
	return out
}

// TestUnseenFamiliesFound: tokens of invented families (no rule of runagain, gitleaks or Veles
// knows them) are found by the generic detectors: hexadecimal bodies behind a prefix that names
// a product (hexPrefixedToken), and handwritten values given to a credential name in an explicit
// context (explicitGeneric), also inside JSON held in a string.
func TestUnseenFamiliesFound(t *testing.T) {
	r := newTest(t, Config{})
	for _, c := range readCases(t, "unseen_found.txt") {
		if len(c) != 2 {
			t.Fatalf("case %q: want input and value", c)
		}
		out, fs := r.Redact(c[0])
		if strings.Contains(out, c[1]) {
			t.Errorf("%q: %q kept (%v)", c[0], c[1], fs)
		}
	}
}

// TestUnseenFamiliesKept: ids and content hashes behind id prefixes, alphabets, names under a
// bare "key" or "token", and the placeholders issue 33 names stay as they are.
func TestUnseenFamiliesKept(t *testing.T) {
	r := newTest(t, Config{})
	for _, c := range readCases(t, "unseen_kept.txt") {
		if out, fs := r.Redact(c[0]); out != c[0] {
			t.Errorf("changed %q -> %q (%v)", c[0], out, fs)
		}
	}
}

// TestNestedValueAfterCleanCache: a "value" string the clean cache holds as clean (seen under an
// object that is not a credential's) is still taken under a credential name, and the other way
// round a taken one does not make the same string a finding elsewhere.
func TestNestedValueAfterCleanCache(t *testing.T) {
	r := newTest(t, Config{CleanCache: NewCleanCache(1 << 20)})
	const tok = "myzdCGofB4xKmQnoXbuc22zfPD1NAIBnj6PkHkwuRVOdKYDtEo2Ex5ujhVSiiQlUaoVZFvZq" // MinCleanCacheLen or more: the leaf is cached
	clean := `{"settings": {"value": "` + tok + `"}, "note": "a longer string so the document is walked"}`
	for range 2 {
		if out, fs := r.Redact(clean); out != clean {
			t.Fatalf("changed %q -> %q (%v)", clean, out, fs)
		}
	}
	cred := `{"zorpKeyData": {"value": "` + tok + `"}, "note": "a longer string so the document is walked"}`
	for range 2 {
		if out, fs := r.Redact(cred); strings.Contains(out, tok) {
			t.Fatalf("kept %q (%v)", out, fs)
		}
	}
	if out, fs := r.Redact(clean); out != clean {
		t.Fatalf("after the credential: changed %q -> %q (%v)", clean, out, fs)
	}
}
