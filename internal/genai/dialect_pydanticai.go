// SPDX-License-Identifier: Apache-2.0

package genai

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Attributes of Pydantic AI's spans (exported through Logfire or plain OpenTelemetry).
const (
	AttrEventsJSON       = "events"       // Pydantic AI <= 0.2: the gen_ai.* event bodies as one JSON array
	AttrPydanticFinalRes = "final_result" // Pydantic AI agent run span: the run's final output
)

// fromEventsAttr reads the attribute "events" of Pydantic AI <= 0.2 (instrumented with event_mode
// "attributes", the default then): a JSON array of gen_ai.* event bodies, each naming its event
// in "event.name" (gen_ai.system.message, gen_ai.user.message, gen_ai.choice, ...), read as the
// span events of the same names are.
func fromEventsAttr(c *call) (in, out []Message, err error) {
	v, ok := c.attrs.Get(AttrEventsJSON)
	if !ok {
		return nil, nil, nil
	}
	raw, err := valueJSON(v)
	if err != nil {
		return nil, nil, fmt.Errorf("attribute %s: %w", AttrEventsJSON, err)
	}
	arr, ok := raw.([]any)
	if !ok {
		return nil, nil, nil
	}
	none := pcommon.NewMap()
	var errs []error
	var outs []indexed
	var haveIn, haveOut bool
	for i, e := range arr {
		body, ok := e.(map[string]any)
		if !ok {
			continue
		}
		name := str(body["event.name"])
		where := fmt.Sprintf("attribute %s[%d] (%s)", AttrEventsJSON, i, name)
		i2, o2, hi, ho, err := fromEvent(c.cm, name, body, none, where)
		errs = append(errs, err)
		in = append(in, i2...)
		for _, o := range o2 {
			outs = append(outs, indexed{choiceIndex(body), o})
		}
		haveIn, haveOut = haveIn || hi, haveOut || ho
	}
	return presentIf(haveIn, in), presentIf(haveOut, sortChoices(outs)), errors.Join(errs...)
}

// fromPydanticAllMessages reads pydantic_ai.all_messages (Pydantic AI >= 1.0, on an agent run
// span: the whole conversation, in the semconv parts model) as the input, and final_result as
// the output.
func fromPydanticAllMessages(c *call) (in, out []Message, err error) {
	v, ok := c.attrs.Get(AttrPydanticAllMessages)
	if !ok {
		return nil, nil, nil
	}
	raw, err := valueJSON(v)
	if err != nil {
		return nil, nil, fmt.Errorf("attribute %s: %w", AttrPydanticAllMessages, err)
	}
	in = messagesFrom(raw, "user")
	if r, ok := c.attrs.Get(AttrPydanticFinalRes); ok && r.AsString() != "" {
		out = []Message{{Role: "assistant", Parts: []Part{{Type: "text", Content: r.AsString()}}}}
	}
	return in, out, nil
}
