// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// srcSpan is one span as the source file records it, parsed here independently of
// internal/importer so the test checks the importer rather than repeating it.
type srcSpan struct {
	File, TraceID, SpanID, ParentID, Name string
	Attrs                                 map[string]any // JSON values, numbers as json.Number
}

func decodeJSON(tb testing.TB, data []byte, v any) {
	tb.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		tb.Fatalf("decode: %v", err)
	}
}

// langfuseSpans reads a Langfuse trace export: the OTel attributes sit in each observation's
// metadata (a JSON string or object) under "attributes".
func langfuseSpans(tb testing.TB, path string) []srcSpan {
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var doc struct {
		Trace        struct{ ID string } `json:"trace"`
		Observations []struct {
			ID                  string  `json:"id"`
			TraceID             string  `json:"traceId"`
			ParentObservationID *string `json:"parentObservationId"`
			Name                string  `json:"name"`
			Metadata            any     `json:"metadata"`
		} `json:"observations"`
	}
	decodeJSON(tb, data, &doc)
	var out []srcSpan
	for _, o := range doc.Observations {
		s := srcSpan{File: filepath.Base(path), TraceID: o.TraceID, SpanID: o.ID, Name: o.Name, Attrs: map[string]any{}}
		if s.TraceID == "" {
			s.TraceID = doc.Trace.ID
		}
		if o.ParentObservationID != nil {
			s.ParentID = *o.ParentObservationID
		}
		var md map[string]any
		switch m := o.Metadata.(type) {
		case string:
			decodeJSON(tb, []byte(m), &md)
		case map[string]any:
			md = m
		}
		if a, ok := md["attributes"].(map[string]any); ok {
			s.Attrs = a
		}
		out = append(out, s)
	}
	return out
}

// anyAgentSpans reads an any-agent trace: OTel span dicts with decimal integer ids.
func anyAgentSpans(tb testing.TB, path string) []srcSpan {
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var doc struct {
		Spans []struct {
			Name    string `json:"name"`
			Context struct {
				TraceID json.Number `json:"trace_id"`
				SpanID  json.Number `json:"span_id"`
			} `json:"context"`
			Parent *struct {
				SpanID json.Number `json:"span_id"`
			} `json:"parent"`
			Attributes map[string]any `json:"attributes"`
		} `json:"spans"`
	}
	decodeJSON(tb, data, &doc)
	var out []srcSpan
	for _, sp := range doc.Spans {
		s := srcSpan{File: filepath.Base(path), Name: sp.Name, Attrs: sp.Attributes,
			TraceID: decHex(tb, sp.Context.TraceID, 32), SpanID: decHex(tb, sp.Context.SpanID, 16)}
		if sp.Parent != nil && sp.Parent.SpanID != "" {
			s.ParentID = decHex(tb, sp.Parent.SpanID, 16)
		}
		if s.Attrs == nil {
			s.Attrs = map[string]any{}
		}
		out = append(out, s)
	}
	return out
}

func decHex(tb testing.TB, n json.Number, width int) string {
	b, ok := new(big.Int).SetString(string(n), 10)
	if !ok {
		tb.Fatalf("not a decimal id: %s", n)
	}
	return fmt.Sprintf("%0*x", width, b)
}

// sameValue reports how v (stored, OTLP-typed) differs from the source JSON value want; "" if equal.
// Strings must match byte for byte; integers stay Int, other numbers Double.
func sameValue(want any, v pcommon.Value) string {
	switch w := want.(type) {
	case string:
		if v.Type() != pcommon.ValueTypeStr {
			return fmt.Sprintf("type %s, want string", v.Type())
		}
		if v.Str() != w {
			return fmt.Sprintf("string differs (len %d, want %d)", len(v.Str()), len(w))
		}
	case json.Number:
		if !strings.ContainsAny(string(w), ".eE") {
			i, _ := w.Int64()
			if v.Type() != pcommon.ValueTypeInt || v.Int() != i {
				return fmt.Sprintf("got %s %v, want int %s", v.Type(), v.AsRaw(), w)
			}
			return ""
		}
		f, _ := strconv.ParseFloat(string(w), 64)
		if v.Type() != pcommon.ValueTypeDouble || v.Double() != f {
			return fmt.Sprintf("got %s %v, want double %s", v.Type(), v.AsRaw(), w)
		}
	case bool:
		if v.Type() != pcommon.ValueTypeBool || v.Bool() != w {
			return fmt.Sprintf("got %s %v, want bool %v", v.Type(), v.AsRaw(), w)
		}
	case nil:
		if v.Type() != pcommon.ValueTypeEmpty {
			return fmt.Sprintf("got %s, want empty (null)", v.Type())
		}
	case []any:
		if v.Type() != pcommon.ValueTypeSlice || v.Slice().Len() != len(w) {
			return fmt.Sprintf("got %s, want array of %d", v.Type(), len(w))
		}
		for i := range w {
			if d := sameValue(w[i], v.Slice().At(i)); d != "" {
				return fmt.Sprintf("[%d]: %s", i, d)
			}
		}
	case map[string]any:
		if v.Type() != pcommon.ValueTypeMap || v.Map().Len() != len(w) {
			return fmt.Sprintf("got %s, want object of %d keys", v.Type(), len(w))
		}
		for k, wv := range w {
			gv, ok := v.Map().Get(k)
			if !ok {
				return fmt.Sprintf("key %q missing", k)
			}
			if d := sameValue(wv, gv); d != "" {
				return fmt.Sprintf("%s: %s", k, d)
			}
		}
	default:
		return fmt.Sprintf("unexpected source type %T", want)
	}
	return ""
}
