// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"encoding/base64"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestPrefixedTokenUnseenFamilies: tokens of made-up vendors (no rule of either rule set knows
// their prefix) in the places agents meet them (bare, glued to another token, in an env file,
// a JSON string, a CLI flag, a YAML value) are found by prefixed_token alone.
func TestPrefixedTokenUnseenFamilies(t *testing.T) {
	only := newTest(t, Config{Disabled: allBut(RulePrefixedToken)})
	for _, c := range []struct{ in, token string }{
		{"zorp_Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cV", "zorp_Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cV"},
		{"ZORP-Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cV", "ZORP-Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cV"},
		{"frob_live_9fK2pQ9xZr7LmN4vB6tY1wE3uD5sA8b", "frob_live_9fK2pQ9xZr7LmN4vB6tY1wE3uD5sA8b"},
		{"vlt.CAESIJlU9kQ2bE8rT5wXnYp3mZa7Rc4Hq6Ws", "vlt.CAESIJlU9kQ2bE8rT5wXnYp3mZa7Rc4Hq6Ws"},
		{"ZORP=zorp_Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cV\n", "zorp_Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cV"},
		{`{"cfg": "zorp_Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cVzorp_Q7wE9rT2yU4"}`, "zorp_Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cV"},
		{"zorpctl login -p zorp_Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cV --quiet", "zorp_Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cV"},
		{"upstream:\n  value: zorp_Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cVextra\n", "zorp_Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cV"},
		{"blob essu_VWtSQlNXNWFjMEpWWVZsbFVUZDBORmRQTldJNmNu==extra", "essu_VWtSQlNXNWFjMEpWWVZsbFVUZDBORmRQTldJNmNu"},
	} {
		out, fs := only.Redact(c.in)
		if strings.Contains(out, c.token) || len(fs) == 0 || fs[0].Rule != RulePrefixedToken {
			t.Errorf("%q: token kept: %q %v", c.in, out, fs)
		}
	}
}

// TestPrefixedTokenKeepsIdentifiers: what has the shape but is not a credential stays, with every
// rule on: provider object ids (from the corpus recordings), ids under an id key even when long,
// snake_case and CamelCase names, hex digests, UUID-derived names, paths, URLs and host names.
func TestPrefixedTokenKeepsIdentifiers(t *testing.T) {
	r := newTest(t, Config{})
	for _, in := range []string{
		`{"id":"chatcmpl-Cj4xwF0fLMbLL7cj2PpKMa69vdqgM","object":"chat.completion"}`,
		`{"type":"tool_use","id":"toolu_bdrk_01LzqVRttWAxkjdq19wmG2Cn","name":"get_weather"}`,
		`"id": "msg_bdrk_014Xm38ThEYTKekeaww6c2KS"`,
		`tool_call_id: call_VSPygqKTWdrhaFErNvMV18Yl`,
		`{"id": "resp_0f00ca5b7e22bb4c0068db9d0110d8819da676bd1f2dd03a40"}`,
		`previous_response_id=resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452fe3a`,
		`run run_RsJmiMTrgkBzb3FvyCvRoqpd on thread thread_fbFB5caAj0sEpE1c5ICMDs7I`,
		`openai-project: proj_tzz1TbPPOXaf6j9tEkVUBIAa`,
		`{"request_id": "req_Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cVb8N"}`,
		`{"messages": [{"role": "tool", "toolCallId": "call_Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cVb8N"}]}`,
		`the test test_prefixed_token_keeps_ordinary_snake_case_identifiers_2024 passed`,
		`selector desktop-rhf_SponsoredProductsRemoteRHFSearchEXPSubsK2ClickPagination`,
		`"user_d351d93b-adb0-4714-bbef-a11100fff9cc_token_apiKeyClientSecret": ""`,
		`sha-9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08`,
		`see https://example.com/files/file_Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cV/content`,
		`/var/lib/app/blob_Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cV.bin`,
		`host ab-Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cV.example.com answers`,
		`id pk-lf-5855d85e-3943-497e-bd10-f50ad414bcba-5855d85e3943`,
		`ABCD-EFGH-IJKL-MNOP-QRST-UVWX-YZ12-3456-789A-BCDE-FGHI`,
	} {
		if out, fs := r.Redact(in); len(fs) != 0 {
			t.Errorf("%q: taken: %q %v", in, out, fs)
		}
	}
}

