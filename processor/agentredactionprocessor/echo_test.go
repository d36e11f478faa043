// SPDX-License-Identifier: Apache-2.0

package agentredactionprocessor

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/runagain/runagain/internal/redact"
	"github.com/runagain/runagain/internal/seal"
	"github.com/runagain/runagain/processor/agentredactionprocessor/internal/metadatatest"
)

// echoSecret is given to the agent under a credential key and repeated by it without one.
const echoSecret = "Zq8vN2pLm4Rt"

var (
	echoTrace = pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	otherTr   = pcommon.TraceID{16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}
)

// loginCall is an LLM call whose output asks a tool to log in with the password (found by its
// key, "password").
func loginCall(spans ptrace.SpanSlice, trace pcommon.TraceID, pass string) ptrace.Span {
	s := spans.AppendEmpty()
	s.SetTraceID(trace)
	s.SetSpanID(pcommon.SpanID{1, 1, 1, 1, 1, 1, 1, byte(spans.Len())})
	s.SetName("chat gpt-4o")
	s.Attributes().PutStr("gen_ai.output.messages",
		`[{"role":"assistant","parts":[{"type":"tool_call","name":"login","arguments":{"user":"maria","password":"`+pass+`"}}]}]`)
	return s
}

func newEchoProc(t *testing.T, cfg *Config, sink *consumertest.TracesSink) func(ptrace.Traces) ptrace.Traces {
	t.Helper()
	p, err := NewFactory().CreateTraces(context.Background(), processortest.NewNopSettings(NewFactory().Type()), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, p.Shutdown(context.Background())) })
	return func(td ptrace.Traces) ptrace.Traces {
		n := len(sink.AllTraces())
		require.NoError(t, p.ConsumeTraces(context.Background(), td))
		return sink.AllTraces()[n]
	}
}

func echoConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.HashKey = "0123456789abcdef0123456789abcdef"
	return cfg
}

