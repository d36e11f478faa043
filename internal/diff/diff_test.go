// SPDX-License-Identifier: Apache-2.0

package diff

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/importer"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// runBuilder builds a run of GenAI semantic-convention spans, one after another in time.
type runBuilder struct {
	td   ptrace.Traces
	ss   ptrace.SpanSlice
	tid  pcommon.TraceID
	root pcommon.SpanID
	t    time.Time
	n    byte
	logs plog.Logs
}

func newRun(tid byte) *runBuilder {
	b := &runBuilder{td: ptrace.NewTraces(), tid: pcommon.TraceID{tid, 1}, t: time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC), logs: plog.NewLogs()}
	rs := b.td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "agent")
	b.ss = rs.ScopeSpans().AppendEmpty().Spans()
	root := b.span("invoke_agent weather", 0)
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	b.root = root.SpanID()
	return b
}

func (b *runBuilder) span(name string, ms int) ptrace.Span {
	b.n++
	sp := b.ss.AppendEmpty()
	sp.SetTraceID(b.tid)
	sp.SetSpanID(pcommon.SpanID{b.tid[0], b.n})
	if !b.root.IsEmpty() {
		sp.SetParentSpanID(b.root)
	}
	sp.SetName(name)
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(b.t))
	b.t = b.t.Add(time.Duration(ms) * time.Millisecond)
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(b.t))
	b.t = b.t.Add(time.Millisecond)
	if !b.root.IsEmpty() {
		// the root spans the whole run
		b.ss.At(0).SetEndTimestamp(pcommon.NewTimestampFromTime(b.t))
	}
	return sp
}

func (b *runBuilder) llm(model string, in, out []Message, finish string, tin, tout int64, ms int) {
	sp := b.span("chat "+model, ms)
	a := sp.Attributes()
	a.PutStr("gen_ai.operation.name", "chat")
	a.PutStr("gen_ai.provider.name", "openai")
	a.PutStr("gen_ai.request.model", model)
	a.PutStr("gen_ai.response.model", model)
	j, _ := json.Marshal(in)
	a.PutStr("gen_ai.input.messages", string(j))
	j, _ = json.Marshal(out)
	a.PutStr("gen_ai.output.messages", string(j))
	a.PutEmptySlice("gen_ai.response.finish_reasons").AppendEmpty().SetStr(finish)
	a.PutInt("gen_ai.usage.input_tokens", tin)
	a.PutInt("gen_ai.usage.output_tokens", tout)
}

func (b *runBuilder) tool(name, args, result string, ms int, fail string) {
	sp := b.span("execute_tool "+name, ms)
	a := sp.Attributes()
	a.PutStr("gen_ai.operation.name", "execute_tool")
	a.PutStr("gen_ai.tool.name", name)
	a.PutStr("gen_ai.tool.call.arguments", args)
	a.PutStr("gen_ai.tool.call.result", result)
	if fail != "" {
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage(fail)
	}
}

func (b *runBuilder) addAlert() {
	lr := b.logs.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetEventName(store.AlertEventName)
	lr.SetTraceID(b.tid)
}

func (b *runBuilder) run() *store.Run {
	return &store.Run{TraceID: b.tid.String(), Traces: b.td, Logs: b.logs, Tier: "hot"}
}

func text(role, s string) Message {
	return Message{Role: role, Parts: []Part{{Type: "text", Content: s}}}
}

func call(text, name string, args map[string]any) Message {
	m := Message{Role: "assistant", Parts: []Part{}}
	if text != "" {
		m.Parts = append(m.Parts, Part{Type: "text", Content: text})
	}
	m.Parts = append(m.Parts, Part{Type: "tool_call", ID: "call_" + name, Name: name, Arguments: args})
	return m
}

func resp(id, s string) Message {
	return Message{Role: "tool", Parts: []Part{{Type: "tool_call_response", ID: id, Response: s}}}
}

