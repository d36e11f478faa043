// SPDX-License-Identifier: Apache-2.0

package store

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// attrJSON writes the JSON object of a few attributes, byte for byte what json.Marshal writes for
// the map of their raw values (map[string]any of pcommon.Value.AsRaw: keys sorted, a repeated key
// keeping its last value, strings escaped as encoding/json escapes them, HTML characters
// included), without building the map or reflecting over it. Summarize writes one per span: the
// map and json.Marshal cost more than the rest of a summary. Values other than strings, integers
// and booleans (doubles, bytes, arrays, maps) go through json.Marshal, as before.
type attrJSON struct {
	kvs []attrKV
}

type attrKV struct {
	k string
	v pcommon.Value
}

// reset empties a for the next object, keeping its memory.
func (a *attrJSON) reset() { a.kvs = a.kvs[:0] }

// add sets key k to v (a repeated key keeps its last value, as a map does: text drops the
// earlier ones).
func (a *attrJSON) add(k string, v pcommon.Value) { a.kvs = append(a.kvs, attrKV{k, v}) }

// text returns the object's JSON text; with bound, string values are cut as bounded cuts them.
// A value json.Marshal refuses (a NaN or infinite double) makes the whole object "{}", as
// mustJSON did.
func (a *attrJSON) text(buf []byte, bound bool) (string, []byte) {
	// by key, a repeated key in the order added (stable: O(n log n), no allocation, insertion
	// sort for a handful of keys), then the last of each repeated key kept
	slices.SortStableFunc(a.kvs, func(x, y attrKV) int { return strings.Compare(x.k, y.k) })
	kvs := a.kvs[:0]
	for i, kv := range a.kvs {
		if i+1 < len(a.kvs) && a.kvs[i+1].k == kv.k {
			continue
		}
		kvs = append(kvs, kv)
	}
	a.kvs = kvs
	b := append(buf[:0], '{')
	for i, kv := range a.kvs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, kv.k)
		b = append(b, ':')
		var ok bool
		if b, ok = appendJSONValue(b, kv.v, bound); !ok {
			return "{}", b[:0]
		}
	}
	b = append(b, '}')
	return string(b), b
}

// appendJSONValue appends json.Marshal's text of v.AsRaw() (bounded when bound); false when
// json.Marshal fails on it.
func appendJSONValue(b []byte, v pcommon.Value, bound bool) ([]byte, bool) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		s := v.Str()
		if bound && len(s) > MaxEventValueBytes {
			s = bounded(s).(string)
		}
		return appendJSONString(b, s), true
	case pcommon.ValueTypeInt:
		return strconv.AppendInt(b, v.Int(), 10), true
	case pcommon.ValueTypeBool:
		return strconv.AppendBool(b, v.Bool()), true
	case pcommon.ValueTypeEmpty:
		return append(b, "null"...), true
	}
	raw := v.AsRaw()
	if bound {
		raw = bounded(raw)
	}
	t, err := json.Marshal(raw)
	if err != nil {
		return b, false
	}
	return append(b, t...), true
}

// jsonPlain marks the bytes json.Marshal writes as they are in a string: printable ASCII other
// than '"', '\\', '<', '>', '&'.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONString appends s as encoding/json quotes it: s as it is when it holds nothing
// json.Marshal escapes (jsonPlain), else json.Marshal's text.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !jsonPlain[s[i]] {
			t, _ := json.Marshal(s) // a string always marshals
			return append(b, t...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
