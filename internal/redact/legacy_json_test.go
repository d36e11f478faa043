// SPDX-License-Identifier: Apache-2.0

package redact

// The JSON walk and validator that RedactJSON used before it moved to jsonkit (jsontext), kept
// verbatim for the differential test (TestJSONWalkMatchesLegacy, FuzzJSONWalkMatchesLegacy) and the
// benchmark that compares the two (BenchmarkJSONWalk).

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// legacyRedactJSON is RedactJSON as it was.
func legacyRedactJSON(r *Redactor, s string) (out string, fs []Finding, ok bool) {
	if !LooksJSON(s) || !legacyValidJSON(s) {
		return s, nil, false
	}
	edits := legacyJSONEdits(r, s, 0)
	if len(edits) == 0 {
		return s, nil, true
	}
	var sb strings.Builder
	sb.Grow(len(s))
	prev := 0
	fs = make([]Finding, len(edits))
	for i, e := range edits {
		sb.WriteString(s[prev:e.start])
		sb.WriteString(e.repl)
		prev = e.end
		fs[i] = e.f
	}
	sb.WriteString(s[prev:])
	return sb.String(), fs, true
}

// jsonEdits returns the edits for valid JSON s, sorted and non-overlapping, with spans in s.
func legacyJSONEdits(r *Redactor, s string, depth int) []edit {
	var edits []edit
	var lastKey string
	var prevSig byte
	n := len(s)
	for i := 0; i < n; i++ {
		c := s[i]
		if c != '"' {
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				prevSig = c
			}
			continue
		}
		cs := i + 1
		j := cs
		esc := false
		for j < n && s[j] != '"' {
			if s[j] == '\\' {
				esc = true
				j++
			}
			j++
		}
		if j > n {
			j = n
		}
		raw := s[cs:j]
		i = j // closing quote
		k := j + 1
		for k < n && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n' || s[k] == '\r') {
			k++
		}
		isKey := k < n && s[k] == ':'
		dec, offs := raw, []int(nil)
		if esc {
			dec, offs = legacyDecodeJSONString(raw)
		}
		mapOff := func(d int) int {
			if offs == nil {
				return cs + d
			}
			return cs + offs[d]
		}
		if !isKey && prevSig == ':' {
			if f, ok := r.keyFinding(lastKey, dec); ok {
				f.Start, f.End = cs, j
				edits = append(edits, edit{start: cs, end: j, repl: jsonEscape(r.Token(f.Rule, f.Action, dec)), f: f})
				prevSig = '"'
				continue
			}
		}
		if isKey {
			lastKey = dec
		}
		prevSig = '"'
		// a JSON document inside a string leaf
		if !isKey && depth < maxJSONDepth {
			if LooksJSON(dec) && legacyValidJSON(dec) {
				for _, e := range legacyJSONEdits(r, dec, depth+1) {
					f := e.f
					f.Start, f.End = mapOff(e.start), mapOff(e.end)
					edits = append(edits, edit{start: f.Start, end: f.End, repl: jsonEscape(e.repl), f: f})
				}
				continue
			}
		}
		for _, f := range r.Find(dec) {
			repl := jsonEscape(r.Token(f.Rule, f.Action, dec[f.Start:f.End]))
			f.Start, f.End = mapOff(f.Start), mapOff(f.End)
			edits = append(edits, edit{start: f.Start, end: f.End, repl: repl, f: f})
		}
	}
	return edits
}

