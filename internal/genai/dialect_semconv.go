// SPDX-License-Identifier: Apache-2.0

package genai

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// fromSemconvAttrs reads the semconv message attributes of m (a span's or an event's attributes).
// System instructions and tool definitions are set on cm when not set yet. nil means absent.
func fromSemconvAttrs(cm *CallMessages, m pcommon.Map, where string) (in, out []Message, err error) {
	var errs []error
	if cm.SystemInstructions == nil {
		if v, ok := m.Get(AttrSystemInstructions); ok {
			raw, err := valueJSON(v)
			switch {
			case err == nil:
				cm.SystemInstructions = partsFrom(raw)
			case v.Type() == pcommon.ValueTypeStr:
				// @opentelemetry/instrumentation-openai (Responses API) records the instructions
				// as plain text, not the JSON parts array of the conventions: one text part.
				cm.SystemInstructions = []Part{{Type: "text", Content: v.Str()}}
			default:
				errs = append(errs, fmt.Errorf("%s%s: %w", where, AttrSystemInstructions, err))
			}
		}
	}
	if cm.ToolDefinitions == nil {
		if v, ok := m.Get(AttrToolDefinitions); ok {
			raw, err := valueJSON(v)
			if err != nil {
				cm.ToolDefinitions = v.AsString() // kept as sent
			} else {
				cm.ToolDefinitions = raw
			}
		}
	}
	if v, ok := m.Get(AttrInputMessages); ok {
		raw, err := valueJSON(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s%s: %w", where, AttrInputMessages, err))
		} else {
			in = messagesFrom(raw, "user")
		}
	}
	if v, ok := m.Get(AttrOutputMessages); ok {
		raw, err := valueJSON(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s%s: %w", where, AttrOutputMessages, err))
		} else {
			out = messagesFrom(raw, "assistant")
		}
	}
	return in, out, errors.Join(errs...)
}

// fromSpanAttrs reads the semconv message attributes of the span.
func fromSpanAttrs(c *call) (in, out []Message, err error) {
	return fromSemconvAttrs(c.cm, c.attrs, "attribute ")
}
