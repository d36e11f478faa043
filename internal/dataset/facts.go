package dataset

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/llmhttp"
	"github.com/runagain/runagain/internal/store"
)

// Event names and attributes read from a run's log records (agent_guard alerts and replay
// divergences; their writers are connector/agentguardconnector and internal/proxy).
const (
	EventAlert      = "runagain.alert"
	AttrAlertKind   = "alert.kind"
	EventDivergence = "runagain.replay.divergence"
	attrDivField    = "runagain.replay.divergence.field"
	attrDivExpected = "runagain.replay.divergence.expected"
	attrDivGot      = "runagain.replay.divergence.got"
	attrDivRequest  = "runagain.replay.request.index"
)

// ToolCall is one tool call the model asked for.
type ToolCall struct {
	Name      string `json:"name"`
	Arguments any    `json:"arguments,omitempty"` // JSON value
}

// Divergence is the first replayed request that matched no recorded one.
type Divergence struct {
	Request int    `json:"request"` // 1-based
	Detail  string `json:"detail"`  // field: expected X, got Y
}

// Facts are what expectations are checked against, read from one run.
type Facts struct {
	Input     string        `json:"input,omitempty"` // last user message of the first LLM call
	Output    string        `json:"output"`          // text of the last output message of the last LLM call
	HasOutput bool          `json:"has_output"`
	Tools     []ToolCall    `json:"tools"`
	Steps     int64         `json:"steps"`  // LLM calls
	Tokens    int64         `json:"tokens"` // input + output tokens over every LLM call
	CostUSD   float64       `json:"cost_usd"`
	Unpriced  int64         `json:"unpriced,omitempty"` // LLM calls with usage but no known price
	Duration  time.Duration `json:"duration_ns"`
	Alerts    []string      `json:"alerts,omitempty"` // alert.kind of each agent_guard alert
	// Divergence is the run's first replay divergence, if any.
	Divergence *Divergence `json:"divergence,omitempty"`
	// MessagesSource says where the LLM calls were read from: "spans" (GenAI spans) or
	// "http" (derived from recorded HTTP exchanges).
	MessagesSource string `json:"messages_source,omitempty"`
}

// RunFacts reads the facts of a run (payloads rehydrated). LLM calls are the run's GenAI LLM
// spans (genai.Classify) read with genai.LLMCallMessages; a run without any (an agent recorded
// only through the proxy) uses its recorded HTTP exchanges instead, with the GenAI attributes the
// proxy or importer derived at record time (docs/architecture.md "Derived at record time"; for older
// recordings llmhttp.Derive reads them from the bodies now, on a copy). Tool calls are the
// tool_call parts of the calls' output messages, else the run's tool spans (MCP tools/call
// exchanges included).
func RunFacts(td ptrace.Traces, ld plog.Logs) (*Facts, error) {
	f := &Facts{Tools: []ToolCall{}}
	_, flat := store.Order(td, nil)
	logsBySpan := map[pcommon.SpanID][]plog.LogRecord{}
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		sls := ld.ResourceLogs().At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			for k := 0; k < sls.At(j).LogRecords().Len(); k++ {
				lr := sls.At(j).LogRecords().At(k)
				logsBySpan[lr.SpanID()] = append(logsBySpan[lr.SpanID()], lr)
			}
		}
	}
	var first, last time.Time
	type call struct {
		msgs  genai.CallMessages
		attrs pcommon.Map
		start pcommon.Timestamp
	}
	var spanCalls, httpCalls []call
	var toolSpans []ToolCall
	for _, n := range flat {
		sp := n.Span
		s, e := sp.StartTimestamp().AsTime(), sp.EndTimestamp().AsTime()
		if first.IsZero() || s.Before(first) {
			first = s
		}
		if e.After(last) {
			last = e
		}
		a := sp.Attributes()
		fromHTTP := fixture.IsFixture(sp)
		if fromHTTP && genai.Classify(a) == genai.KindOther {
			// Recorded before the proxy and importer derived GenAI attributes at record time:
			// read them from the bodies now, on a copy (the recorded span is never changed).
			if ex, err := fixture.FromSpan(sp); err == nil {
				tmp := ptrace.NewSpan()
				sp.CopyTo(tmp)
				if llmhttp.Derive(ex, tmp.Attributes()) != llmhttp.APINone {
					sp, a = tmp, tmp.Attributes()
				}
			}
		}
		switch genai.Classify(a) {
		case genai.KindLLM:
			cm, err := genai.LLMCallMessages(sp, logsBySpan[sp.SpanID()])
			if err != nil {
				return nil, fmt.Errorf("span %s: %w", sp.SpanID(), err)
			}
			c := call{cm, a, sp.StartTimestamp()}
			if fromHTTP {
				httpCalls = append(httpCalls, c)
			} else {
				spanCalls = append(spanCalls, c)
			}
		case genai.KindTool:
			tc := ToolCall{Name: genai.ToolName(a)}
			if p := genai.ToolArguments(a); p.Value != "" {
				tc.Arguments = jsonValue(p.Value)
			}
			toolSpans = append(toolSpans, tc)
		}
	}
	calls := spanCalls
	f.MessagesSource = "spans"
	if len(calls) == 0 && len(httpCalls) > 0 {
		calls, f.MessagesSource = httpCalls, "http"
	}
	if len(calls) == 0 {
		f.MessagesSource = ""
	}
	if !first.IsZero() {
		f.Duration = last.Sub(first)
	}
	for i, c := range calls {
		f.Steps++
		f.Tokens += genai.TokenUsage(c.attrs).Total()
		usd, unpriced := store.SpanCost(c.attrs, c.start)
		f.CostUSD += usd
		if unpriced {
			f.Unpriced++
		}
		if i == 0 {
			f.Input = lastText(c.msgs.Input, "user")
		}
		for _, m := range c.msgs.Output {
			for _, p := range m.Parts {
				if p.Type == "tool_call" {
					f.Tools = append(f.Tools, ToolCall{Name: p.Name, Arguments: p.Arguments})
				}
			}
		}
		if i == len(calls)-1 && len(c.msgs.Output) > 0 {
			f.Output = text(c.msgs.Output[len(c.msgs.Output)-1])
			f.HasOutput = true
		}
	}
	if len(f.Tools) == 0 && len(toolSpans) > 0 {
		f.Tools = toolSpans
	}
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		sls := ld.ResourceLogs().At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				a := lr.Attributes()
				switch lr.EventName() {
				case EventAlert:
					kind := "unknown"
					if v, ok := a.Get(AttrAlertKind); ok {
						kind = v.AsString()
					}
					f.Alerts = append(f.Alerts, kind)
				case EventDivergence:
					d := &Divergence{Detail: attrStr(a, attrDivField) + ": expected " + attrStr(a, attrDivExpected) + ", got " + attrStr(a, attrDivGot)}
					if v, ok := a.Get(attrDivRequest); ok {
						d.Request = int(v.Int())
					}
					if f.Divergence == nil || d.Request < f.Divergence.Request {
						f.Divergence = d
					}
				}
			}
		}
	}
	return f, nil
}

func attrStr(a pcommon.Map, k string) string {
	if v, ok := a.Get(k); ok {
		return v.AsString()
	}
	return ""
}

func text(m genai.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == "text" {
			b.WriteString(p.Content)
		}
	}
	return b.String()
}

func lastText(ms []genai.Message, role string) string {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == role {
			return text(ms[i])
		}
	}
	return ""
}

func jsonValue(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	return v
}
