package diff

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/llmhttp"
	"github.com/runagain/runagain/internal/store"
)

// Step kinds.
const (
	KindLLM  = "llm"  // an LLM call (genai.KindLLM, or an LLM API exchange recorded by the proxy)
	KindTool = "tool" // a tool execution span (genai.KindTool)
	KindHTTP = "http" // any other recorded HTTP exchange not inside an LLM or tool span (a tool API)
)

// step is one step of a run with what the comparison needs.
type step struct {
	Step
	strong, weak string
	calls        *CallMessages // KindLLM
	args, result any           // KindTool, KindHTTP: JSON values (a string when not JSON)
	hasArgs      bool
	hasResult    bool
}

// runSteps lists the steps of run in run order (store.Order): LLM calls and tool calls, plus
// recorded HTTP exchanges that are not the transport of an LLM or tool span.
func runSteps(run *store.Run, msgs MessagesFunc) ([]*step, runStats, error) {
	var st runStats
	_, flat := store.Order(run.Traces, nil)
	logs := logsBySpan(run.Logs)
	st.alerts = countAlerts(run.Logs)
	inside := map[pcommon.SpanID]bool{} // span is an LLM/tool step or below one
	var out []*step
	bySpan := map[pcommon.SpanID]*step{} // LLM steps, for the request their recorded exchange sent
	llm := 0
	var first, last pcommon.Timestamp
	for _, n := range flat {
		sp := n.Span
		if first == 0 || (sp.StartTimestamp() != 0 && sp.StartTimestamp() < first) {
			first = sp.StartTimestamp()
		}
		if sp.EndTimestamp() > last {
			last = sp.EndTimestamp()
		}
		if sp.Status().Code() == ptrace.StatusCodeError {
			st.errors++
		}
		under := inside[sp.ParentSpanID()]
		isFixture := fixture.IsFixture(sp) && !under
		if ps := bySpan[sp.ParentSpanID()]; ps != nil && under && fixture.IsFixture(sp) {
			ps.Request = mergeRequest(ps.Request, wireRequest(sp))
		}
		var ex *fixture.Exchange
		if isFixture {
			var err error
			if ex, err = fixture.FromSpan(sp); err != nil {
				return nil, st, fmt.Errorf("span %s: %w", sp.SpanID(), err)
			}
		}
		eff := sp // the span read: a recorded exchange without GenAI attributes is read as llmhttp derives it
		kind := genai.Classify(sp.Attributes())
		if isFixture && kind == genai.KindOther {
			c := ptrace.NewSpan()
			sp.CopyTo(c)
			if llmhttp.Derive(ex, c.Attributes()) != llmhttp.APINone {
				eff, kind = c, genai.Classify(c.Attributes())
			}
		}
		a := eff.Attributes()
		var s *step
		switch {
		case kind == genai.KindLLM:
			cm, err := msgs(eff, logs[sp.SpanID()])
			s = newStep(sp, KindLLM)
			if err != nil {
				s.MessagesError = err.Error()
			}
			rawFallback(&cm, a)
			s.calls = &cm
			s.Derived = cm.Derived
			s.Operation = str(a, genai.AttrOperationName)
			s.Model = genai.Model(a)
			u := genai.TokenUsage(a)
			s.InputTokens, s.OutputTokens = u.Input, u.Output
			s.CostUSD, s.Unpriced = store.SpanCost(a, sp.StartTimestamp())
			s.CostUSD = round(s.CostUSD)
			s.FinishReasons = genai.FinishReasons(a)
			s.MessagesSource = string(cm.InputSource)
			s.Request = requestOf(a, &cm)
			if isFixture {
				s.Request = mergeRequest(s.Request, wireRequest(sp))
			}
			bySpan[sp.SpanID()] = s
		case kind == genai.KindTool:
			s = newStep(sp, KindTool)
			s.Operation = str(a, genai.AttrOperationName)
			s.Name = genai.ToolName(a)
			if p := genai.ToolArguments(a); p.Value != "" {
				s.args, s.hasArgs = jsonValue(p.Value), true
			}
			for _, k := range []string{genai.AttrToolCallResult, "output.value"} {
				if v, ok := a.Get(k); ok {
					s.result, s.hasResult = jsonValue(v.AsString()), true
					break
				}
			}
		case isFixture:
			s = newStep(sp, KindHTTP)
			s.Operation = "http"
			path := ex.URL
			q := url.Values{}
			if u, err := url.Parse(ex.URL); err == nil {
				path, q = u.EscapedPath(), u.Query()
			}
			s.Name = ex.Method + " " + path
			args := map[string]any{}
			if len(q) > 0 {
				qm := map[string]any{}
				for k, vs := range q {
					if len(vs) == 1 {
						qm[k] = vs[0]
					} else {
						l := make([]any, len(vs))
						for i, v := range vs {
							l[i] = v
						}
						qm[k] = l
					}
				}
				args["query"] = qm
			}
			if len(ex.RequestBody) > 0 {
				args["body"] = jsonValue(string(ex.RequestBody))
			}
			s.args, s.hasArgs = args, true
			res := map[string]any{"status": ex.Status}
			if len(ex.ResponseBody) > 0 {
				res["body"] = jsonValue(string(ex.ResponseBody))
			}
			s.result, s.hasResult = res, true
			if ex.Status >= 400 {
				s.Status, s.Error = "error", fmt.Sprintf("HTTP %d", ex.Status)
			} else if ex.Error != "" {
				s.Status, s.Error = "error", ex.Error
			}
		}
		if s != nil {
			if s.Kind == KindLLM {
				llm++
				s.LLMStep = llm
				if s.Operation == "" {
					s.Operation = "chat"
				}
				if len(s.FinishReasons) == 0 && s.calls != nil {
					for _, m := range s.calls.Output {
						if m.FinishReason != "" {
							s.FinishReasons = append(s.FinishReasons, m.FinishReason)
						}
					}
				}
			} else if s.Operation == "" {
				s.Operation = "execute_tool"
			}
			s.Index = len(out) + 1
			s.strong = strings.Join([]string{s.Kind, s.Operation, s.Name, s.Model}, "\x00")
			s.weak = strings.Join([]string{s.Kind, s.Name}, "\x00")
			out = append(out, s)
			if s.Kind != KindHTTP {
				inside[sp.SpanID()] = true
			}
		}
		if under {
			inside[sp.SpanID()] = true
		}
	}
	st.steps = int64(len(out))
	for _, s := range out {
		st.inputTokens += s.InputTokens
		st.outputTokens += s.OutputTokens
		st.cost += s.CostUSD
		if s.Unpriced {
			st.unpriced++
		}
		switch s.Kind {
		case KindLLM:
			st.llm++
		default:
			st.tools++
		}
	}
	if last > first {
		st.durationMS = float64(last-first) / 1e6
	}
	return out, st, nil
}