// allBut returns every built-in rule name except keep.
func allBut(keep ...string) []string {
	var out []string
	for _, n := range BuiltinRules() {
		if !strings.Contains(strings.Join(keep, "\x00"), n) {
			out = append(out, n)
		}
	}
	return out
}

// TestEncodedAndURLTokens: a token of shape stored base64-encoded (padded), and a credential
// as the port of a URL's authority (tgram://<bot id>:<token>), are found with every vendor
// rule off; a URL with a real port and a base64 image are kept.
func TestEncodedAndURLTokens(t *testing.T) {
	only := newTest(t, Config{Disabled: allBut(RulePrefixedToken, RuleURLToken)})
	enc := "WKORP_ZORP_SECRET: em9ycF9RN3dFOXJUMnlVNGlPNnBBOHNEMGZHaEoza0w1elgxY1Y=\n" // base64 of zorp_Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cV
	if out, fs := only.Redact(enc); strings.Contains(out, "em9ycF9") || len(fs) != 1 || fs[0].Rule != RulePrefixedToken {
		t.Errorf("encoded token kept: %q %v", out, fs)
	}
	url := "notify: tgram://4839574812:Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cV/12345"
	if out, fs := only.Redact(url); strings.Contains(out, "Q7wE9rT2") || len(fs) != 1 || !strings.Contains(out, "tgram://4839574812:") {
		t.Errorf("URL token kept: %q %v", out, fs)
	}
	for _, in := range []string{
		"http://localhost:4318/v1/traces",
		"see data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
		"sha256=n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=",
	} {
		if out, fs := only.Redact(in); len(fs) != 0 {
			t.Errorf("%q taken: %q %v", in, out, fs)
		}
	}
}

// TestTinkKeysetBase64: a base64-encoded Tink keyset (its type URL inside the base64 run, at any
// alignment) is found whole although its literal sits inside the run.
func TestTinkKeysetBase64(t *testing.T) {
	r := newTest(t, Config{})
	for pad := range 3 {
		raw := strings.Repeat("\x08", pad) + "\x12\x54\x0a\x30type.googleapis.com/google.crypto.tink.AesGcmKey\x12\x12\x1a\x10q7wE9rT2yU4iO6pA\x18\x01"
		enc := base64.StdEncoding.EncodeToString([]byte(raw))
		out, fs := r.Redact("keyset: " + enc + "\n")
		if strings.Contains(out, enc[len(enc)-12:]) || strings.Contains(out, enc[:12]) || len(fs) != 1 {
			t.Errorf("alignment %d: %q %v", pad, out, fs)
		}
	}
}

// TestPrefixedTokenUnderIDAttribute: an attribute named as an identifier keeps a long id of
// token shape; the same value under another attribute is taken.
func TestPrefixedTokenUnderIDAttribute(t *testing.T) {
	r := newTest(t, Config{CleanCache: NewCleanCache(1 << 20)})
	id := "chatcmpl-Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cVb8N"
	for range 2 {
		if out, fs, _ := r.RedactValue("gen_ai.response.id", id); len(fs) != 0 || out != id {
			t.Errorf("id taken: %q %v", out, fs)
		}
	}
	if out, fs, _ := r.RedactValue("gen_ai.completion", "use "+id); len(fs) != 1 || strings.Contains(out, id) {
		t.Errorf("token kept: %q %v", out, fs)
	}
}

