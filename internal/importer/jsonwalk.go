// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// field is one JSON member value with its absolute byte offset in the file.
type field struct {
	raw json.RawMessage
	off int64
}

// isNull reports whether the field is absent or JSON null.
func (f field) isNull() bool {
	t := bytes.TrimSpace(f.raw)
	return len(t) == 0 || string(t) == "null"
}

// skipSep returns the offset of the next value at or after i, skipping JSON whitespace and the
// separators ':' and ','.
func skipSep(data []byte, i int64) int64 {
	for i < int64(len(data)) {
		switch data[i] {
		case ' ', '\t', '\r', '\n', ':', ',':
			i++
		default:
			return i
		}
	}
	return i
}

// objectAt decodes the JSON object starting at data[off:] into its members (in source order),
// each with its absolute offset. Duplicate keys keep the last value, as encoding/json does.
func objectAt(data []byte, off int64, what string) (keys []string, members map[string]field, err error) {
	dec := json.NewDecoder(bytes.NewReader(data[off:]))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, jsonError(data, off, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, errorAt(data, off, nil, "%s: expected a JSON object", what)
	}
	members = map[string]field{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, jsonError(data, off, err)
		}
		key, _ := tok.(string)
		voff := off + skipSep(data[off:], dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, jsonError(data, off, err)
		}
		if _, dup := members[key]; !dup {
			keys = append(keys, key)
		}
		members[key] = field{raw: raw, off: voff}
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, jsonError(data, off, err)
	}
	return keys, members, nil
}

// arrayAt decodes the JSON array starting at data[off:] into its elements with their offsets.
// JSON null is an empty array.
func arrayAt(data []byte, off int64, what string) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(data[off:]))
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonError(data, off, err)
	}
	if tok == nil {
		return nil, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, errorAt(data, off, nil, "%s: expected a JSON array", what)
	}
	var out []field
	for dec.More() {
		eoff := off + skipSep(data[off:], dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, jsonError(data, off, err)
		}
		out = append(out, field{raw: raw, off: eoff})
	}
	if _, err := dec.Token(); err != nil {
		return nil, jsonError(data, off, err)
	}
	return out, nil
}

// str decodes a JSON string member; null/absent gives ok=false. Other types are an error.
func str(data []byte, f field, what string) (s string, ok bool, err error) {
	if f.isNull() {
		return "", false, nil
	}
	if err := json.Unmarshal(f.raw, &s); err != nil {
		return "", false, errorAt(data, f.off, err, "%s: expected a string, got %s", what, snippet(f.raw))
	}
	return s, true, nil
}

// number decodes a JSON number member (or a string holding one) as json.Number.
func number(data []byte, f field, what string) (json.Number, bool, error) {
	if f.isNull() {
		return "", false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(f.raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", false, errorAt(data, f.off, err, "%s: %v", what, err)
	}
	switch n := v.(type) {
	case json.Number:
		return n, true, nil
	case string:
		return json.Number(strings.TrimSpace(n)), true, nil
	}
	return "", false, errorAt(data, f.off, nil, "%s: expected a number, got %s", what, snippet(f.raw))
}

func snippet(raw []byte) string {
	const max = 40
	s := string(bytes.TrimSpace(raw))
	if len(s) > max {
		s = s[:max] + "..."
	}
	return s
}

// putRaw stores the JSON value raw into dst keeping its type: string -> Str (exactly as
// decoded), integer -> Int, other number -> Double, bool -> Bool, array -> Slice,
// object -> Map (members in source order), null -> empty value.
func putRaw(raw []byte, dst pcommon.Value) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if err := putTok(dec, tok, dst); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after JSON value")
	}
	return nil
}

// putRawMap stores the members of the JSON object raw into dst (null is no member).
func putRawMap(raw []byte, dst pcommon.Map) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return nil
	}
	if t[0] != '{' {
		return errors.New("expected a JSON object, got " + snippet(t))
	}
	v := pcommon.NewValueEmpty()
	if err := putRaw(t, v); err != nil {
		return err
	}
	if dst.Len() == 0 {
		v.Map().MoveTo(dst)
		return nil
	}
	v.Map().Range(func(k string, val pcommon.Value) bool {
		val.CopyTo(dst.PutEmpty(k))
		return true
	})
	return nil
}

func putTok(dec *json.Decoder, tok json.Token, dst pcommon.Value) error {
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			m := dst.SetEmptyMap()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k, _ := kt.(string)
				vt, err := dec.Token()
				if err != nil {
					return err
				}
				if err := putTok(dec, vt, m.PutEmpty(k)); err != nil {
					return err
				}
			}
		case '[':
			s := dst.SetEmptySlice()
			for dec.More() {
				vt, err := dec.Token()
				if err != nil {
					return err
				}
				if err := putTok(dec, vt, s.AppendEmpty()); err != nil {
					return err
				}
			}
		default:
			return errors.New("unexpected " + v.String())
		}
		_, err := dec.Token() // closing delimiter
		return err
	case string:
		dst.SetStr(v)
	case json.Number:
		setNumber(dst, v)
	case bool:
		dst.SetBool(v)
	case nil:
		// JSON null: the value stays empty (pcommon.ValueTypeEmpty).
	}
	return nil
}

// setNumber stores n as Int when it is written as an integer that fits int64, else as Double.
func setNumber(dst pcommon.Value, n json.Number) {
	s := n.String()
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			dst.SetInt(i)
			return
		}
	}
	f, _ := strconv.ParseFloat(s, 64) // json.Number is valid JSON; out of range gives ±Inf
	dst.SetDouble(f)
}

// compactJSON returns raw without insignificant whitespace (string contents untouched); a JSON
// string is returned decoded instead, so a string value stays the same string.
func compactJSON(raw []byte) string {
	t := bytes.TrimSpace(raw)
	if len(t) > 0 && t[0] == '"' {
		var s string
		if json.Unmarshal(t, &s) == nil {
			return s
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, t) != nil {
		return string(t)
	}
	return buf.String()
}

// isEmptyJSON reports null, "", {} and [].
func isEmptyJSON(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	switch string(t) {
	case "", "null", `""`, "{}", "[]":
		return true
	}
	if len(t) >= 2 && (t[0] == '{' || t[0] == '[') {
		inner := bytes.TrimSpace(t[1 : len(t)-1])
		return len(inner) == 0
	}
	return false
}
