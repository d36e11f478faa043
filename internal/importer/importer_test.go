// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func td(name string) string { return filepath.Join("testdata", name) }

func attr(t *testing.T, m pcommon.Map, key string) pcommon.Value {
	t.Helper()
	v, ok := m.Get(key)
	if !ok {
		t.Fatalf("attribute %q missing; have %v", key, m.AsRaw())
	}
	return v
}

func TestParseFixtures(t *testing.T) {
	tests := []struct {
		file   string
		format string
		spans  int
		traces int
		check  func(t *testing.T, td ptrace.Traces)
	}{
		{"otlp_lines.json", "otlp-json", 3, 2, checkOTLPLines},
		{"otlp_whole.json", "otlp-json", 2, 1, func(t *testing.T, td ptrace.Traces) {
			s := spansByID(t, td)["b7ad6b7169203332"]
			if s.span.ParentSpanID().String() != "b7ad6b7169203331" || s.span.Name() != "two" {
				t.Errorf("span two: parent %s name %q", s.span.ParentSpanID(), s.span.Name())
			}
		}},
		{"otlp_bom.json", "otlp-json", 1, 1, func(t *testing.T, td ptrace.Traces) {
			if n := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Name(); n != "bom" {
				t.Errorf("name %q", n)
			}
		}},
		{"langfuse_small.json", "langfuse", 3, 1, checkLangfuseSmall},
		{"anyagent_small.json", "any-agent", 3, 2, checkAnyAgentSmall},
		{"langfuse_trace_only.json", "langfuse", 1, 1, func(t *testing.T, td ptrace.Traces) {
			sp := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
			a := sp.Attributes()
			// A UUID trace id keeps its bytes; the original spelling is kept beside it.
			if sp.TraceID().String() != "0cff26913a454988a2438cb8c508aa25" || attr(t, a, "langfuse.trace.id").Str() != "0cff2691-3a45-4988-a243-8cb8c508aa25" {
				t.Errorf("trace id %s %v", sp.TraceID(), a.AsRaw())
			}
			if sp.Name() != "solo" || attr(t, a, "langfuse.trace.input").Str() != `{"q":"hi"}` || attr(t, a, "langfuse.trace.output").Str() != "yo" ||
				attr(t, a, "session.id").Str() != "s" || sp.SpanID().IsEmpty() || sp.StartTimestamp() == 0 {
				t.Errorf("trace-only span %q %v", sp.Name(), a.AsRaw())
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			res, err := ParseFile(td(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if res.Format != tt.format || res.SpanCount() != tt.spans || res.TraceCount() != tt.traces {
				t.Fatalf("got format %s, %d spans, %d traces; want %s, %d, %d",
					res.Format, res.SpanCount(), res.TraceCount(), tt.format, tt.spans, tt.traces)
			}
			tt.check(t, res.Traces)
		})
	}
}

func checkOTLPLines(t *testing.T, td ptrace.Traces) {
	if n := td.ResourceSpans().Len(); n != 2 {
		t.Fatalf("%d resource spans, want 2 (one per line)", n)
	}
	s := spansByID(t, td)
	root := s["eee19b7ec3c1b174"]
	a := root.span.Attributes()
	if got := attr(t, a, "s").Str(); got != "q\"uote\né" {
		t.Errorf("s = %q", got)
	}
	if attr(t, a, "i").Int() != 42 || attr(t, a, "d").Double() != 1.5 || !attr(t, a, "b").Bool() {
		t.Errorf("typed attributes: %v", a.AsRaw())
	}
	if string(attr(t, a, "raw").Bytes().AsRaw()) != "hello" {
		t.Errorf("bytes attribute: %v", attr(t, a, "raw").AsRaw())
	}
	if root.span.Status().Code() != ptrace.StatusCodeError || root.span.Status().Message() != "bad" {
		t.Errorf("status %v %q", root.span.Status().Code(), root.span.Status().Message())
	}
	if root.span.Events().Len() != 1 || root.span.Kind() != ptrace.SpanKindServer {
		t.Errorf("events %d kind %v", root.span.Events().Len(), root.span.Kind())
	}
	child := s["eee19b7ec3c1b175"]
	if child.span.ParentSpanID() != root.span.SpanID() || child.span.Links().Len() != 1 {
		t.Errorf("child parent %s links %d", child.span.ParentSpanID(), child.span.Links().Len())
	}
	if v, _ := child.res.Attributes().Get("service.name"); v.Str() != "svc-b" {
		t.Errorf("child resource %v", child.res.Attributes().AsRaw())
	}
}

func checkLangfuseSmall(t *testing.T, td ptrace.Traces) {
	s := spansByID(t, td)
	agent, tool, llm := s["aaaaaaaaaaaaaaaa"], s["bbbbbbbbbbbbbbbb"], s["cccccccccccccccc"]
	if agent.span.Name() == "" || tool.span.Name() == "" || llm.span.Name() == "" {
		t.Fatalf("spans missing: %v", s)
	}
	if agent.span.TraceID().String() != "0123456789abcdef0123456789abcdef" {
		t.Errorf("trace id %s", agent.span.TraceID())
	}
	if !agent.span.ParentSpanID().IsEmpty() || tool.span.ParentSpanID() != agent.span.SpanID() || llm.span.ParentSpanID() != agent.span.SpanID() {
		t.Errorf("parents: %s %s %s", agent.span.ParentSpanID(), tool.span.ParentSpanID(), llm.span.ParentSpanID())
	}
	a := agent.span.Attributes()
	if got := attr(t, a, "esc").Str(); got != "line1\nline2 \"quoted\" é\u2028 tab\t slash/ <b>&amp;</b>" {
		t.Errorf("esc = %q", got)
	}
	if attr(t, a, "gen_ai.usage.input_tokens").Type() != pcommon.ValueTypeInt || attr(t, a, "gen_ai.usage.input_tokens").Int() != 41 {
		t.Errorf("input_tokens %v", attr(t, a, "gen_ai.usage.input_tokens"))
	}
	if v := attr(t, a, "gen_ai.request.temperature"); v.Type() != pcommon.ValueTypeDouble || v.Double() != 0.7 {
		t.Errorf("temperature %v", v)
	}
	if v := attr(t, a, "big"); v.Type() != pcommon.ValueTypeDouble || v.Double() != 18446744073709551616 {
		t.Errorf("big (beyond int64) %s %v", v.Type(), v.AsRaw())
	}
	if v := attr(t, a, "exp"); v.Type() != pcommon.ValueTypeDouble || v.Double() != 1000 {
		t.Errorf("exp %s %v", v.Type(), v.AsRaw())
	}
	if attr(t, a, "none").Type() != pcommon.ValueTypeEmpty || !attr(t, a, "flag").Bool() {
		t.Errorf("none/flag %v", a.AsRaw())
	}
	if v := attr(t, a, "list"); v.Type() != pcommon.ValueTypeSlice || v.Slice().At(3).Slice().At(0).Bool() != false || v.Slice().At(1).Str() != "two" {
		t.Errorf("list %v", v.AsRaw())
	}
	if v := attr(t, a, "obj"); v.Map().Len() != 2 {
		t.Errorf("obj %v", v.AsRaw())
	} else if d, _ := v.Map().Get("n"); d.Map().Len() != 1 {
		t.Errorf("obj.n %v", d.AsRaw())
	}
	// Map keeps source order.
	var keys []string
	a.Range(func(k string, _ pcommon.Value) bool { keys = append(keys, k); return true })
	if strings.Join(keys[:3], ",") != "gen_ai.system,gen_ai.usage.input_tokens,gen_ai.request.temperature" {
		t.Errorf("attribute order %v", keys)
	}
	// The attributes hold no input in a form genai reads: the observation's own input is kept.
	if v, has := a.Get("langfuse.observation.input"); !has || v.Str() != `{"ignored":"because attributes exist"}` {
		t.Errorf("observation input not kept beside attributes without one: %v", v.AsRaw())
	}
	if attr(t, a, "session.id").Str() != "sess-1" || attr(t, a, "user.id").Str() != "user-9" ||
		attr(t, a, "langfuse.trace.metadata.email").Str() != "u@example.com" || attr(t, a, "langfuse.trace.tags").Slice().Len() != 2 {
		t.Errorf("trace-level attributes on root: %v", a.AsRaw())
	}
	if _, has := a.Get("langfuse.environment"); has {
		t.Error("default environment should not be added")
	}
	if agent.span.Events().Len() != 1 || agent.span.Events().At(0).Name() != "langfuse.score" {
		t.Fatalf("score event missing")
	} else if v, _ := agent.span.Events().At(0).Attributes().Get("langfuse.score.value"); v.Double() != 0.8 {
		t.Errorf("score value %v", v.AsRaw())
	}
	if agent.scope.Name() != "openinference.instrumentation.openai" || agent.scope.Version() != "1.2.3" {
		t.Errorf("scope %s %s", agent.scope.Name(), agent.scope.Version())
	}
	if v, _ := agent.res.Attributes().Get("service.instance.id"); v.Int() != 7 {
		t.Errorf("resource %v", agent.res.Attributes().AsRaw())
	}
	wantStart := time.Date(2025, 1, 2, 3, 4, 5, 678e6, time.UTC)
	if !agent.span.StartTimestamp().AsTime().Equal(wantStart) || agent.span.EndTimestamp().AsTime().Sub(wantStart) != 2322*time.Millisecond {
		t.Errorf("times %v %v", agent.span.StartTimestamp(), agent.span.EndTimestamp())
	}
	// metadata as an object; Langfuse metadata beside attributes; ERROR level; null endTime.
	if tool.rs != agent.rs {
		t.Error("same resource attributes must share one ResourceSpans")
	}
	ta := tool.span.Attributes()
	if attr(t, ta, "count").Int() != 3 || attr(t, ta, "langfuse.observation.metadata.langgraph_node").Str() != "tools" {
		t.Errorf("tool attributes %v", ta.AsRaw())
	}
	if tool.span.Status().Code() != ptrace.StatusCodeError || tool.span.Status().Message() != "tool exploded" {
		t.Errorf("tool status %v %q", tool.span.Status().Code(), tool.span.Status().Message())
	}
	if tool.span.EndTimestamp() != 0 || tool.span.StartTimestamp().AsTime().Nanosecond() != 123000 {
		t.Errorf("tool times %v %v", tool.span.StartTimestamp(), tool.span.EndTimestamp())
	}
	if _, has := ta.Get("session.id"); has {
		t.Error("trace-level attributes belong on root spans only")
	}
	// No OTel attributes: Langfuse fields are kept.
	la := llm.span.Attributes()
	if attr(t, la, "langfuse.observation.input").Str() != `[{"role":"user","content":"hi \"there\""}]` ||
		attr(t, la, "langfuse.observation.output").Str() != "hello" ||
		attr(t, la, "langfuse.observation.model.name").Str() != "gpt-4o" ||
		attr(t, la, "langfuse.observation.level").Str() != "WARNING" ||
		attr(t, la, "langfuse.observation.status_message").Str() != "slow" {
		t.Errorf("llm attributes %v", la.AsRaw())
	}
	if _, has := la.Get("langfuse.observation.cost_details"); has {
		t.Error("empty costDetails should not be added")
	}
	if llm.scope.Name() != "langfuse-sdk" || llm.rs == agent.rs {
		t.Errorf("llm scope/resource grouping wrong: %s", llm.scope.Name())
	}
}

func checkAnyAgentSmall(t *testing.T, td ptrace.Traces) {
	s := spansByID(t, td)
	llm, agent, orphan := s["ffffffffffffffff"], s["0000000000000001"], s["0000000000000003"]
	// 12345678901234567890123456789012345678 = 0x0949b0f6f0023313c4499050de38f34e (python: "%032x" % n)
	if llm.span.TraceID().String() != "0949b0f6f0023313c4499050de38f34e" {
		t.Errorf("trace id %s", llm.span.TraceID())
	}
	if llm.span.ParentSpanID() != agent.span.SpanID() || !agent.span.ParentSpanID().IsEmpty() || !orphan.span.ParentSpanID().IsEmpty() {
		t.Errorf("parents %s %s", llm.span.ParentSpanID(), agent.span.ParentSpanID())
	}
	if llm.span.Kind() != ptrace.SpanKindClient || orphan.span.Kind() != ptrace.SpanKindServer || agent.span.Kind() != ptrace.SpanKindInternal {
		t.Errorf("kinds %v %v %v", llm.span.Kind(), orphan.span.Kind(), agent.span.Kind())
	}
	if llm.span.Status().Code() != ptrace.StatusCodeError || llm.span.Status().Message() != "boom" || orphan.span.Status().Code() != ptrace.StatusCodeOk {
		t.Errorf("status %v %q", llm.span.Status().Code(), llm.span.Status().Message())
	}
	if llm.span.TraceState().AsRaw() != "vendor=v1,other=x" || llm.span.Flags() != 0x101 {
		t.Errorf("trace state %q flags %#x", llm.span.TraceState().AsRaw(), llm.span.Flags())
	}
	a := llm.span.Attributes()
	if attr(t, a, "gen_ai.usage.input_tokens").Int() != 269 || attr(t, a, "gen_ai.usage.input_cost").Double() != 2.69e-05 ||
		attr(t, a, "whole_float").Type() != pcommon.ValueTypeDouble || attr(t, a, "ok").Bool() || attr(t, a, "tags").Slice().Len() != 2 {
		t.Errorf("attributes %v", a.AsRaw())
	}
	if attr(t, a, "gen_ai.input.messages").Str() != `[{"role": "user", "content": "café \n"}]` {
		t.Errorf("messages %q", attr(t, a, "gen_ai.input.messages").Str())
	}
	if llm.span.Events().Len() != 1 || llm.span.Events().At(0).Timestamp() != 1758026593300000000 {
		t.Errorf("events %d", llm.span.Events().Len())
	}
	l := llm.span.Links().At(0)
	if l.TraceID().String() != "00000000000000000000000000000001" || l.SpanID().String() != "0000000000000002" || l.Flags() != 0x300 {
		t.Errorf("link %s %s %#x", l.TraceID(), l.SpanID(), l.Flags())
	}
	if llm.span.StartTimestamp() != 1758026593210770000 || llm.span.EndTimestamp() != 1758026593449611000 {
		t.Errorf("times %d %d", llm.span.StartTimestamp(), llm.span.EndTimestamp())
	}
	if llm.rs.SchemaUrl() != "https://opentelemetry.io/schemas/1.26.0" || llm.rs != agent.rs || orphan.rs == agent.rs {
		t.Errorf("resource grouping/schema wrong")
	}
	if attr(t, agent.span.Attributes(), "any_agent.final_output").Str() != `{"answer":42}` {
		t.Errorf("final output %v", agent.span.Attributes().AsRaw())
	}
	if _, has := llm.span.Attributes().Get("any_agent.final_output"); has {
		t.Error("final_output belongs on root spans only")
	}
}

func TestParseMalformed(t *testing.T) {
	// Positions counted by hand (1-based line and character column of the offending byte).
	tests := []struct {
		file string
		pos  string // file:line:col
		msg  string
	}{
		{"bad_otlp_line3.json", "bad_otlp_line3.json:3:56", "invalid character '}'"},
		{"bad_otlp_logs.json", "bad_otlp_logs.json:1:1", "resourceLogs, not traces"},
		{"bad_otlp_traceid.json", "bad_otlp_traceid.json:3:18", "OTLP/JSON document 1: ID.UnmarshalJSONIter: length mismatch"},
		{"bad_langfuse_syntax.json", "bad_langfuse_syntax.json:4:44", "invalid character '\"' after object key:value pair"},
		{"bad_langfuse_time.json", "bad_langfuse_time.json:5:19", `startTime: "yesterday" is not an RFC 3339 time`},
		{"bad_langfuse_attrs.json", "bad_langfuse_attrs.json:5:18", "metadata.attributes: expected a JSON object"},
		{"bad_anyagent_id.json", "bad_anyagent_id.json:2:40", "trace_id: -5 is not a 128-bit unsigned integer"},
		{"bad_anyagent_spanid.json", "bad_anyagent_spanid.json:2:54", "span_id"},
		{"bad_anyagent_truncated_literal.json", "bad_anyagent_truncated_literal.json:3:37", "in literal true"},
		{"bad_truncated.json", "bad_truncated.json:1:102", "unexpected end of input"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			res, err := ParseFile(td(tt.file))
			if err == nil {
				t.Fatalf("no error; parsed %d spans", res.SpanCount())
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a *ParseError", err, err)
			}
			want := filepath.Join("testdata", tt.pos)
			if !strings.HasPrefix(err.Error(), want+": ") || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q\nwant prefix %q containing %q", err, want, tt.msg)
			}
			if res.Traces != (ptrace.Traces{}) {
				t.Error("traces returned with an error")
			}
		})
	}
}

func TestParseUnknownFormat(t *testing.T) {
	for _, f := range []string{"unknown_keys.json", "unknown_csv.csv", "unknown_empty.json", "unknown_array.json"} {
		_, err := ParseFile(td(f))
		if !errors.Is(err, ErrUnknownFormat) || !strings.HasPrefix(err.Error(), td(f)+": ") ||
			(f != "unknown_empty.json" && !strings.Contains(err.Error(), "known formats: otlp-json, langfuse, any-agent")) {
			t.Errorf("%s: %v", f, err)
		}
	}
	_, err := ParseFile(td("does-not-exist.json"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "does-not-exist.json") {
		t.Errorf("missing file: %v", err)
	}
}

// fakeFormat shows that a new format plugs in through the registry.
type fakeFormat struct{}

func (fakeFormat) Name() string { return "fake-cassette" }
func (fakeFormat) Detect(s *Sniff) bool {
	return strings.HasPrefix(string(s.Data), "fake-cassette v1\n")
}
func (fakeFormat) Parse([]byte) (ptrace.Traces, error) {
	td := ptrace.NewTraces()
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty().SetName("cassette")
	return td, nil
}

func TestRegistryAddsFormat(t *testing.T) {
	r := NewRegistry(Default.Formats()...)
	r.Register(fakeFormat{})
	res, err := r.ParseBytes("c.fake", []byte("fake-cassette v1\nGET /\n"))
	if err != nil || res.Format != "fake-cassette" || res.SpanCount() != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	if _, err := Default.ParseBytes("c.fake", []byte("fake-cassette v1\nGET /\n")); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("default registry changed: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a name twice must panic")
		}
	}()
	r.Register(fakeFormat{})
}

