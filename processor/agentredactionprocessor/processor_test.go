// SPDX-License-Identifier: Apache-2.0

package agentredactionprocessor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/runagain/runagain/internal/redact"
	"github.com/runagain/runagain/processor/agentredactionprocessor/internal/metadatatest"
)

// Values planted in the test spans. They are built at run time so that the source holds no
// credential-shaped literal.
var (
	plantedKey   = "sk-proj-" + strings.Repeat("Q7wE9rT2yU4iO6pA8sD0fG", 3)
	plantedEmail = "maria.lopez@example.org"
	plantedAWS   = "AKIA" + "Z7QW3ER5TY7UI9OP"
	plantedPhone = "+44 20 7946 0958"
	plantedCard  = "4111 1111 1111 1111"
	plantedPass  = "Tr0ub4dor&3x"
)

func agentMessages() string {
	msgs := []map[string]any{
		{"role": "system", "parts": []map[string]any{{"type": "text", "content": "You are a support agent."}}},
		{"role": "user", "parts": []map[string]any{{"type": "text", "content": fmt.Sprintf(
			"My e-mail is %s and my phone %s. Card %s. Use key %s.", plantedEmail, plantedPhone, plantedCard, plantedKey)}}},
		{"role": "assistant", "parts": []map[string]any{{"type": "tool_call", "id": "call_1", "name": "login",
			"arguments": map[string]any{"user": "maria", "password": plantedPass}}}},
	}
	b, _ := json.Marshal(msgs)
	return string(b)
}

func newTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "support-agent")
	rs.Resource().Attributes().PutStr("deployment.owner", plantedEmail)
	spans := rs.ScopeSpans().AppendEmpty().Spans()

	chat := spans.AppendEmpty()
	chat.SetName("chat gpt-4o")
	chat.Attributes().PutStr("gen_ai.operation.name", "chat")
	chat.Attributes().PutStr("gen_ai.input.messages", agentMessages())
	chat.Attributes().PutInt("gen_ai.usage.input_tokens", 1234)
	ev := chat.Events().AppendEmpty()
	ev.SetName("gen_ai.client.inference.operation.details")
	ev.Attributes().PutStr("error.message", "upstream rejected key "+plantedAWS)
	link := chat.Links().AppendEmpty()
	link.Attributes().PutStr("note", "reply to "+plantedEmail)

	http := spans.AppendEmpty()
	http.SetName("POST")
	hdr := http.Attributes().PutEmptySlice("http.request.header.authorization")
	hdr.AppendEmpty().SetStr("Bearer " + plantedKey)
	http.Attributes().PutEmptySlice("http.request.header.x-api-key").AppendEmpty().SetStr("test_openai_api_key")
	http.Attributes().PutStr("http.request.body", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	http.Attributes().PutEmptyBytes("http.response.body").FromRaw([]byte(`{"error":"bad key for ` + plantedEmail + `"}`))
	http.Status().SetMessage("401: key " + plantedAWS + " rejected")

	clean := spans.AppendEmpty()
	clean.SetName("tool search")
	clean.Attributes().PutStr("gen_ai.tool.name", "search")
	clean.Attributes().PutStr("gen_ai.tool.call.arguments", `{"query":"weather in Paris"}`)
	setIDs(spans)
	return td
}

// setIDs gives every span of spans the same trace id and its own non-zero span id.
func setIDs(spans ptrace.SpanSlice) {
	for i := 0; i < spans.Len(); i++ {
		spans.At(i).SetTraceID(pcommon.TraceID{0x72, 0x75, 0x6e, 1})
		spans.At(i).SetSpanID(pcommon.SpanID{0x73, byte(i + 1)})
	}
}

func dump(td ptrace.Traces) string {
	b, _ := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	return string(b)
}

