// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/runagain/runagain/internal/testutil/benchtest"

	"github.com/runagain/runagain/internal/corpus"
)

// diffLegacy fails t when RedactJSON and the walk it replaced (legacyRedactJSON) disagree on s:
// same output bytes, same findings (rule and span), same verdict on validity.
func diffLegacy(t testing.TB, r *Redactor, name, s string) {
	got, gfs, gok := r.RedactJSON(s)
	want, wfs, wok := legacyRedactJSON(r, s)
	if gok != wok || got != want || len(gfs) != len(wfs) {
		t.Fatalf("%s: RedactJSON ok=%v %d findings, legacy ok=%v %d findings; outputs equal: %v", name, gok, len(gfs), wok, len(wfs), got == want)
	}
	for i := range gfs {
		if gfs[i] != wfs[i] {
			t.Fatalf("%s: finding %d: %+v, legacy %+v", name, i, gfs[i], wfs[i])
		}
	}
}

// wrapMessages puts text in a gen_ai.input.messages array, as an SDK would: once with
// encoding/json's HTML escaping (\u003c...) and once without, and once as the JSON arguments of
// a tool call (JSON in a JSON string).
func wrapMessages(text string) []string {
	msg := []map[string]any{{"role": "user", "parts": []map[string]any{{"type": "text", "content": text}}}}
	a, _ := json.Marshal(msg)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(msg)
	args, _ := json.Marshal(map[string]any{"query": text, "api_key": "k3Y-" + text[:min(len(text), 24)]})
	c, _ := json.Marshal([]map[string]any{{"role": "assistant", "parts": []map[string]any{{"type": "tool_call", "name": "f", "arguments": string(args)}}}})
	return []string{string(a), b.String(), string(c)}
}

// TestJSONWalkMatchesLegacy: the jsonkit walk with its prefilter redacts exactly as the hand
// scanner it replaced, on every corpus file (JSON files as they are, every file also as the text
// of a message and inside tool-call arguments), the benchmark payloads and the fuzz seeds.
func TestJSONWalkMatchesLegacy(t *testing.T) {
	r := newTest(t, Config{})
	files := corpus.Walk(t, "", func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && st.Size() < 4<<20 && !strings.HasSuffix(p, ".gz") && !strings.HasSuffix(p, ".zst")
	})
	if len(files) < 100 {
		t.Fatalf("%d corpus files", len(files))
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		diffLegacy(t, r, f, s)
		if LooksJSON(s) {
			n++
		}
		if len(s) > 0 && len(s) < 64<<10 {
			for i, w := range wrapMessages(s) {
				diffLegacy(t, r, f+" wrapped "+string(rune('a'+i)), w)
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d corpus files are JSON documents", n)
	}
	for _, v := range benchMessages(8, 8_000, benchPlanted) {
		diffLegacy(t, r, "bench", v)
	}
	for _, s := range jsonWalkSeeds {
		diffLegacy(t, r, s, s)
	}
}

var jsonWalkSeeds = []string{
	`[{"role":"user","parts":[{"type":"text","content":"mail jane.doe@example.com, key sk-proj-Q7wE9rT2yU4iO6pA8sD0fGQ7wE9rT2yU4iO6pA8sD0fG"}]}]`,
	`{"password":"Tr0ub4dor&3x","nested":"{\"api_key\":\"AKIAZ7QW3ER5TY7UI9OP\"}","n":[1,2.5e3,null,true]}`,
	`{"authorization":"Bearer abc.def.ghi","\u00e9":"caf\u00e9 +44 20 7946 0958"}`,
	`{"t":"line\nfe80::1 and\bfe80::2 and \u0031234 5678 9012 3456 \/ hooks.slack.com\/services\/T000\/B000\/XXXX"}`,
	`{"p\u0061ssword":"hunter2hunter2X","a":"\u0041KIAZ7QW3ER5TY7UI9OP","c":"4111\u00201111 1111 1111"}`,
	`{"args":"  \n{\"card\": \"4111 1111 1111 1111\", \"inner\": \"{\\\"token\\\": \\\"ghp_a1B2c3D4e5a1B2c3D4e5a1B2c3D4e5a1B2c3\\\"}\"}"}`,
	`{"k":"\ud83d\ude00 bob@example.com \ud800 x"}`,
	`[`, `{"a":}`, `"just a string"`, `{}`, `[[[[[]]]]]`, `{} {}`, `[1] x`,
	`{"env":"zorp=Hq7Kd2Lm9Xp4Rt6Vw1Yz3Bc5Nf8Gj0Ts+Ua/Q","py":"Z = \u0027Hq7Kd2Lm9Xp4Rt6Vw1Yz3Bc5Nf8Gj0Ts+Ua/Q\u0027\nW=Hq7Kd2Lm9Xp4Rt6Vw1Yz3Bc5\/Nf8Gj0Ts+Ua/Q"}`,
}

// FuzzJSONWalkMatchesLegacy is TestJSONWalkMatchesLegacy on fuzzed input.
func FuzzJSONWalkMatchesLegacy(f *testing.F) {
	for _, s := range jsonWalkSeeds {
		f.Add(s)
	}
	r, err := New(Config{HashKey: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) { diffLegacy(t, r, "fuzz", s) })
}

// TestRedactJSONAllocs: a value in which no rule triggers allocates nothing (pooled walker,
// scanner and buffers; no tree, no string copies). (A keyword without a finding, such as "token"
// in prose, costs the automaton's list of matches: coregx/ahocorasick has no allocation-free
// iteration over overlapping matches.)
func TestRedactJSONAllocs(t *testing.T) {
	if benchtest.RaceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	r := newTest(t, Config{})
	for _, v := range benchMessages(4, 4_000, nil) {
		v = strings.ReplaceAll(v, "tokens", "words")
		if _, fs, ok := r.RedactJSON(v); !ok || len(fs) != 0 {
			t.Fatalf("clean value: ok=%v findings %v", ok, fs)
		}
		if a := testing.AllocsPerRun(20, func() { r.RedactValue("gen_ai.input.messages", v) }); a != 0 {
			t.Errorf("%d allocations for a clean %d-byte value", int(a), len(v))
		}
	}
}
