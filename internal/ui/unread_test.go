// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestPanelNamesUnreadAttribute: an LLM call whose input is held in a form no dialect reads is
// never shown as "0 messages": the panel names the attribute, links to it as recorded, and still
// shows the output it could read.
func TestPanelNamesUnreadAttribute(t *testing.T) {
	r := synthRun(9, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 3, "hi")
	sp := r.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(1)
	sp.Attributes().PutStr("gen_ai.input.messages", `[{"role": "user",`) // cut short: not JSON
	_, ts := newTestServer(t, r)
	code, body := get(t, ts.URL+"/runs/"+r.TraceID+"/spans/"+sp.SpanID().String()+"/panel")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `data-unread="input"`)
	assert.Contains(t, body, "Input not read: attribute")
	assert.Contains(t, body, `/spans/`+sp.SpanID().String()+`/attr?key=gen_ai.input.messages`)
	assert.Contains(t, body, "invalid JSON")
	out := body[strings.Index(body, `data-messages="output"`):]
	assert.Contains(t, out, "\nok</pre>", "the output read is still shown")
	assert.Contains(t, body, `<details class="recorded" open>`, "the input as recorded is opened")
}