// weatherRuns are two runs of one agent: B used another model at step 1, which answered with
// other text and an extra argument, got a longer tool result, called one more tool, and
// answered differently; B also failed a tool and raised an alert.
func weatherRuns() (*store.Run, *store.Run) {
	sys := text("system", "You are a weather assistant.\nAnswer in one sentence.")
	user := text("user", "What is the weather in Paris?")

	a := newRun(0xa)
	c1 := call("Let me check.", "get_weather", map[string]any{"city": "Paris"})
	a.llm("gpt-4.1", []Message{sys, user}, []Message{c1}, "tool_calls", 40, 12, 800)
	a.tool("get_weather", `{"city":"Paris"}`, `{"temp_c":21}`, 50, "")
	a.llm("gpt-4.1", []Message{sys, user, c1, resp("call_get_weather", `{"temp_c":21}`)},
		[]Message{text("assistant", "It is 21 °C in Paris.")}, "stop", 70, 9, 600)

	b := newRun(0xb)
	d1 := call("Let me check the weather.", "get_weather", map[string]any{"city": "Paris", "unit": "C"})
	b.llm("gpt-4.1-mini", []Message{sys, user}, []Message{d1}, "tool_calls", 40, 15, 300)
	b.tool("get_weather", `{"city":"Paris","unit":"C"}`, `{"temp_c":21,"sky":"clear"}`, 55, "")
	b.tool("get_time", `{"city":"Paris"}`, `{"error":"timeout"}`, 5000, "timeout")
	b.llm("gpt-4.1", []Message{sys, user, d1, resp("call_get_weather", `{"temp_c":21,"sky":"clear"}`)},
		[]Message{text("assistant", "It is 21 °C and clear in Paris.")}, "stop", 75, 11, 700)
	b.addAlert()
	return a.run(), b.run()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./internal/diff -run %s -update to accept):\n%s", path, t.Name(), got)
	}
}