// TestLargeValuesWhole: multi-megabyte strings with escapes, in every format, come out whole.
func TestLargeValuesWhole(t *testing.T) {
	big := strings.Repeat("line \"quoted\"\n\tcafé 😀 <tag> \\ ", 100000) // ~3.1 MB
	attrs := map[string]any{"gen_ai.input.messages": big, "n": 1}
	meta, err := json.Marshal(map[string]any{"attributes": attrs})
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]any{
		"langfuse": map[string]any{
			"trace": map[string]any{"id": "0123456789abcdef0123456789abcdef"},
			"observations": []any{map[string]any{
				"id": "aaaaaaaaaaaaaaaa", "name": "big", "startTime": "2025-01-02T03:04:05Z", "metadata": string(meta),
			}},
		},
		"any-agent": map[string]any{"spans": []any{map[string]any{
			"name": "big", "kind": "internal", "context": map[string]any{"trace_id": 1, "span_id": 2},
			"attributes": attrs, "status": map[string]any{"status_code": "ok"},
		}}},
	}
	for format, doc := range docs {
		data, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		res, err := ParseBytes(format+".json", data)
		if err != nil {
			t.Fatal(err)
		}
		if res.Format != format {
			t.Fatalf("detected %s", res.Format)
		}
		sp := res.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
		if got := attr(t, sp.Attributes(), "gen_ai.input.messages").Str(); got != big {
			t.Errorf("%s: %d bytes, want %d equal bytes", format, len(got), len(big))
		}
		if attr(t, sp.Attributes(), "n").Int() != 1 {
			t.Errorf("%s: n", format)
		}
	}
}

// TestParseNoSpans: a file in a known format that holds no span is an error naming the file and
// the format (ErrNoSpans), as an empty cassette is, not an import of nothing that exits 0.
func TestParseNoSpans(t *testing.T) {
	for _, doc := range []string{`{"resourceSpans":[]}`, `{"resourceSpans":[{"scopeSpans":[{"spans":[]}]}]}`} {
		_, err := ParseBytes("export.json", []byte(doc))
		if !errors.Is(err, ErrNoSpans) || !strings.Contains(err.Error(), "export.json: otlp-json file with no span, nothing to import") {
			t.Errorf("%s: error %v, want ErrNoSpans naming the file and format", doc, err)
		}
	}
}

// TestUnknownEmptyObject: `{}` is described as an empty object, not as "top-level keys" with
// none listed.
func TestUnknownEmptyObject(t *testing.T) {
	_, err := ParseBytes("x.json", []byte(`{}`))
	if !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), "(an empty JSON object)") {
		t.Errorf("error %v", err)
	}
}
