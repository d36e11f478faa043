// SPDX-License-Identifier: Apache-2.0

// Package pyjson writes JSON byte for byte as Python's json.dumps does with its defaults
// (separators ", " and ": ", ensure_ascii=True, floats in repr form, NaN and Infinity allowed),
// for a YAML document read as PyYAML's yaml.safe_load reads it (YAML 1.1 plain-scalar
// resolution: yes/no/on/off are booleans, "1_000" is an integer, ".5" a float).
//
// The importer needs these bytes to rebuild a request or response body that pydantic-ai's VCR
// serializer stored as decoded YAML (`parsed_body`): pydantic-ai's deserializer replays
// json.dumps(yaml.safe_load(...)), so only the same bytes match a live request.
//
// No Go library does this, as of 2026-11. encoding/json and github.com/go-json-experiment/json
// (jsontext) write non-ASCII text as UTF-8 and have no ensure_ascii option, write no space after
// the separators, format numbers otherwise (encoding/json: 10000000000000000, 2, 1e-7 and
// 1000000 where Python writes 1e+16, 2.0, 1e-07 and 1000000.0) and reject NaN and Infinity;
// encoding/json also escapes < > &. go.yaml.in/yaml/v3 resolves scalars by YAML 1.2's core
// schema (yes/no/on/off stay strings). A Python interpreter in Go would be a large dependency for
// one function. So the encoder is written here, after CPython's Lib/json/encoder.py and its
// float repr (Python/pystrtod.c, float_repr_style "short"), and tested against
// outputs of CPython 3 with PyYAML 6.
package pyjson

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"

	yaml "go.yaml.in/yaml/v3"
)

// PyYAML 1.1 plain-scalar resolution (the loader pydantic-ai's deserializer uses).
var (
	reFloat = regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	reInt   = regexp.MustCompile(`^[-+]?(?:0|[1-9][0-9_]*)$`)
)

// Dumps encodes a YAML node as Python's json.dumps(yaml.safe_load(...)) would:
// separators ", " and ": ", ensure_ascii, floats in repr form, keys in document order.
func Dumps(n *yaml.Node) []byte {
	var b bytes.Buffer
	dump(&b, n, 0)
	return b.Bytes()
}

func dump(b *bytes.Buffer, n *yaml.Node, depth int) {
	if n.Kind == yaml.AliasNode && n.Alias != nil && depth < 64 {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) > 0 {
			dump(b, n.Content[0], depth+1)
			return
		}
		b.WriteString("null")
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteString(", ")
			}
			writeString(b, key(n.Content[i]))
			b.WriteString(": ")
			dump(b, n.Content[i+1], depth+1)
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, e := range n.Content {
			if i > 0 {
				b.WriteString(", ")
			}
			dump(b, e, depth+1)
		}
		b.WriteByte(']')
	default:
		scalar(b, n)
	}
}

// key is the string json.dumps writes for a mapping key.
func key(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode || n.Style != 0 {
		return n.Value
	}
	var b bytes.Buffer
	scalar(&b, n)
	s := b.String()
	if strings.HasPrefix(s, `"`) {
		return n.Value
	}
	return s
}

func scalar(b *bytes.Buffer, n *yaml.Node) {
	v := n.Value
	if n.Tag == "!!binary" {
		writeString(b, string(binary(n.Value)))
		return
	}
	if n.Style != 0 { // quoted, literal, folded or explicitly tagged: a string
		writeString(b, v)
		return
	}
	switch {
	case v == "" || v == "~" || v == "null" || v == "Null" || v == "NULL":
		b.WriteString("null")
	case v == "true" || v == "True" || v == "TRUE" || v == "yes" || v == "Yes" || v == "YES" || v == "on" || v == "On" || v == "ON":
		b.WriteString("true")
	case v == "false" || v == "False" || v == "FALSE" || v == "no" || v == "No" || v == "NO" || v == "off" || v == "Off" || v == "OFF":
		b.WriteString("false")
	case reInt.MatchString(v):
		s := strings.ReplaceAll(v, "_", "")
		s = strings.TrimPrefix(s, "+")
		b.WriteString(s)
	case reFloat.MatchString(v):
		lv := strings.ToLower(v)
		switch {
		case strings.HasSuffix(lv, ".inf"):
			if strings.HasPrefix(lv, "-") {
				b.WriteString("-Infinity")
			} else {
				b.WriteString("Infinity")
			}
		case lv == ".nan":
			b.WriteString("NaN")
		default:
			f, err := strconv.ParseFloat(strings.ReplaceAll(v, "_", ""), 64)
			if err != nil {
				writeString(b, v)
				return
			}
			b.WriteString(FloatRepr(f))
		}
	default:
		writeString(b, v)
	}
}

// FloatRepr formats f as Python's repr(float): the shortest round-tripping digits, fixed
// notation for decimal exponents -4 <= e < 16 (always with a fractional part), else d.ddde±XX.
func FloatRepr(f float64) string {
	if math.IsInf(f, 1) {
		return "Infinity"
	}
	if math.IsInf(f, -1) {
		return "-Infinity"
	}
	if math.IsNaN(f) {
		return "NaN"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // e.g. -1.2345e+06
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, expS, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(expS)
	digits := strings.Replace(mant, ".", "", 1)
	var out string
	if exp >= -4 && exp < 16 {
		if exp >= 0 {
			if len(digits) <= exp+1 {
				out = digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
			} else {
				out = digits[:exp+1] + "." + digits[exp+1:]
			}
		} else {
			out = "0." + strings.Repeat("0", -exp-1) + digits
		}
	} else {
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		out = fmt.Sprintf("%se%s%02d", mant, sign, exp)
	}
	if neg {
		out = "-" + out
	}
	return out
}

// writeString writes s as a JSON string with ensure_ascii (every byte outside space..~ escaped).
func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r >= 0x20 && r <= 0x7e {
				b.WriteRune(r)
			} else if r > 0xffff {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(b, `\u%04x`, r)
			}
		}
	}
	b.WriteByte('"')
}

// binary decodes a !!binary scalar (base64, whitespace ignored); text that is not base64 gives
// no bytes, as the importer reads it.
func binary(v string) []byte {
	clean := strings.Map(func(r rune) rune {
		if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
			return -1
		}
		return r
	}, v)
	b, err := base64.StdEncoding.DecodeString(clean)
	if err != nil {
		return nil
	}
	return b
}
