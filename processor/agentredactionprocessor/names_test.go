// SPDX-License-Identifier: Apache-2.0

package agentredactionprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
)

// TestNamesScopesAndMapBodiesRedacted: span names, span event names, status messages, scope
// attributes, log event names and Map log bodies (nested) go through the same rules as
// attributes; the redaction count says how many findings each got.
func TestNamesScopesAndMapBodiesRedacted(t *testing.T) {
	const email = "jane.doe@example.com"
	cfg := createDefaultConfig().(*Config)
	cfg.HashKey = "0123456789abcdef0123456789abcdef"
	set := processortest.NewNopSettings(NewFactory().Type())

	ts := new(consumertest.TracesSink)
	tp, err := NewFactory().CreateTraces(context.Background(), set, cfg, ts)
	require.NoError(t, err)
	require.NoError(t, tp.Start(context.Background(), componenttest.NewNopHost()))
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	ss.Scope().SetName("agent")
	ss.Scope().Attributes().PutStr("owner", "contact "+email)
	sp := ss.Spans().AppendEmpty()
	sp.SetName("chat for " + email)
	setIDs(ss.Spans())
	sp.Status().SetMessage("refused for " + email)
	sp.Events().AppendEmpty().SetName("notified " + email)
	require.NoError(t, tp.ConsumeTraces(context.Background(), td))
	require.NoError(t, tp.Shutdown(context.Background()))
	out := ts.AllTraces()[0].ResourceSpans().At(0).ScopeSpans().At(0)
	got := out.Spans().At(0)
	assert.NotContains(t, got.Name(), email)
	assert.Contains(t, got.Name(), "chat for ")
	assert.NotContains(t, got.Events().At(0).Name(), email)
	assert.NotContains(t, got.Status().Message(), email)
	owner, _ := out.Scope().Attributes().Get("owner")
	assert.NotContains(t, owner.Str(), email)
	n, _ := got.Attributes().Get(CountAttribute)
	assert.Equal(t, int64(3), n.Int(), "name, event name, status message")
	sn, _ := out.Scope().Attributes().Get(CountAttribute)
	assert.Equal(t, int64(1), sn.Int())

	ls := new(consumertest.LogsSink)
	lp, err := NewFactory().CreateLogs(context.Background(), set, cfg, ls)
	require.NoError(t, err)
	require.NoError(t, lp.Start(context.Background(), componenttest.NewNopHost()))
	ld := plog.NewLogs()
	lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetEventName("gen_ai.user.message")
	require.NoError(t, lr.Body().SetEmptyMap().FromRaw(map[string]any{
		"content": "mail me at " + email, "tool_calls": []any{map[string]any{"function": map[string]any{"arguments": `{"to":"` + email + `"}`}}}}))
	require.NoError(t, lp.ConsumeLogs(context.Background(), ld))
	require.NoError(t, lp.Shutdown(context.Background()))
	olr := ls.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	body, _ := olr.Body().Map().Get("content")
	assert.NotContains(t, body.Str(), email)
	assert.NotContains(t, olr.Body().AsString(), email, "nested JSON in a Map body")
	assert.Equal(t, "gen_ai.user.message", olr.EventName())
	ln, _ := olr.Attributes().Get(CountAttribute)
	assert.Equal(t, int64(2), ln.Int())
}
