// SPDX-License-Identifier: Apache-2.0

package patterns

import (
	"encoding/json"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// TestSummarySignalAgreesWithSpanSignal: the warm writers' check over a summary's attributes
// JSON (json.Marshal of the raw values, as store.Summarize writes it) says what SpanSignal says
// over the span's attributes, also where another attribute's text holds a finish reason or the
// key's own text.
func TestSummarySignalAgreesWithSpanSignal(t *testing.T) {
	cases := []struct {
		name  string
		attrs map[string]any
		want  bool
	}{
		{"no attributes", map[string]any{}, false},
		{"stop", map[string]any{"gen_ai.response.finish_reasons": []any{"stop"}}, false},
		{"length", map[string]any{"gen_ai.response.finish_reasons": []any{"stop", "length"}}, true},
		{"string value", map[string]any{"gen_ai.response.finish_reasons": "content_filter"}, true},
		{"gemini", map[string]any{"gen_ai.response.finish_reasons": []any{"MAX_TOKENS"}}, true},
		{"reason named elsewhere", map[string]any{
			"gen_ai.response.finish_reasons": []any{"stop"},
			"gen_ai.prompt":                  `say "length" and "refusal"`,
		}, false},
		{"reason as another attribute's value", map[string]any{
			"gen_ai.response.finish_reasons": []any{"stop"},
			"app.truncation":                 "length",
		}, false},
		{"key text inside a value", map[string]any{
			"a.note":                         `"gen_ai.response.finish_reasons":["length"]`,
			"gen_ai.response.finish_reasons": []any{"stop"},
		}, false},
		{"key text inside a value, no key", map[string]any{"a.note": `"gen_ai.response.finish_reasons":["length"]`}, false},
		{"status 200", map[string]any{"http.response.status_code": int64(200)}, false},
		{"status 429", map[string]any{"http.response.status_code": int64(429)}, true},
		{"status 503 and stop", map[string]any{"http.response.status_code": int64(503), "gen_ai.response.finish_reasons": []any{"stop"}}, true},
		{"status as a string", map[string]any{"http.response.status_code": "500"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := pcommon.NewMap()
			if err := m.FromRaw(c.attrs); err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(m.AsRaw())
			if err != nil {
				t.Fatal(err)
			}
			if got := SpanSignal(m); got != c.want {
				t.Fatalf("SpanSignal = %v, want %v", got, c.want)
			}
			if got := SummarySignal(string(b)); got != c.want {
				t.Fatalf("SummarySignal(%s) = %v, want %v", b, got, c.want)
			}
		})
	}
}

// TestReasonSignalAsJSONDecodes: reasonSignal (gjson) reads a finish-reasons value text as
// encoding/json's decode into a string or []string did: a failing reason, or a value neither
// decodes (a signal), escaped reasons included.
func TestReasonSignalAsJSONDecodes(t *testing.T) {
	decoded := func(v string) bool {
		var reasons []string
		if len(v) > 0 && v[0] == '"' {
			var r string
			if json.Unmarshal([]byte(v), &r) != nil {
				return true
			}
			reasons = []string{r}
		} else if json.Unmarshal([]byte(v), &reasons) != nil {
			return true
		}
		for _, r := range reasons {
			if _, ok := finishReasons[r]; ok {
				return true
			}
		}
		return false
	}
	for _, v := range []string{
		`["stop"]`, `["length"]`, `"length"`, `"stop"`, `null`, `[]`, `[1]`, `{"a":1}`, `[`, `"`,
		`["stop",null]`, `[null,"length"]`, `true`, `12`, `"\u006cength"`, `["st\"op"]`,
		`[ "stop" , "MAX_TOKENS" ]`, `["stop"`, `[["length"]]`, ``,
	} {
		if got, want := reasonSignal(v), decoded(v); got != want {
			t.Errorf("reasonSignal(%s) = %v, encoding/json %v", v, got, want)
		}
	}
}
