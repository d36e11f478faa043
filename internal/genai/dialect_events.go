// SPDX-License-Identifier: Apache-2.0

package genai

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// eventBody returns the body of a span event: its gen_ai.event.content JSON if present, else its
// attributes as a map.
func eventBody(attrs pcommon.Map, where string) (any, error) {
	if v, ok := attrs.Get(AttrEventContent); ok {
		raw, err := valueJSON(v)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", where, AttrEventContent, err)
		}
		return raw, nil
	}
	return attrs.AsRaw(), nil
}

// fromEvent reads one message event (span event or log record). hasIn/hasOut tell whether the
// event is a message form at all (an event with an empty body still counts: the client chose
// this form).
func fromEvent(cm *CallMessages, name string, body any, attrs pcommon.Map, where string) (in, out []Message, hasIn, hasOut bool, err error) {
	if role, ok := eventRoles[name]; ok {
		m, _ := body.(map[string]any)
		if m == nil {
			m = map[string]any{}
			if s, ok := body.(string); ok {
				m["content"] = s
			}
		}
		return []Message{messageFromMap(m, role)}, nil, true, false, nil
	}
	switch name {
	case EventChoice:
		m, _ := body.(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		msg := map[string]any{}
		if mm, ok := m["message"].(map[string]any); ok {
			msg = mm
		}
		out := messageFromMap(msg, "assistant")
		if fr, ok := m["finish_reason"].(string); ok {
			out.FinishReason = fr
		}
		return nil, []Message{out}, false, true, nil
	case EventInferenceDetails:
		i, o, err := fromSemconvAttrs(cm, attrs, where+" attribute ")
		return i, o, i != nil, o != nil, err
	case EventLegacyPrompt, EventLegacyCompletion:
		key := AttrLegacyPrompt
		def := "user"
		if name == EventLegacyCompletion {
			key, def = AttrLegacyCompletion, "assistant"
		}
		v, ok := attrs.Get(key)
		if !ok {
			return nil, nil, false, false, nil
		}
		raw, err := valueJSON(v)
		if err != nil {
			return nil, nil, false, false, fmt.Errorf("%s %s: %w", where, key, err)
		}
		msgs := messagesFrom(raw, def)
		if name == EventLegacyPrompt {
			return msgs, nil, true, false, nil
		}
		return nil, msgs, false, true, nil
	}
	return nil, nil, false, false, nil
}

// choiceIndex returns the index of a gen_ai.choice body, -1 if none.
func choiceIndex(body any) int {
	if m, ok := body.(map[string]any); ok {
		if n, ok := toInt(m["index"]); ok {
			return n
		}
	}
	return -1
}

// indexed is an output message with its choice index, for ordering choices.
type indexed struct {
	idx int
	msg Message
}

// sortChoices orders choices by their index when every choice has one, else keeps their order.
func sortChoices(cs []indexed) []Message {
	all := true
	for _, c := range cs {
		all = all && c.idx >= 0
	}
	if all {
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].idx < cs[j].idx })
	}
	out := make([]Message, len(cs))
	for i, c := range cs {
		out[i] = c.msg
	}
	return out
}

// fromSpanEvents reads the span events named gen_ai.{system,user,assistant,tool}.message and
// gen_ai.choice (semconv 1.28-1.36; the body is the event's attributes, or its
// gen_ai.event.content JSON), and the events gen_ai.client.inference.operation.details /
// gen_ai.content.prompt|completion.
func fromSpanEvents(c *call) (in, out []Message, err error) {
	var errs []error
	var evOut []indexed
	var haveIn, haveOut bool
	for i := 0; i < c.span.Events().Len(); i++ {
		ev := c.span.Events().At(i)
		where := fmt.Sprintf("span event %d (%s)", i, ev.Name())
		if err := unresolvedRef(where, ev.Attributes()); err != nil {
			errs = append(errs, err)
			continue
		}
		body, err := eventBody(ev.Attributes(), where)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		i2, o2, hi, ho, err := fromEvent(c.cm, ev.Name(), body, ev.Attributes(), where)
		errs = append(errs, err)
		in = append(in, i2...)
		for _, o := range o2 {
			evOut = append(evOut, indexed{choiceIndex(body), o})
		}
		haveIn, haveOut = haveIn || hi, haveOut || ho
	}
	return presentIf(haveIn, in), presentIf(haveOut, sortChoices(evOut)), errors.Join(errs...)
}

// fromLogRecords reads log records with the event names fromSpanEvents reads (LogRecord.EventName
// or attribute event.name), bodies as sent: the official OpenAI instrumentations
// (@opentelemetry/instrumentation-openai, opentelemetry-instrumentation-openai-v2) send these.
func fromLogRecords(c *call) (in, out []Message, err error) {
	var errs []error
	var lOut []indexed
	var haveIn, haveOut bool
	for i, lr := range c.logs {
		name := lr.EventName()
		if name == "" {
			if v, ok := lr.Attributes().Get(AttrEventName); ok {
				name = v.AsString()
			}
		}
		where := fmt.Sprintf("log record %d (%s)", i, name)
		if err := unresolvedRef(where+" attribute", lr.Attributes()); err != nil {
			errs = append(errs, err)
			continue
		}
		var body any
		switch lr.Body().Type() {
		case pcommon.ValueTypeMap:
			if err := unresolvedRef(where+" body", lr.Body().Map()); err != nil {
				errs = append(errs, err)
				continue
			}
			body = lr.Body().Map().AsRaw()
		case pcommon.ValueTypeStr:
			s := lr.Body().Str()
			if strings.TrimSpace(s) != "" {
				v, err := decodeJSON(s)
				if err != nil {
					if _, known := eventRoles[name]; known || name == EventChoice {
						errs = append(errs, fmt.Errorf("%s body: %w", where, err))
					}
					continue
				}
				body = v
			}
		case pcommon.ValueTypeEmpty:
		default:
			body = lr.Body().AsRaw()
		}
		i2, o2, hi, ho, err := fromEvent(c.cm, name, body, lr.Attributes(), where)
		errs = append(errs, err)
		in = append(in, i2...)
		for _, o := range o2 {
			lOut = append(lOut, indexed{choiceIndex(body), o})
		}
		haveIn, haveOut = haveIn || hi, haveOut || ho
	}
	return presentIf(haveIn, in), presentIf(haveOut, sortChoices(lOut)), errors.Join(errs...)
}

// presentIf returns msgs (never nil) when the form is present, nil when it is absent.
func presentIf(present bool, msgs []Message) []Message {
	if !present {
		return nil
	}
	if msgs == nil {
		msgs = []Message{}
	}
	return msgs
}