func TestTracesRedacted(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	core, logs := observer.New(zapcore.DebugLevel)
	set := metadatatest.NewSettings(tt)
	set.Logger = zap.New(core)

	sink := new(consumertest.TracesSink)
	cfg := createDefaultConfig().(*Config)
	cfg.HashKey = "0123456789abcdef0123456789abcdef"
	p, err := NewFactory().CreateTraces(context.Background(), set, cfg, sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	in := newTraces()
	before := in.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(2).Attributes().AsRaw()
	require.NoError(t, p.ConsumeTraces(context.Background(), in))
	require.NoError(t, p.Shutdown(context.Background()))

	require.Len(t, sink.AllTraces(), 1)
	out := sink.AllTraces()[0]
	all := dump(out)
	for _, v := range []string{plantedKey, plantedEmail, plantedAWS, plantedPhone, plantedCard, plantedPass} {
		assert.NotContains(t, all, v)
		for _, e := range logs.All() {
			assert.NotContains(t, fmt.Sprint(e.Message, e.ContextMap()), v, "a redacted value reached the log")
		}
	}
	assert.Contains(t, all, "test_openai_api_key", "placeholder must be left alone")

	spans := out.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	chat := spans.At(0).Attributes()
	msgs, _ := chat.Get("gen_ai.input.messages")
	assert.True(t, json.Valid([]byte(msgs.Str())), "messages stay JSON")
	assert.Contains(t, msgs.Str(), "[REDACTED:openai_api_key]")
	assert.Contains(t, msgs.Str(), "[REDACTED:password_key]")
	r, err := redact.New(redact.Config{HashKey: []byte(cfg.HashKey)})
	require.NoError(t, err)
	assert.Contains(t, msgs.Str(), r.Token(redact.RuleEmail, redact.ActionHash, plantedEmail), "PII is hashed with the configured key")
	// 4 findings in the messages (email, phone, card, key) + password + event (AWS id) + link (email)
	cnt, ok := chat.Get(CountAttribute)
	require.True(t, ok)
	assert.Equal(t, int64(7), cnt.Int())
	n, _ := spans.At(1).Attributes().Get(CountAttribute)
	assert.Equal(t, int64(3), n.Int(), "authorization header, bytes body, status message")
	body, _ := spans.At(1).Attributes().Get("http.response.body")
	assert.NotContains(t, string(body.Bytes().AsRaw()), plantedEmail)
	assert.True(t, json.Valid(body.Bytes().AsRaw()))
	assert.NotContains(t, spans.At(1).Status().Message(), plantedAWS)
	assert.Equal(t, before, spans.At(2).Attributes().AsRaw(), "a span without findings is untouched")
	rc, _ := out.ResourceSpans().At(0).Resource().Attributes().Get(CountAttribute)
	assert.Equal(t, int64(1), rc.Int())

	// Everything but the findings is kept byte for byte: the output is the input with each
	// finding replaced by its token (an emptied or reshaped value fails here).
	hash := func(rule, v string) string { return r.Token(rule, redact.ActionHash, v) }
	want := withRedactions(newTraces(), strings.NewReplacer(
		plantedEmail, hash(redact.RuleEmail, plantedEmail),
		plantedPhone, hash("phone_number", plantedPhone),
		plantedCard, hash("credit_card", plantedCard),
		plantedKey, "[REDACTED:openai_api_key]",
		plantedAWS, "[REDACTED:aws_access_key_id]",
		// json.Marshal wrote the password's & as \u0026.
		strings.ReplaceAll(plantedPass, "&", `\u0026`), "[REDACTED:password_key]",
	))
	// A credential header's value is replaced whole.
	authz, ok := want.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(1).Attributes().Get("http.request.header.authorization")
	require.True(t, ok)
	authz.Slice().At(0).SetStr("[REDACTED:authorization]")
	assert.Equal(t, dump(want), dump(withoutMarks(out)))

	rule := func(name string) attribute.Set { return attribute.NewSet(attribute.String("rule", name)) }
	metadatatest.AssertEqualProcessorAgentRedactionFindings(t, tt, []metricdata.DataPoint[int64]{
		{Attributes: rule("email"), Value: 4},
		{Attributes: rule("phone_number"), Value: 1},
		{Attributes: rule("credit_card"), Value: 1},
		{Attributes: rule("openai_api_key"), Value: 1},
		{Attributes: rule("password_key"), Value: 1},
		{Attributes: rule("aws_access_key_id"), Value: 2},
		{Attributes: rule("authorization"), Value: 1},
	}, metricdatatest.IgnoreTimestamp())
}

func TestDropAndMalformed(t *testing.T) {
	tt := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tt.Shutdown(context.Background())) })
	sink := new(consumertest.LogsSink)
	cfg := createDefaultConfig().(*Config)
	cfg.RuleActions = map[string]redact.Action{redact.RuleUSSSN: redact.ActionDrop}
	cfg.IgnoredKeys = []string{"safe"}
	p, err := NewFactory().CreateLogs(context.Background(), metadatatest.NewSettings(tt), cfg, sink)
	require.NoError(t, err)

	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	a := lrs.AppendEmpty()
	a.Body().SetStr(`{"note": "ssn 123-45-6789"`) // looks like JSON, is not
	a.Attributes().PutStr("ssn", "123-45-6789")
	a.Attributes().PutStr("safe", plantedEmail)
	a.Attributes().PutStr("keep", "nothing here")
	b := lrs.AppendEmpty()
	b.Body().SetEmptyMap().PutStr("user.email", plantedEmail)
	require.NoError(t, p.ConsumeLogs(context.Background(), ld))

	out := sink.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	ra := out.At(0)
	assert.Equal(t, pcommon.ValueTypeEmpty, ra.Body().Type(), "body with a drop finding is removed")
	_, has := ra.Attributes().Get("ssn")
	assert.False(t, has, "attribute with a drop finding is removed")
	safe, _ := ra.Attributes().Get("safe")
	assert.Equal(t, plantedEmail, safe.Str(), "ignored keys are not examined")
	cnt, _ := ra.Attributes().Get(CountAttribute)
	assert.Equal(t, int64(2), cnt.Int())
	body := out.At(1).Body().Map()
	v, _ := body.Get("user.email")
	assert.True(t, strings.HasPrefix(v.Str(), "email:"), v.Str())

	metadatatest.AssertEqualProcessorAgentRedactionDroppedValues(t, tt, []metricdata.DataPoint[int64]{{Value: 2}}, metricdatatest.IgnoreTimestamp())
	metadatatest.AssertEqualProcessorAgentRedactionMalformedJSON(t, tt, []metricdata.DataPoint[int64]{{Value: 1}}, metricdatatest.IgnoreTimestamp())
}