func jsonOf(t *testing.T, r *Result) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRunsGolden: the alignment pairs the changed-model step 1 with its counterpart, lists the
// extra tool step as only in B, and names step 1 as the first difference because of what the model
// answered (tool arguments, then the output text; the model change listed with them); the JSON and
// the human text match their golden files.
func TestRunsGolden(t *testing.T) {
	a, b := weatherRuns()
	r, err := runsOf(a, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Identical || r.First == nil {
		t.Fatal("runs reported identical")
	}
	if r.First.StepA != 1 || r.First.StepB != 1 || r.First.Field != FieldToolArguments {
		t.Errorf("first difference %+v, want step 1 tool_arguments", r.First)
	}
	if got := strings.Join(r.First.Fields, ","); got != "tool_arguments,output,model" {
		t.Errorf("fields %s", got)
	}
	var ops []string
	for _, p := range r.Pairs {
		ops = append(ops, p.Op)
	}
	if got := strings.Join(ops, ","); got != "changed,changed,only_b,changed" {
		t.Errorf("alignment %s, want changed,changed,only_b,changed", got)
	}
	if r.Totals.Steps != (IntDelta{A: 3, B: 4, Delta: 1}) || r.Totals.Errors.Delta != 1 || r.Totals.Alerts.Delta != 1 {
		t.Errorf("totals %+v", r.Totals)
	}
	if r.Totals.CostUSD.A <= 0 {
		t.Errorf("cost of gpt-4.1 calls not priced: %+v", r.Totals.CostUSD)
	}
	golden(t, "weather.diff.json", jsonOf(t, r))
	var txt bytes.Buffer
	if err := WriteText(&txt, r, false); err != nil {
		t.Fatal(err)
	}
	golden(t, "weather.diff.txt", txt.Bytes())
	var col bytes.Buffer
	_ = WriteText(&col, r, true)
	if !strings.Contains(col.String(), "\x1b[31m") || strings.Contains(txt.String(), "\x1b[") {
		t.Error("colour only when asked")
	}
	// On a terminal a one-line change marks the changed words: step 3's answer gained "and clear".
	if !strings.Contains(col.String(), "+ It is 21 °C \x1b[7mand clear \x1b[27min Paris.") {
		t.Errorf("no inline word diff in the coloured output:\n%s", col.String())
	}
}

// TestRunsStep: --step 2 lists every input message of LLM call 2 and marks the changed tool
// call and tool result messages.
func TestRunsStep(t *testing.T) {
	a, b := weatherRuns()
	r, err := runsOf(a, b, Options{Step: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Pairs) != 1 || r.Pairs[0].A.LLMStep != 2 || r.Pairs[0].B.LLMStep != 2 {
		t.Fatalf("pairs %+v", r.Pairs)
	}
	var ops []string
	for _, m := range r.Pairs[0].Input {
		ops = append(ops, m.Op)
	}
	if got := strings.Join(ops, ","); got != "same,same,changed,changed" {
		t.Errorf("input messages %s, want same,same,changed,changed", got)
	}
	if r.First.Field != FieldInputMessages {
		t.Errorf("first difference %+v", r.First)
	}
	golden(t, "weather.step2.diff.json", jsonOf(t, r))
	if _, err := runsOf(a, b, Options{Step: 3}); err == nil || !strings.Contains(err.Error(), "LLM steps 1..2") {
		t.Errorf("step 3: %v", err)
	}
}

// TestRunsSelf: a run compared with itself has no difference.
func TestRunsSelf(t *testing.T) {
	a, _ := weatherRuns()
	r, err := runsOf(a, a, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Identical || r.First != nil || len(r.Pairs) != 3 {
		t.Fatalf("self diff: identical=%v first=%+v pairs=%d", r.Identical, r.First, len(r.Pairs))
	}
	w := *a
	w.Tier = "warm"
	if r, err := runsOf(&w, a, Options{}); err != nil || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "warm tier") {
		t.Errorf("warm run: %v %v", err, r)
	}
	c := *a
	c.Tier = "cold"
	if _, err := runsOf(a, &c, Options{}); err == nil || !strings.Contains(err.Error(), "cold tier") {
		t.Errorf("cold run: %v", err)
	}
	for _, f := range corpusRuns(t) {
		r, err := runsOf(f, f, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Identical {
			t.Errorf("%s with itself: %+v", f.TraceID, r.First)
		}
	}
}

func corpusRuns(t *testing.T) []*store.Run {
	t.Helper()
	dir := filepath.Join(corpus.Dir(t), "langfuse/worker/src/__tests__/chatml/framework-traces")
	var out []*store.Run
	files, err := filepath.Glob(filepath.Join(dir, "*.trace.json"))
	if err != nil || len(files) < 10 {
		t.Fatalf("corpus framework traces: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		f = filepath.Base(f)
		res, err := importer.ParseFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		tid := res.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID()
		out = append(out, &store.Run{TraceID: tid.String(), Traces: res.Traces, Logs: plog.NewLogs(), Tier: "hot"})
	}
	return out
}

// TestRunsCorpusFrameworks: runs of different frameworks (the Langfuse framework exports: OpenAI
// Agents SDK, Pydantic AI, CrewAI, LangGraph, LlamaIndex, Agno, AutoGen, ...) compare pairwise
// without error, every step of each appears exactly once in the alignment, and when both have LLM
// calls some are paired.
func TestRunsCorpusFrameworks(t *testing.T) {
	runs := corpusRuns(t)
	llmOf := func(r *store.Run) int {
		v, err := runview.Build(context.Background(), r, runview.Options{})
		if err != nil {
			t.Fatal(err)
		}
		steps, _, err := runSteps(v)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range steps {
			if s.Kind == KindLLM {
				n++
			}
		}
		return n
	}
	withLLM := 0
	for _, r := range runs {
		if llmOf(r) > 0 {
			withLLM++
		}
	}
	if withLLM < 8 {
		t.Errorf("only %d of %d corpus runs have LLM steps", withLLM, len(runs))
	}
	for i := range runs {
		for j := range runs {
			if i == j || runs[i].TraceID == runs[j].TraceID {
				continue // two exports of one trace
			}
			r, err := runsOf(runs[i], runs[j], Options{})
			if err != nil {
				t.Fatal(err)
			}
			var na, nb, paired int
			for _, p := range r.Pairs {
				if p.A != nil {
					na++
				}
				if p.B != nil {
					nb++
				}
				if p.A != nil && p.B != nil && p.A.Kind == KindLLM {
					paired++
				}
			}
			if na != r.A.Steps || nb != r.B.Steps {
				t.Errorf("%d vs %d: alignment covers %d/%d and %d/%d steps", i, j, na, r.A.Steps, nb, r.B.Steps)
			}
			if (llmOf(runs[i]) > 0 && llmOf(runs[j]) > 0 && paired == 0) || (r.Identical && na+nb > 0) {
				t.Errorf("%s vs %s: no LLM call paired (identical=%v)", runs[i].TraceID, runs[j].TraceID, r.Identical)
			}
			var txt bytes.Buffer
			if err := WriteText(&txt, r, false); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestAlignModelChange: steps whose model changed still pair (second pass on kind and tool
// name), an inserted step stays alone, and the Myers pass keeps common steps in order.
func TestAlignModelChange(t *testing.T) {
	a := []string{"llm|m1", "tool|x", "llm|m1", "tool|y", "llm|m1"}
	b := []string{"llm|m2", "tool|x", "tool|z", "llm|m2", "tool|y", "llm|m2"}
	weak := func(ks []string) []string {
		out := make([]string, len(ks))
		for i, k := range ks {
			out[i] = strings.Split(k, "|")[0]
			if out[i] == "tool" {
				out[i] = k
			}
		}
		return out
	}
	var got []string
	side := func(i int) string {
		if i < 0 {
			return "_"
		}
		return strconv.Itoa(i)
	}
	for _, o := range align(a, b, weak(a), weak(b)) {
		got = append(got, side(o.a)+":"+side(o.b))
	}
	if s := strings.Join(got, " "); s != "0:0 1:1 _:2 2:3 3:4 4:5" {
		t.Errorf("alignment %s", s)
	}
}

// TestTextCollapsesHistory: unchanged messages of a growing history are one line in the text.
func TestTextCollapsesHistory(t *testing.T) {
	r, err := runsOf(historyRun(0xa, 6, 6).run(), historyRun(0xb, 6, 3).run(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var txt bytes.Buffer
	if err := WriteText(&txt, r, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "    a[1..8] = b[1..8] (8 messages unchanged)\n    a[9] ~ b[9] assistant") {
		t.Errorf("history not collapsed:\n%s", txt.String())
	}
}

// TestJSONDiffPaths: objects by key, arrays by index, added and removed keys named.
func TestJSONDiffPaths(t *testing.T) {
	var out []JSONChange
	jsonDiff("", jsonValue(`{"a":{"b":[1,2,3]},"c":"x","d.e":1}`), jsonValue(`{"a":{"b":[1,5]},"c":"x","f":true}`), &out)
	var got []string
	for _, c := range out {
		got = append(got, c.Op+" "+c.Path)
	}
	if s := strings.Join(got, "; "); s != `changed a.b[1]; removed a.b[2]; removed ["d.e"]; added f` {
		t.Errorf("changes %s", s)
	}
}

// TestTextHeaderCounts: the header names each run's step count in English ("1 step", "3 steps").
func TestTextHeaderCounts(t *testing.T) {
	var b bytes.Buffer
	r := &Result{A: RunInfo{TraceID: "a", Steps: 1}, B: RunInfo{TraceID: "b", Steps: 3}, Identical: true}
	if err := WriteText(&b, r, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "--- a a  (1 step)\n") || !strings.Contains(b.String(), "+++ b b  (3 steps)\n") {
		t.Fatalf("header:\n%s", b.String())
	}
}

// runsOf compares two stored runs read by the read model with its default options.
func runsOf(a, b *store.Run, opts Options) (*Result, error) {
	va, err := runview.Build(context.Background(), a, runview.Options{})
	if err != nil {
		return nil, err
	}
	vb, err := runview.Build(context.Background(), b, runview.Options{})
	if err != nil {
		return nil, err
	}
	return Runs(va, vb, opts)
}

// TestRunWithItself: one View diffed with itself (its steps read by both sides at once: run
// under -race) is identical, every step paired.
func TestRunWithItself(t *testing.T) {
	a, _ := weatherRuns()
	v, err := runview.Build(context.Background(), a, runview.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Runs(v, v, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Identical || r.First != nil || r.A.Steps != r.B.Steps || r.A.Steps == 0 {
		t.Fatalf("a run diffed with itself: identical %v, first %+v, steps %d and %d", r.Identical, r.First, r.A.Steps, r.B.Steps)
	}
}
