// SPDX-License-Identifier: Apache-2.0

// Package termsafe keeps text recorded from agents (untrusted: model output, tool results, span
// names) from driving the terminal that prints it. Escape sequences can rewrite the screen, set
// the window title, hide lines or, in some terminals, write files; bidirectional overrides
// (Trojan Source, CVE-2021-42574) make text read differently from its bytes.
//
// Writer escapes, per UTF-8 rune:
//   - C0 controls other than newline and tab, and DEL (U+0000-U+001F, U+007F): carriage return
//     included, since it overwrites the line;
//   - C1 controls (U+0080-U+009F), which some terminals read as CSI and OSC;
//   - the bidirectional formatting characters of Unicode TR9 (U+061C, U+200E, U+200F,
//     U+202A-U+202E, U+2066-U+2069);
//   - bytes that are not valid UTF-8.
//
// Each becomes a `\uXXXX` escape (invalid bytes `\uFFFD`-free: `\xHH`), which is also a valid
// escape inside a JSON string, so JSON documents written through a Writer still parse to the
// same values (encoding/json already escapes C0 controls and invalid UTF-8 itself). SGR colour
// sequences (ESC [ digits and semicolons m) written in one Write call pass when AllowSGR is set:
// colour cannot move the cursor or change anything but the look of the text.
package termsafe

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// Writer wraps an io.Writer; see the package documentation for what it escapes.
type Writer struct {
	W        io.Writer
	AllowSGR bool
	buf      bytes.Buffer
}

// NewWriter returns a Writer over w that escapes SGR colour sequences too: recorded text never
// styles the output (black on black would hide it). A printer that colours its own output sets
// AllowSGR and escapes the recorded values it prints with String.
func NewWriter(w io.Writer) *Writer { return &Writer{W: w} }

// File returns the underlying *os.File when there is one (for terminal detection), else nil.
func (t *Writer) File() *os.File {
	f, _ := t.W.(*os.File)
	return f
}

// Write escapes p and writes it whole; it returns len(p) on success, as io.Writer requires.
func (t *Writer) Write(p []byte) (int, error) {
	t.buf.Reset()
	appendEscaped(&t.buf, p, t.AllowSGR)
	if _, err := t.W.Write(t.buf.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// String returns s with the characters listed in the package documentation escaped; SGR
// sequences are escaped too.
func String(s string) string {
	if clean(s) {
		return s
	}
	var b bytes.Buffer
	appendEscaped(&b, []byte(s), false)
	return b.String()
}

func clean(s string) bool {
	for _, r := range s {
		if unsafeRune(r) {
			return false
		}
	}
	return utf8.ValidString(s)
}

func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c || r == 0x200e || r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// sgrLen returns the length of an SGR sequence at the start of p (ESC [ [0-9;]* m), or 0.
func sgrLen(p []byte) int {
	if len(p) < 3 || p[0] != 0x1b || p[1] != '[' {
		return 0
	}
	for i := 2; i < len(p); i++ {
		c := p[i]
		switch {
		case c == 'm':
			return i + 1
		case c >= '0' && c <= '9' || c == ';':
		default:
			return 0
		}
	}
	return 0
}

func appendEscaped(b *bytes.Buffer, p []byte, allowSGR bool) {
	for len(p) > 0 {
		if allowSGR && p[0] == 0x1b {
			if n := sgrLen(p); n > 0 {
				b.Write(p[:n])
				p = p[n:]
				continue
			}
		}
		r, size := utf8.DecodeRune(p)
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(b, `\x%02x`, p[0])
		case unsafeRune(r):
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.Write(p[:size])
		}
		p = p[size:]
	}
}

// Cell is String for one cell of a table (tabwriter columns): tabs and newlines are escaped too
// (`\t`, `\n`), so a recorded value can neither add columns or rows nor shift the alignment
// when the escaping happens after the widths are measured.
func Cell(s string) string {
	s = String(s)
	if strings.ContainsAny(s, "\t\n") {
		s = strings.NewReplacer("\t", `\t`, "\n", `\n`).Replace(s)
	}
	return s
}