// decodeJSONString unescapes the content of a JSON string literal. offs[i] is the offset in raw
// of the escape or byte that produced decoded byte i; offs[len(dec)] == len(raw).
func legacyDecodeJSONString(raw string) (string, []int) {
	var sb strings.Builder
	sb.Grow(len(raw))
	offs := make([]int, 0, len(raw)+1)
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			sb.WriteByte(c)
			offs = append(offs, i)
			i++
			continue
		}
		start := i
		var b []byte
		switch raw[i+1] {
		case '"', '\\', '/':
			b = []byte{raw[i+1]}
			i += 2
		case 'b':
			b, i = []byte{'\b'}, i+2
		case 'f':
			b, i = []byte{'\f'}, i+2
		case 'n':
			b, i = []byte{'\n'}, i+2
		case 'r':
			b, i = []byte{'\r'}, i+2
		case 't':
			b, i = []byte{'\t'}, i+2
		case 'u':
			r1, ok := hex4(raw, i+2)
			if !ok {
				b, i = []byte{raw[i]}, i+1
				break
			}
			i += 6
			ru := rune(r1)
			if utf16.IsSurrogate(ru) {
				if r2, ok2 := hex4(raw, i+2); ok2 && i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if dec := utf16.DecodeRune(ru, rune(r2)); dec != utf8.RuneError {
						ru = dec
						i += 6
					} else {
						ru = utf8.RuneError
					}
				} else {
					ru = utf8.RuneError
				}
			}
			b = utf8.AppendRune(nil, ru)
		default:
			b, i = []byte{raw[i+1]}, i+2
		}
		for range b {
			offs = append(offs, start)
		}
		sb.Write(b)
	}
	offs = append(offs, len(raw))
	return sb.String(), offs
}

// legacyMaxNesting matches encoding/json's limit on nested objects and arrays.
const legacyMaxNesting = 10000

// legacyValidJSON reports whether s is one valid JSON value (RFC 8259), as encoding/json.Valid does,
// several times faster: the redactor checks every JSON-looking value before walking it.
func legacyValidJSON(s string) bool {
	i, ok := legacyJsonValue(s, legacyJsonWS(s, 0), 0)
	return ok && legacyJsonWS(s, i) == len(s)
}

func legacyJsonWS(s string, i int) int {
	for i < len(s) {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func legacyJsonValue(s string, i, depth int) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	switch c := s[i]; {
	case c == '"':
		return legacyJsonString(s, i)
	case c == '{':
		return legacyJsonObject(s, i, depth+1)
	case c == '[':
		return legacyJsonArray(s, i, depth+1)
	case c == 't':
		return legacyJsonLiteral(s, i, "true")
	case c == 'f':
		return legacyJsonLiteral(s, i, "false")
	case c == 'n':
		return legacyJsonLiteral(s, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return legacyJsonNumber(s, i)
	}
	return i, false
}

func legacyJsonLiteral(s string, i int, lit string) (int, bool) {
	if len(s)-i < len(lit) || s[i:i+len(lit)] != lit {
		return i, false
	}
	return i + len(lit), true
}

// legacyJsonString checks the string literal starting at s[i] == '"' and returns the index after it.
func legacyJsonString(s string, i int) (int, bool) {
	i++
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(s) {
				return i, false
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := hex4(s, i+2); !ok {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		default:
			i++
		}
	}
	return i, false
}

func legacyDigits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

func legacyJsonNumber(s string, i int) (int, bool) {
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = legacyDigits(s, i)
	default:
		return i, false
	}
	if i < len(s) && s[i] == '.' {
		j := legacyDigits(s, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := legacyDigits(s, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func legacyJsonObject(s string, i, depth int) (int, bool) {
	if depth > legacyMaxNesting {
		return i, false
	}
	i = legacyJsonWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return i, false
		}
		var ok bool
		if i, ok = legacyJsonString(s, i); !ok {
			return i, false
		}
		i = legacyJsonWS(s, i)
		if i >= len(s) || s[i] != ':' {
			return i, false
		}
		if i, ok = legacyJsonValue(s, legacyJsonWS(s, i+1), depth); !ok {
			return i, false
		}
		i = legacyJsonWS(s, i)
		if i >= len(s) {
			return i, false
		}
		switch s[i] {
		case ',':
			i = legacyJsonWS(s, i+1)
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

func legacyJsonArray(s string, i, depth int) (int, bool) {
	if depth > legacyMaxNesting {
		return i, false
	}
	i = legacyJsonWS(s, i+1)
	if i < len(s) && s[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = legacyJsonValue(s, i, depth); !ok {
			return i, false
		}
		i = legacyJsonWS(s, i)
		if i >= len(s) {
			return i, false
		}
		switch s[i] {
		case ',':
			i = legacyJsonWS(s, i+1)
		case ']':
			return i + 1, true
		default:
			return i, false
		}
	}
}