// TestRepeatedSecretInRequest: a password found by its key in one span is replaced wherever the
// request repeats it: the tool's result, an event, the status message, the span name, bytes, a
// resource attribute, a span of another trace; every occurrence is counted on its span, JSON
// stays valid, and an occurrence whose first byte is part of an escape is left alone.
func TestRepeatedSecretInRequest(t *testing.T) {
	process := newEchoProc(t, echoConfig(), new(consumertest.TracesSink))
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("deployment.note", "rotated to "+echoSecret)
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	tool := spans.AppendEmpty()
	tool.SetTraceID(echoTrace)
	tool.SetSpanID(pcommon.SpanID{2, 2, 2, 2, 2, 2, 2, 2})
	tool.SetName("execute_tool login " + echoSecret)
	tool.Attributes().PutStr("gen_ai.tool.call.result", `{"ok":true,"message":"Logged in as maria with `+echoSecret+`.","raw":"\\`+echoSecret+`","cut":"\`+echoSecret+`"}`)
	tool.Attributes().PutEmptyBytes("http.response.body").FromRaw([]byte("session for " + echoSecret))
	tool.Events().AppendEmpty().Attributes().PutStr("log.message", "retrying with "+echoSecret)
	tool.Status().SetMessage("401 for " + echoSecret)
	loginCall(spans, echoTrace, echoSecret) // found here, after the spans that repeat it
	other := spans.AppendEmpty()
	other.SetTraceID(otherTr)
	other.SetSpanID(pcommon.SpanID{3, 3, 3, 3, 3, 3, 3, 3})
	other.SetName("chat")
	other.Attributes().PutStr("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"is `+echoSecret+` strong?"}]}]`)

	out := process(td)
	all := dump(out)
	// the one occurrence left: after a lone backslash, where the bytes are "\Z", an invalid
	// escape in the test's JSON, so the value is malformed and examined as text only
	res := out.ResourceSpans().At(0)
	got := res.ScopeSpans().At(0).Spans()
	tool, other = got.At(0), got.At(2)
	assert.Equal(t, "execute_tool login [REDACTED:password_key]", tool.Name())
	result, _ := tool.Attributes().Get("gen_ai.tool.call.result")
	assert.Equal(t, `{"ok":true,"message":"Logged in as maria with [REDACTED:password_key].","raw":"\\[REDACTED:password_key]","cut":"\`+echoSecret+`"}`, result.Str(),
		"an escaped backslash before it is replaced; a backslash that escapes its first byte is not")
	body, _ := tool.Attributes().Get("http.response.body")
	assert.Equal(t, "session for [REDACTED:password_key]", string(body.Bytes().AsRaw()))
	ev, _ := tool.Events().At(0).Attributes().Get("log.message")
	assert.Equal(t, "retrying with [REDACTED:password_key]", ev.Str())
	assert.Equal(t, "401 for [REDACTED:password_key]", tool.Status().Message())
	note, _ := res.Resource().Attributes().Get("deployment.note")
	assert.Equal(t, "rotated to [REDACTED:password_key]", note.Str())
	in, _ := other.Attributes().Get("gen_ai.input.messages")
	assert.True(t, json.Valid([]byte(in.Str())), in.Str())
	assert.NotContains(t, in.Str(), echoSecret, "a span of another trace in the same request")
	assert.Equal(t, 1, strings.Count(all, echoSecret), "only the occurrence inside an escape is left: %s", all)

	count := func(s ptrace.Span) int64 { v, _ := s.Attributes().Get(CountAttribute); return v.Int() }
	assert.Equal(t, int64(6), count(tool), "name, result (twice), body, event, status")
	assert.Equal(t, int64(1), count(got.At(1)))
	assert.Equal(t, int64(1), count(other))
	changed, _ := tool.Attributes().Get(ChangedAttribute)
	assert.Equal(t, map[string]any{"gen_ai.tool.call.result": int64(2), "http.response.body": int64(1)}, changed.Map().AsRaw())
	rc, _ := res.Resource().Attributes().Get(CountAttribute)
	assert.Equal(t, int64(1), rc.Int())
}

// TestRepeatedSecretLaterRequest: the password found in one request of a trace is replaced
// where a later request of the same trace repeats it, with its token under action hash too
// (the same token as where it was found); with repeated_secret_traces 0 it is not, so the memory is
// what replaces it.
func TestRepeatedSecretLaterRequest(t *testing.T) {
	echoed := func(trace pcommon.TraceID) ptrace.Traces {
		td := ptrace.NewTraces()
		s := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		s.SetTraceID(trace)
		s.SetSpanID(pcommon.SpanID{9, 9, 9, 9, 9, 9, 9, 9})
		s.Attributes().PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"Done: your password is now `+echoSecret+`"}]}]`)
		return td
	}
	first := func() ptrace.Traces {
		td := ptrace.NewTraces()
		loginCall(td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans(), echoTrace, echoSecret)
		return td
	}
	msg := func(td ptrace.Traces) string {
		v, _ := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().Get("gen_ai.output.messages")
		return v.Str()
	}

	cfg := echoConfig()
	cfg.RuleActions = map[string]redact.Action{"password_key": redact.ActionHash}
	process := newEchoProc(t, cfg, new(consumertest.TracesSink))
	found := msg(process(first()))
	require.NotContains(t, found, echoSecret)
	later := msg(process(echoed(echoTrace)))
	assert.NotContains(t, later, echoSecret, "a later request of the trace")
	tok := found[len(`[{"role":"assistant","parts":[{"type":"tool_call","name":"login","arguments":{"user":"maria","password":"`):]
	tok = tok[:len("password_key:")+12]
	assert.Contains(t, later, "your password is now "+tok, "the token where it was found")

	off := echoConfig()
	off.RepeatedSecretTraces = 0
	process = newEchoProc(t, off, new(consumertest.TracesSink))
	process(first())
	assert.Contains(t, msg(process(echoed(echoTrace))), echoSecret, "without the memory, only its own request")
}

// TestRepeatedSecretGoEscaped: a password written by a JavaScript agent (& as is) and repeated
// in a JSON document Go's encoder wrote (& as \u0026) is replaced in both, and the other way
// round.
func TestRepeatedSecretGoEscaped(t *testing.T) {
	const pass = "Tr0ub4dor&3xyz"
	goForm, err := json.Marshal(map[string]string{"note": "use " + pass})
	require.NoError(t, err)
	require.Contains(t, string(goForm), `\u0026`)
	for _, tc := range []struct{ name, found, echo string }{
		{"found plain, repeated by Go", pass, string(goForm)},
		{"found by Go, repeated plain", `Tr0ub4dor\u00263xyz`, "use " + pass + " now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			process := newEchoProc(t, echoConfig(), new(consumertest.TracesSink))
			td := ptrace.NewTraces()
			spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
			loginCall(spans, echoTrace, tc.found)
			s := spans.AppendEmpty()
			s.SetTraceID(echoTrace)
			s.SetSpanID(pcommon.SpanID{7, 7, 7, 7, 7, 7, 7, 7})
			s.Attributes().PutStr("note", tc.echo)
			out := dump(process(td))
			assert.NotContains(t, out, "Tr0ub4dor")
		})
	}
}

// TestRepeatedSecretNotSealed: with sealed originals, a value changed for PII is sealed, but
// the password it repeats is not in the sealed original (credentials are never sealed).
func TestRepeatedSecretNotSealed(t *testing.T) {
	dir := t.TempDir()
	cfg := echoConfig()
	cfg.SealOriginals = SealConfig{KeyDir: dir, KeyFile: filepath.Join(t.TempDir(), "master.key")}
	process := newEchoProc(t, cfg, new(consumertest.TracesSink))
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	s := spans.AppendEmpty()
	s.SetTraceID(echoTrace)
	s.SetSpanID(pcommon.SpanID{5, 5, 5, 5, 5, 5, 5, 5})
	s.Attributes().PutStr("gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"mail `+plantedEmail+` the code `+echoSecret+`"}]}]`)
	loginCall(spans, echoTrace, echoSecret)
	out := process(td)
	require.NotContains(t, dump(out), echoSecret)

	keys, err := seal.OpenKeysWith(context.Background(), dir, cfg.SealOriginals.master())
	require.NoError(t, err)
	t.Cleanup(func() { _ = keys.Close() })
	rep, err := seal.Restore(context.Background(), keys, out, nil)
	require.NoError(t, err)
	require.Positive(t, rep.Restored)
	opened := dump(out)
	assert.Contains(t, opened, plantedEmail, "the PII original is sealed")
	assert.NotContains(t, opened, echoSecret, "the repeated password was sealed")
}

// TestRepeatedSecretLogs: the log pipeline replaces a secret one record gave (its body's
// password member) in the other records of the request and, by trace, of later requests.
func TestRepeatedSecretLogs(t *testing.T) {
	sink := new(consumertest.LogsSink)
	p, err := NewFactory().CreateLogs(context.Background(), processortest.NewNopSettings(NewFactory().Type()), echoConfig(), sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, p.Shutdown(context.Background())) })
	record := func(ls plog.LogRecordSlice, body string) {
		lr := ls.AppendEmpty()
		lr.SetTraceID(echoTrace)
		lr.Body().SetStr(body)
	}
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	record(lrs, "login ok: "+echoSecret)
	record(lrs, `{"user":"maria","password":"`+echoSecret+`"}`)
	require.NoError(t, p.ConsumeLogs(context.Background(), ld))
	later := plog.NewLogs()
	record(later.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords(), "still "+echoSecret)
	require.NoError(t, p.ConsumeLogs(context.Background(), later))

	for i, got := range sink.AllLogs() {
		b, _ := (&plog.JSONMarshaler{}).MarshalLogs(got)
		assert.NotContains(t, string(b), echoSecret, "request %d", i)
	}
	first := sink.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	assert.Equal(t, "login ok: [REDACTED:password_key]", first.Body().Str())
	n, _ := first.Attributes().Get(CountAttribute)
	assert.Equal(t, int64(1), n.Int())
}

// TestRepeatedSecretAcrossSignals: the traces and the logs processor the collector builds from
// one configuration share the memory: a password given in a span is replaced where a log record
// of the trace repeats it, and one given in a log record where a later span repeats it.
func TestRepeatedSecretAcrossSignals(t *testing.T) {
	cfg := echoConfig()
	set := processortest.NewNopSettings(NewFactory().Type())
	spans, logs := new(consumertest.TracesSink), new(consumertest.LogsSink)
	tp, err := NewFactory().CreateTraces(context.Background(), set, cfg, spans)
	require.NoError(t, err)
	lp, err := NewFactory().CreateLogs(context.Background(), set, cfg, logs)
	require.NoError(t, err)
	for _, c := range []interface {
		Start(context.Context, component.Host) error
		Shutdown(context.Context) error
	}{tp, lp} {
		require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
		t.Cleanup(func() { require.NoError(t, c.Shutdown(context.Background())) })
	}
	const fromLog = "FromLogSecret99"
	td := ptrace.NewTraces()
	loginCall(td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans(), echoTrace, echoSecret)
	require.NoError(t, tp.ConsumeTraces(context.Background(), td))
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for _, body := range []string{"repeat from the span: " + echoSecret, `{"password":"` + fromLog + `"}`} {
		lr := lrs.AppendEmpty()
		lr.SetTraceID(echoTrace)
		lr.Body().SetStr(body)
	}
	require.NoError(t, lp.ConsumeLogs(context.Background(), ld))
	later := ptrace.NewTraces()
	s := later.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetTraceID(echoTrace)
	s.SetSpanID(pcommon.SpanID{4, 4, 4, 4, 4, 4, 4, 4})
	s.Attributes().PutStr("gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"done, it is `+fromLog+`"}]}]`)
	require.NoError(t, tp.ConsumeTraces(context.Background(), later))

	b, _ := (&plog.JSONMarshaler{}).MarshalLogs(logs.AllLogs()[0])
	assert.NotContains(t, string(b), echoSecret, "the span's password in a log record")
	assert.NotContains(t, dump(spans.AllTraces()[1]), fromLog, "the log record's password in a later span")
}

// TestRepeatedSecretMemoryFull: a trace remembers its first 32 secrets; the ones past them are
// counted in processor_agent_redaction_secrets_not_remembered, and only the remembered ones are
// replaced in a later request.
func TestRepeatedSecretMemoryFull(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	sink := new(consumertest.TracesSink)
	p, err := NewFactory().CreateTraces(context.Background(), metadatatest.NewSettings(tt), echoConfig(), sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, p.Shutdown(context.Background())) })
	pass := func(i int) string { return fmt.Sprintf("ManyPass%04dXyz", i) }
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i := range maxSecretsPerTrace + 8 {
		loginCall(spans, echoTrace, pass(i))
	}
	require.NoError(t, p.ConsumeTraces(context.Background(), td))
	later := ptrace.NewTraces()
	s := later.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetTraceID(echoTrace)
	s.SetSpanID(pcommon.SpanID{6, 6, 6, 6, 6, 6, 6, 6})
	var all []string
	for i := range maxSecretsPerTrace + 8 {
		all = append(all, pass(i))
	}
	s.Attributes().PutStr("note", strings.Join(all, " "))
	require.NoError(t, p.ConsumeTraces(context.Background(), later))
	out := dump(sink.AllTraces()[1])
	assert.NotContains(t, out, pass(0))
	assert.NotContains(t, out, pass(maxSecretsPerTrace-1))
	assert.Contains(t, out, pass(maxSecretsPerTrace), "past the bound")
	metadatatest.AssertEqualProcessorAgentRedactionSecretsNotRemembered(t, tt, []metricdata.DataPoint[int64]{{Value: 8}}, metricdatatest.IgnoreTimestamp())
}
