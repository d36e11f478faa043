// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"bytes"
	"encoding/json"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// prettyJSON indents a value that is a JSON object or array, keys in their recorded order
// (encoding/json.Indent rewrites whitespace only); ok is false for anything else, which is shown
// as recorded.
func prettyJSON(s string) (string, bool) {
	t := strings.TrimSpace(s)
	if len(t) < 2 || (t[0] != '{' && t[0] != '[') || !json.Valid([]byte(t)) {
		return "", false
	}
	var b bytes.Buffer
	if json.Indent(&b, []byte(t), "", "  ") != nil {
		return "", false
	}
	return b.String(), true
}

// exceptionView is an exception recorded on a span (the semantic conventions' "exception"
// event: exception.type, exception.message, exception.stacktrace).
type exceptionView struct {
	Type, Message, Stacktrace string
	At                        float64
}

func exceptionsOf(sp ptrace.Span, start float64) []exceptionView {
	var out []exceptionView
	for j := 0; j < sp.Events().Len(); j++ {
		ev := sp.Events().At(j)
		if ev.Name() != "exception" {
			continue
		}
		get := func(k string) string {
			if v, ok := ev.Attributes().Get(k); ok {
				return v.AsString()
			}
			return ""
		}
		out = append(out, exceptionView{Type: get("exception.type"), Message: get("exception.message"),
			Stacktrace: get("exception.stacktrace"), At: start})
	}
	return out
}

// safeName keeps the letters, digits, dots, dashes and underscores of a key for a file name.
func safeName(k string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, k)
}
