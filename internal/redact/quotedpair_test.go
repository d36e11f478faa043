// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestQuotedPairFound: two random tokens written as consecutive string literals (quotedPair:
// the arguments of a call, a tuple) are both taken, as text and as code held in a JSON string
// (its double quotes then escaped), with the JSON walk's prefilter on.
func TestQuotedPairFound(t *testing.T) {
	r := newTest(t, Config{})
	for _, c := range readCases(t, "quoted_pair_found.txt") {
		if len(c) != 2 {
			t.Fatalf("case %q: want input and value", c)
		}
		if out, fs := r.Redact(c[0]); strings.Contains(out, c[1]) {
			t.Errorf("%q: %q kept (%v)", c[0], c[1], fs)
		}
		doc, err := json.Marshal(map[string]string{"code": c[0]})
		if err != nil {
			t.Fatal(err)
		}
		out, fs, ok := r.RedactJSON(string(doc))
		if !ok {
			t.Fatalf("%s: not JSON", doc)
		}
		if strings.Contains(out, c[1]) {
			t.Errorf("JSON %s: %q kept (%v)", doc, c[1], fs)
		}
	}
}

// TestQuotedPairKept: lists of three random literals, provider ids, a random literal beside a
// short value, object keys, words and counting runs stay as they are.
func TestQuotedPairKept(t *testing.T) {
	r := newTest(t, Config{})
	for _, c := range readCases(t, "quoted_pair_kept.txt") {
		if out, fs := r.Redact(c[0]); out != c[0] {
			t.Errorf("changed %q -> %q (%v)", c[0], out, fs)
		}
	}
}

// TestLooseShapeRunsQuotedLiterals: in raw JSON bytes, a run after a quote that is not the JSON
// string's own (', `, \") next to a ',' is hot, so that the prefilter lets quotedPair see code
// held in a string; a lone literal and a run that is a whole JSON string of its own are not.
func TestLooseShapeRunsQuotedLiterals(t *testing.T) {
	const tok = "aFCMyKs9UroWcskzbwfh0mP89yvpZyc2pRYiHkY6yN4We2NFmX"
	for raw, want := range map[string]bool{
		`{"c":"f(\"x\", \"` + tok + `\")"}`:     true,
		`{"c":"f(\"` + tok + `\",\n  \"x\")"}`:  true,
		`{"c":"f('x',\n\t'` + tok + `')"}`:      true,
		"{\"c\":\"f(`" + tok + "`, `x`)\"}":     true,
		`{"c":"f(\"` + tok + `\")"}`:            false,
		`{"c":"` + tok + `"}`:                   false,
		`{"a":"x", "c":"` + tok + `", "d":"y"}`: false,
	} {
		got := false
		looseShapeRuns(raw, func(lo, hi int) { got = got || strings.Contains(raw[lo:hi], tok) })
		if got != want {
			t.Errorf("%s: hot %v, want %v", raw, got, want)
		}
	}
}