// BenchmarkShapeScan is the cost of the shape scanners on loadgen prose and on JSON with ids,
// against scanDigitClusters (the byte scan every string already pays) in the same run.
//
//	go test -run '^$' -bench ShapeScan ./internal/redact/
func BenchmarkShapeScan(b *testing.B) {
	var prose string
	for _, sp := range loadgenSpans(3) {
		for _, kv := range sp {
			if kv.key == "gen_ai.tool.call.result" && len(kv.value) > 400 && prose == "" {
				prose = kv.value
			}
		}
	}
	ids := strings.Repeat(`{"id":"chatcmpl-Cj4xwF0fLMbLL7cj2PpKMa69vdqgM","tool_call_id":"call_VSPygqKTWdrhaFErNvMV18Yl","model":"gpt-4o-2024-08-06"},`, 10)
	for _, tc := range []struct{ name, s string }{{"prose", prose}, {"ids", ids}} {
		for _, sc := range []struct {
			name string
			f    func(string)
		}{
			{"digits", func(s string) { scanDigitClusters(s, func(int, int, int, bool) {}) }},
			{"prefixed", func(s string) { scanPrefixedTokens(s, func(int, int) {}) }},
			{"encoded", func(s string) { scanEncodedTokens(s, func(int, int) {}) }},
			{"loose", func(s string) {
				looseShapeRuns(s, func(int, int) {})
				looseEncodedRuns(s, func(int, int) {})
			}},
		} {
			b.Run(tc.name+"/"+sc.name, func(b *testing.B) {
				b.SetBytes(int64(len(tc.s)))
				for b.Loop() {
					sc.f(tc.s)
				}
			})
		}
	}
}

// TestLongRuns: longRuns finds the same runs as a byte-at-a-time scan, at every alignment and
// length around the bound, and in random text of the set and of blanks.
func TestLongRuns(t *testing.T) {
	ref := func(s string, n int) (out [][2]int) {
		for i := 0; i < len(s); {
			if !looseShapeSet[s[i]] {
				i++
				continue
			}
			j := i
			for j < len(s) && looseShapeSet[s[j]] {
				j++
			}
			if j-i >= n {
				out = append(out, [2]int{i, j})
			}
			i = j
		}
		return out
	}
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := "aZ9_-.=/ :\"\n\xc3"
	var cases []string
	for pre := range 9 {
		for l := 28; l <= 36; l++ {
			cases = append(cases, strings.Repeat(" ", pre)+strings.Repeat("x", l), strings.Repeat(" ", pre)+strings.Repeat("x", l)+" tail")
		}
	}
	for range 2000 {
		var sb strings.Builder
		for range rng.IntN(200) {
			if rng.IntN(3) == 0 {
				sb.WriteString(strings.Repeat("k", rng.IntN(40)))
			}
			sb.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		cases = append(cases, sb.String())
	}
	for _, s := range cases {
		var got [][2]int
		longRuns(s, shapeTokenLen, looseShapeSet, func(lo, hi int) { got = append(got, [2]int{lo, hi}) })
		if want := ref(s, shapeTokenLen); !slices.Equal(got, want) {
			t.Fatalf("%q: got %v, want %v", s, got, want)
		}
	}
}

// TestShapePrefilterSound: in raw JSON, with escapes around and inside the strings, the
// prefilter marks every leaf that holds a token of shape (bare or base64-encoded): RedactJSON
// gives what it gives with the prefilter off (every leaf scanned).
func TestShapePrefilterSound(t *testing.T) {
	on := newTest(t, Config{HashKey: []byte("k")})
	off := newTest(t, Config{HashKey: []byte("k")})
	off.prefilterOK = false
	tok := "zorp_Q7wE9rT2yU4iO6pA8sD0fGhJ3kL5zX1cV"
	enc := base64.StdEncoding.EncodeToString([]byte(tok + "ab"))
	for _, doc := range []string{
		`{"a":"` + tok + `"}`,
		`{"a":"line\n` + tok + `\tend"}`,
		`{"a":"\"` + tok + `\""}`,
		`{"a":"\u0041 ` + tok + `"}`,
		`{"a":"x","b":["` + enc + `"]}`,
		`{"a":"` + strings.ReplaceAll(enc, "/", `\/`) + `"}`,
		`{"a":"{\"inner\":\"` + tok + `\"}"}`,
		`[{"id":"` + tok + `"},{"name":"` + tok + `"}]`,
	} {
		got, gfs, ok1 := on.RedactJSON(doc)
		want, wfs, ok2 := off.RedactJSON(doc)
		if !ok1 || !ok2 || got != want || len(gfs) != len(wfs) {
			t.Errorf("%s:\n prefilter %q %v\n all       %q %v", doc, got, gfs, want, wfs)
		}
		if len(wfs) == 0 && !strings.Contains(doc, `"id"`) {
			t.Errorf("%s: nothing found", doc)
		}
	}
}
