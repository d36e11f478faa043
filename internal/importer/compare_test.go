// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// decodeAny decodes JSON with encoding/json into map/slice/json.Number values: an independent
// reading of the source to compare the importer's pdata values against.
func decodeAny(t testing.TB, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", snippet(raw), err)
	}
	return v
}

// valueDiff returns "" when got holds exactly want (decoded by encoding/json with UseNumber):
// strings byte for byte, integer literals as Int, other numbers as Double, bools, arrays as
// Slice, objects as Map with the same keys, null as Empty.
func valueDiff(path string, want any, got pcommon.Value) string {
	switch w := want.(type) {
	case string:
		if got.Type() != pcommon.ValueTypeStr {
			return fmt.Sprintf("%s: want string, got %s", path, got.Type())
		}
		if got.Str() != w {
			return fmt.Sprintf("%s: string differs (len %d vs %d)", path, len(got.Str()), len(w))
		}
	case json.Number:
		s := w.String()
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				if got.Type() != pcommon.ValueTypeInt || got.Int() != i {
					return fmt.Sprintf("%s: want Int %d, got %s %s", path, i, got.Type(), got.AsString())
				}
				return ""
			}
		}
		f, _ := strconv.ParseFloat(s, 64)
		if got.Type() != pcommon.ValueTypeDouble || got.Double() != f {
			return fmt.Sprintf("%s: want Double %v, got %s %s", path, f, got.Type(), got.AsString())
		}
	case bool:
		if got.Type() != pcommon.ValueTypeBool || got.Bool() != w {
			return fmt.Sprintf("%s: want Bool %v, got %s %s", path, w, got.Type(), got.AsString())
		}
	case nil:
		if got.Type() != pcommon.ValueTypeEmpty {
			return fmt.Sprintf("%s: want Empty, got %s", path, got.Type())
		}
	case []any:
		if got.Type() != pcommon.ValueTypeSlice || got.Slice().Len() != len(w) {
			return fmt.Sprintf("%s: want Slice of %d, got %s", path, len(w), got.Type())
		}
		for i, e := range w {
			if d := valueDiff(fmt.Sprintf("%s[%d]", path, i), e, got.Slice().At(i)); d != "" {
				return d
			}
		}
	case map[string]any:
		if got.Type() != pcommon.ValueTypeMap {
			return fmt.Sprintf("%s: want Map, got %s", path, got.Type())
		}
		return mapDiff(path, w, got.Map(), true)
	default:
		return fmt.Sprintf("%s: unexpected source type %T", path, want)
	}
	return ""
}

// mapDiff compares every key of want; exact also requires got to have no other keys.
func mapDiff(path string, want map[string]any, got pcommon.Map, exact bool) string {
	for k, w := range want {
		g, ok := got.Get(k)
		if !ok {
			return fmt.Sprintf("%s.%s: missing", path, k)
		}
		if d := valueDiff(path+"."+k, w, g); d != "" {
			return d
		}
	}
	if exact && got.Len() != len(want) {
		return fmt.Sprintf("%s: %d keys, want %d", path, got.Len(), len(want))
	}
	return ""
}

// spanRef is a span with its resource and scope.
type spanRef struct {
	span  ptrace.Span
	res   pcommon.Resource
	scope pcommon.InstrumentationScope
	rs    ptrace.ResourceSpans
}

// spansByID indexes the spans of td by span id (hex).
func spansByID(t testing.TB, td ptrace.Traces) map[string]spanRef {
	t.Helper()
	out := map[string]spanRef{}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				sp := ss.Spans().At(k)
				id := sp.SpanID().String()
				if _, dup := out[id]; dup {
					t.Fatalf("duplicate span id %s", id)
				}
				out[id] = spanRef{span: sp, res: rs.Resource(), scope: ss.Scope(), rs: rs}
			}
		}
	}
	return out
}
