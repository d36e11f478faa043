package redact

import (
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxJSONDepth bounds how many times a JSON document held in a JSON string leaf is itself
// walked as JSON (tool-call arguments are often JSON inside JSON).
const maxJSONDepth = 4

// edit replaces s[start:end] with repl.
type edit struct {
	start, end int
	repl       string
	f          Finding
}

// Redact redacts a value whose shape is not known: a JSON object or array is walked with
// RedactJSON, anything else is treated as text. Findings have spans in s.
func (r *Redactor) Redact(s string) (string, []Finding) {
	out, fs, _ := r.RedactValue("", s)
	return out, fs
}

// RedactKeyed is Redact for a value stored under key (an attribute key, a JSON object key, an
// HTTP header name). When the key names a credential (SensitiveKey: Authorization, Cookie,
// password, api_key, token, ...) the whole value is one finding unless it is a placeholder
// such as "Bearer test_openai_api_key".
func (r *Redactor) RedactKeyed(key, s string) (string, []Finding) {
	out, fs, _ := r.RedactValue(key, s)
	return out, fs
}

func (r *Redactor) keyFinding(key, v string) (Finding, bool) {
	name, weak, ok := sensitiveKey(key)
	if !ok || !r.keyRuleOn[name] || v == "" {
		return Finding{}, false
	}
	t := strings.TrimSpace(v)
	if t == "" || t[0] == '{' || t[0] == '[' || isBooleanOrNull(t) || isPlaceholder(stripScheme(t)) || (weak && !looksRandom(t)) {
		return Finding{}, false
	}
	ru := r.byName[name]
	return Finding{Rule: name, Category: ru.cat, Action: ru.action, Start: 0, End: len(v)}, true
}

// RedactJSON walks s as a JSON document: every object key and string leaf is examined (string
// leaves under credential keys as a whole, string leaves holding JSON recursively), and only the
// bytes of found values are replaced, at their offsets; all other bytes of s stay as they were, so
// valid JSON stays valid. ok is false, and s is returned unchanged, when s is not an object or
// array in valid JSON.
func (r *Redactor) RedactJSON(s string) (out string, fs []Finding, ok bool) {
	if !LooksJSON(s) || !validJSON(s) {
		return s, nil, false
	}
	edits := r.jsonEdits(s, 0)
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
func (r *Redactor) jsonEdits(s string, depth int) []edit {
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
			dec, offs = decodeJSONString(raw)
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
			if LooksJSON(dec) && validJSON(dec) {
				for _, e := range r.jsonEdits(dec, depth+1) {
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
func decodeJSONString(raw string) (string, []int) {
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

func hex4(s string, i int) (int, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	v := 0
	for k := i; k < i+4; k++ {
		c := s[k]
		switch {
		case c >= '0' && c <= '9':
			v = v*16 + int(c-'0')
		case c >= 'a' && c <= 'f':
			v = v*16 + int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v*16 + int(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// jsonEscape escapes s for the inside of a JSON string literal (tokens are plain ASCII, so this
// normally returns s).
func jsonEscape(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == '"' || s[i] == '\\' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// LooksJSON reports whether s, after leading white space, begins with { or [.
func LooksJSON(s string) bool {
	t := strings.TrimLeft(s, " \t\r\n")
	return t != "" && (t[0] == '{' || t[0] == '[')
}

// RedactValue is RedactKeyed that also reports whether s looked like JSON (LooksJSON) but did
// not parse; such a value is redacted as text.
func (r *Redactor) RedactValue(key, s string) (out string, fs []Finding, malformedJSON bool) {
	if f, ok := r.keyFinding(key, s); ok {
		f.End = len(s)
		return r.Token(f.Rule, f.Action, s), []Finding{f}, false
	}
	if LooksJSON(s) {
		if out, fs, ok := r.RedactJSON(s); ok {
			return out, fs, false
		}
		out, fs = r.RedactString(s)
		return out, fs, true
	}
	out, fs = r.RedactString(s)
	return out, fs, false
}
