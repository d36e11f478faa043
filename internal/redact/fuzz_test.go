// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"encoding/json"
	"testing"
)

// FuzzRedactJSON: the JSON walk of agent_redaction never panics; valid JSON stays valid JSON, and
// content that is not a JSON object or array comes back unchanged (RedactJSON's contract).
// `.ci/run` fuzzes it for a bounded time; crashes are kept in testdata/fuzz/FuzzRedactJSON.
func FuzzRedactJSON(f *testing.F) {
	for _, s := range []string{
		`[{"role":"user","parts":[{"type":"text","content":"mail jane.doe@example.com, key sk-proj-Q7wE9rT2yU4iO6pA8sD0fGQ7wE9rT2yU4iO6pA8sD0fG"}]}]`,
		`{"password":"Tr0ub4dor&3x","nested":"{\"api_key\":\"AKIAZ7QW3ER5TY7UI9OP\"}","n":[1,2.5e3,null,true]}`,
		`{"authorization":"Bearer abc.def.ghi","\u00e9":"caf\u00e9 +44 20 7946 0958"}`,
		`[`, `{"a":}`, `"just a string"`, `{}`, `[[[[[]]]]]`,
		`{"key":[{"keyData":{"value":"T8Doy7a0QWQYv6nKtl9QGOjV"}}],"t":"zorpgems_7029c681a41d172c24d19883aff345060900823d24008f38 ZKQAJ7BG0DD41JW03IPZ:bEJDQ2Hflx95gxUu0NlBhgzmsd1XSVCR4kKSKUml zorpgems______________________________"}`,
	} {
		f.Add(s)
	}
	r, err := New(Config{HashKey: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, _, ok := r.RedactJSON(s)
		if !ok {
			if out != s {
				t.Fatalf("not JSON, yet changed: %q -> %q", s, out)
			}
			return
		}
		if json.Valid([]byte(s)) && !json.Valid([]byte(out)) {
			t.Fatalf("valid JSON became invalid: %q -> %q", s, out)
		}
		_, _, _ = r.RedactValue("gen_ai.input.messages", s)
	})
}
