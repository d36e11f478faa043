// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// TestRecordsBoxListsRecordsNotMessages: the official OpenAI instrumentations log each call's
// messages as gen_ai.* log records; those belong to the call (its panel shows them), so "Records
// pointing at this run" lists the alert but none of them (a new user counted 10 such rows above
// the timeline).
func TestRecordsBoxListsRecordsNotMessages(t *testing.T) {
	r := synthRun(7, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 4, "hello")
	llm := r.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(1) // "chat gpt-4o"
	require.Equal(t, "chat gpt-4o", llm.Name())
	lrs := r.Logs.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for _, name := range []string{"gen_ai.user.message", "gen_ai.choice"} {
		lr := lrs.AppendEmpty()
		lr.SetEventName(name)
		lr.SetTraceID(llm.TraceID())
		lr.SetSpanID(llm.SpanID())
		lr.SetTimestamp(llm.StartTimestamp())
	}
	alert := lrs.AppendEmpty()
	alert.SetEventName(eventAlert)
	alert.SetTraceID(llm.TraceID())
	alert.SetSpanID(llm.SpanID())
	alert.Attributes().PutStr("alert.kind", "loop")
	alert.Body().SetStr("the same tool call 3 times")
	alert.SetTimestamp(pcommon.NewTimestampFromTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	_, ts := newTestServer(t, r)
	code, body := get(t, ts.URL+"/runs/"+r.TraceID)
	require.Equal(t, http.StatusOK, code)
	i := strings.Index(body, "Records pointing at this run")
	require.Positive(t, i, "the alert is listed")
	box := body[i:]
	box = box[:strings.Index(box, "</section>")]
	assert.Contains(t, box, "the same tool call 3 times")
	assert.NotContains(t, box, "gen_ai.user.message")
	assert.NotContains(t, box, "gen_ai.choice")
}
