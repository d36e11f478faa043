// SPDX-License-Identifier: Apache-2.0

package termsafe

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestWriterEscapesControls(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text\nand\ttabs", "plain text\nand\ttabs"},
		{"esc \x1b]0;PWNED\x07 title", `esc \u001b]0;PWNED\u0007 title`},
		{"line\rOVERWRITE \x1b[2K", `line\u000dOVERWRITE \u001b[2K`},
		{"nul\x00del\x7f", `nul\u0000del\u007f`},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"bidi \u202egnp.exe\u2066x\u2069", `bidi \u202egnp.exe\u2066x\u2069`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"colour \x1b[31mred\x1b[0m", `colour \u001b[31mred\u001b[0m`},
		{"émoji ✓ 日本", "émoji ✓ 日本"},
	}
	for _, c := range cases {
		var out bytes.Buffer
		n, err := NewWriter(&out).Write([]byte(c.in))
		if err != nil || n != len(c.in) {
			t.Fatalf("Write(%q) = %d, %v", c.in, n, err)
		}
		if out.String() != c.want {
			t.Errorf("Write(%q) wrote %q, want %q", c.in, out.String(), c.want)
		}
	}
	// A printer that colours its own output lets SGR through, and nothing else.
	var col bytes.Buffer
	w := NewWriter(&col)
	w.AllowSGR = true
	_, _ = w.Write([]byte("\x1b[31mred\x1b[0m \x1b]0;T\x07"))
	if want := "\x1b[31mred\x1b[0m \\u001b]0;T\\u0007"; col.String() != want {
		t.Errorf("AllowSGR wrote %q, want %q", col.String(), want)
	}
	// String escapes colour too: a value inside a line is never allowed to style it.
	if got := String("a\x1b[31mb"); got != `a\u001b[31mb` {
		t.Errorf("String kept SGR: %q", got)
	}
	if s := "clean ✓"; String(s) != s {
		t.Errorf("String changed clean text")
	}
}

// JSON written through a Writer parses to exactly the values that were encoded.
func TestWriterKeepsJSONValues(t *testing.T) {
	v := map[string]string{"msg": "hi \x1b]0;T\x07 \u202e \u0085 \r end"}
	var out bytes.Buffer
	enc := json.NewEncoder(NewWriter(&out))
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"\u202e", "\u0085", "\x1b"} {
		if bytes.Contains(out.Bytes(), []byte(bad)) {
			t.Fatalf("raw %q reached the output: %q", bad, out.String())
		}
	}
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	if back["msg"] != v["msg"] {
		t.Fatalf("round trip changed the value: %q, want %q", back["msg"], v["msg"])
	}
}

func TestCell(t *testing.T) {
	if got := Cell("sess\tion\nid \x1b[2J"); got != `sess\tion\nid \u001b[2J` {
		t.Errorf("Cell = %q", got)
	}
	if got := Cell("plain-session-1"); got != "plain-session-1" {
		t.Errorf("Cell changed a plain value: %q", got)
	}
}