type runStats struct {
	steps, llm, tools, errors, alerts, unpriced int64
	inputTokens, outputTokens                   int64
	cost, durationMS                            float64
}

func newStep(sp ptrace.Span, kind string) *step {
	s := &step{Step: Step{SpanID: sp.SpanID().String(), Kind: kind, Status: "unset"}}
	switch sp.Status().Code() {
	case ptrace.StatusCodeOk:
		s.Status = "ok"
	case ptrace.StatusCodeError:
		s.Status = "error"
		s.Error = sp.Status().Message()
		if s.Error == "" {
			s.Error = str(sp.Attributes(), genai.AttrErrorType)
		}
		if s.Error == "" {
			s.Error = "error"
		}
	}
	if e, b := sp.EndTimestamp(), sp.StartTimestamp(); e > b {
		s.DurationMS = float64(e-b) / 1e6
	}
	return s
}

func str(a pcommon.Map, k string) string {
	if v, ok := a.Get(k); ok {
		return v.AsString()
	}
	return ""
}

func logsBySpan(ld plog.Logs) map[pcommon.SpanID][]plog.LogRecord {
	out := map[pcommon.SpanID][]plog.LogRecord{}
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		sls := ld.ResourceLogs().At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				if !lr.SpanID().IsEmpty() {
					out[lr.SpanID()] = append(out[lr.SpanID()], lr)
				}
			}
		}
	}
	return out
}

func countAlerts(ld plog.Logs) int64 {
	var n int64
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		sls := ld.ResourceLogs().At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				if lrs.At(k).EventName() == store.AlertEventName {
					n++
				}
			}
		}
	}
	return n
}

// canonical is the JSON of v with sorted keys (Go's encoding of maps), for equality.
func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// rawInputKeys and rawOutputKeys hold an LLM call's input and output as text when no message
// form is recorded (OpenInference without llm.input_messages, Langfuse observations without OTel
// attributes): the diff then compares that text as one message, so two calls whose recorded
// content differs never compare as the same.
var (
	rawInputKeys  = []string{"input.value", "langfuse.observation.input", "llm.prompts"}
	rawOutputKeys = []string{"output.value", "langfuse.observation.output"}
)

// rawFallback fills an empty input or output of cm from the first raw key present; the source
// is "raw:<key>".
func rawFallback(cm *CallMessages, a pcommon.Map) {
	fill := func(msgs *[]Message, src *Source, keys []string, role string) {
		if *src != "" || len(*msgs) > 0 {
			return
		}
		for _, k := range keys {
			if v, ok := a.Get(k); ok && v.AsString() != "" {
				*msgs = []Message{{Role: role, Parts: []Part{{Type: "text", Content: v.AsString()}}}}
				*src = Source("raw:" + k)
				return
			}
		}
	}
	fill(&cm.Input, &cm.InputSource, rawInputKeys, "user")
	fill(&cm.Output, &cm.OutputSource, rawOutputKeys, "assistant")
}
