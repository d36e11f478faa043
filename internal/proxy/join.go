// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/runview/rule"
	"github.com/runagain/runagain/internal/store"
)

// One run per execution without traceparent (docs/architecture.md "Recorded versus inferred").
//
// An agent whose SDK ignores TRACEPARENT writes its own trace, and the proxy's exchanges would
// form a second one. After the command ends, the caller reads the runs that overlap it from the
// store and PlanJoin finds the agent's trace: the one whose resources belong to the execution,
// by the resource attribute the proxy put in OTEL_RESOURCE_ATTRIBUTES
// (runagainattr.ExecutionTraceID), else by process (process.pid or process.parent_pid among the
// command's process tree, internal/proctree). Join.Place then writes each exchange into that
// trace, under the agent's LLM or tool span it belongs to, with a span link to it marked
// inferred (runagainattr.LinkInferred, with the evidence), and the proxy's root span under the
// agent's root. The agent's spans are never rewritten: only the proxy's own spans are placed.
//
// An exchange belongs to an instrumented call when all of these hold:
//   - the same kind: an exchange derived into an LLM call and an LLM span that is a call (not an
//     aggregate over other calls, rule.Apply), or a tool call and a tool span of the same name;
//   - time: the exchange lies within the span, widened by JoinSlack on each side;
//   - model: the request models name the same model (rule.SameModel), when both are known;
//   - body: where the span records its input messages, the last text it sent is a text of the
//     exchange's request; a span whose messages say otherwise is not a match.
//
// An exchange whose request a rerun's --set changed (runagainattr.RerunEdits) is matched by kind
// and time only: the agent's span recorded the request before the change.
//
// Each span takes one exchange, in the exchanges' start order; among candidates a body match
// wins, then the span the exchange lies within (the least time outside it), then the nearest
// start. An exchange that matches no span goes under the proxy's root.
// The counting rule (internal/runview/rule) then counts a matched exchange once: it is below an
// instrumented LLM span.

// JoinSlack widens an agent span's interval when an exchange is matched to it: the proxy stamps
// the exchange when the request reaches it and the response has left it, the SDK before it sends
// and after it has read, on the same clock but through different timers.
const JoinSlack = 250 * time.Millisecond

// Execution is one run of a command under the proxy.
type Execution struct {
	Root       Root         // the proxy's root span of the run
	Pids       map[int]bool // the command and its descendants (internal/proctree)
	Start, End time.Time
}

// owns says how a resource of a span starting at t belongs to the execution: "resource",
// "process", or "" when it does not.
func (e Execution) owns(res pcommon.Map, t time.Time) string {
	if v, ok := res.Get(runagainattr.ExecutionTraceID); ok && v.AsString() == e.Root.TraceID.String() {
		return "resource"
	}
	if t.Before(e.Start.Add(-time.Second)) || t.After(e.End.Add(time.Second)) {
		return "" // a pid is reused: only spans within the execution count
	}
	for _, k := range []string{"process.pid", "process.parent_pid"} {
		if v, ok := res.Get(k); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v.AsString()))
			if err == nil && e.Pids[n] {
				return "process"
			}
		}
	}
	return ""
}

// AgentRun is a run read back from the store: its spans and log records.
type AgentRun struct {
	Traces ptrace.Traces
	Logs   plog.Logs
}

// agentCall is an instrumented LLM or tool call of the agent.
type agentCall struct {
	id         pcommon.SpanID
	kind       genai.Kind
	start, end time.Time
	model      string
	tool       string
	lastText   string // the last text of its input messages ("" when not recorded)
	used       bool
}

// Join places an execution's exchanges in the agent's trace (PlanJoin).
type Join struct {
	Trace     pcommon.TraceID // the agent's trace
	AgentRoot pcommon.SpanID  // its root span (empty when not received)
	Evidence  string          // "resource" or "process"
	root      Root
	// rootStart and rootEnd are the agent's root span's (PlaceRoot keeps the proxy's root within).
	rootStart, rootEnd pcommon.Timestamp
	calls              []*agentCall
	// Linked and Unlinked count the exchanges placed under an agent span and under the proxy's root;
	// Edited counts the linked ones matched by time alone (their request changed by a rerun's --set).
	Linked, Unlinked, Edited int
}

// PlanJoin finds the agent's own trace among runs (the runs that overlap the execution, the
// proxy's own excluded): the trace with the most spans whose resource belongs to ex. ok is false
// when no span does.
func PlanJoin(ex Execution, runs []AgentRun) (*Join, bool) {
	type cand struct {
		td       ptrace.Traces
		logs     plog.Logs
		spans    int
		evidence string
	}
	byTrace := map[pcommon.TraceID]*cand{}
	for _, r := range runs {
		rss := r.Traces.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			rs := rss.At(i)
			sss := rs.ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				sps := sss.At(j).Spans()
				for k := 0; k < sps.Len(); k++ {
					sp := sps.At(k)
					if sp.TraceID() == ex.Root.TraceID {
						continue
					}
					how := ex.owns(rs.Resource().Attributes(), sp.StartTimestamp().AsTime())
					if how == "" {
						continue
					}
					c := byTrace[sp.TraceID()]
					if c == nil {
						c = &cand{td: r.Traces, logs: r.Logs}
						byTrace[sp.TraceID()] = c
					}
					c.spans++
					if c.evidence == "" || how == "resource" {
						c.evidence = how
					}
				}
			}
		}
	}
	var best pcommon.TraceID
	var bc *cand
	for id, c := range byTrace {
		if bc == nil || c.spans > bc.spans || c.spans == bc.spans && string(id[:]) < string(best[:]) {
			best, bc = id, c
		}
	}
	if bc == nil {
		return nil, false
	}
	j := &Join{Trace: best, Evidence: bc.evidence, root: ex.Root}
	logsBySpan := map[pcommon.SpanID][]plog.LogRecord{}
	rls := bc.logs.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		sls := rls.At(i).ScopeLogs()
		for k := 0; k < sls.Len(); k++ {
			lrs := sls.At(k).LogRecords()
			for m := 0; m < lrs.Len(); m++ {
				if lr := lrs.At(m); lr.TraceID() == best {
					logsBySpan[lr.SpanID()] = append(logsBySpan[lr.SpanID()], lr)
				}
			}
		}
	}
	var spans []ptrace.Span
	eachSpan(bc.td, func(sp ptrace.Span) {
		if sp.TraceID() == best {
			spans = append(spans, sp)
		}
	})
	rs := make([]rule.Span, len(spans))
	for i, sp := range spans {
		rs[i] = rule.FromSpan(sp)
		if sp.ParentSpanID().IsEmpty() && (j.AgentRoot.IsEmpty() || sp.StartTimestamp() < j.rootStart) {
			j.AgentRoot, j.rootStart, j.rootEnd = sp.SpanID(), sp.StartTimestamp(), max(sp.EndTimestamp(), sp.StartTimestamp())
		}
	}
	for i, v := range rule.Apply(rs) {
		s := rs[i]
		if s.Exchange || v.Aggregate || (s.Kind != genai.KindLLM && s.Kind != genai.KindTool) {
			continue
		}
		c := &agentCall{id: s.ID, kind: s.Kind, start: s.Start.AsTime(), end: max(s.End, s.Start).AsTime(), model: s.Model, tool: s.Tool}
		if s.Kind == genai.KindLLM {
			if cm, err := genai.LLMCallMessages(spans[i], logsBySpan[s.ID]); err == nil || len(cm.Input) > 0 {
				if t := inputTexts(cm.Input); len(t) > 0 {
					c.lastText = t[len(t)-1]
				}
			}
		}
		j.calls = append(j.calls, c)
	}
	sort.SliceStable(j.calls, func(a, b int) bool { return j.calls[a].start.Before(j.calls[b].start) })
	return j, true
}

// inputTexts lists the text parts of msgs, trimmed, in order.
func inputTexts(msgs []genai.Message) []string {
	var out []string
	for _, m := range msgs {
		for _, p := range m.Parts {
			if t := strings.TrimSpace(p.Content); t != "" && (p.Type == "text" || p.Type == "") {
				out = append(out, t)
			}
		}
	}
	return out
}

// Place writes the exchange spans of td into the agent's trace (each under its call, or the
// proxy's root). Call it in the exchanges' start order (SortByStart).
func (j *Join) Place(td ptrace.Traces) {
	eachSpan(td, func(sp ptrace.Span) {
		sp.SetTraceID(j.Trace)
		c, evidence := j.match(sp)
		if c == nil {
			sp.SetParentSpanID(j.root.SpanID)
			j.Unlinked++
			return
		}
		c.used = true
		j.Linked++
		if _, ok := sp.Attributes().Get(runagainattr.RerunEdits); ok {
			j.Edited++
		}
		sp.SetParentSpanID(c.id)
		l := sp.Links().AppendEmpty()
		l.SetTraceID(j.Trace)
		l.SetSpanID(c.id)
		l.Attributes().PutStr(runagainattr.LinkType, runagainattr.LinkInferred)
		ev := l.Attributes().PutEmptySlice(runagainattr.LinkEvidence)
		for _, e := range evidence {
			ev.AppendEmpty().SetStr(e)
		}
	})
}

// PlaceRoot writes the proxy's root span (td) into the agent's trace, under the agent's root,
// and marks it joined. The command starts before the agent's root span (the runtime starts up)
// and ends after it (the SDK flushes), so a child as it was would sit outside its parent in every
// view: its interval is cut to the agent root's, and the process's own times are kept in
// process.creation.time and process.exit.time (OpenTelemetry process semantic conventions,
// RFC 3339 with nanoseconds).
func (j *Join) PlaceRoot(td ptrace.Traces) {
	eachSpan(td, func(sp ptrace.Span) {
		sp.SetTraceID(j.Trace)
		sp.SetParentSpanID(j.AgentRoot)
		sp.Attributes().PutStr(runagainattr.Joined, runagainattr.LinkInferred)
		if j.AgentRoot.IsEmpty() || j.rootStart == 0 {
			return
		}
		start, end := sp.StartTimestamp(), sp.EndTimestamp()
		a := sp.Attributes()
		a.PutStr("process.creation.time", start.AsTime().UTC().Format(time.RFC3339Nano))
		a.PutStr("process.exit.time", end.AsTime().UTC().Format(time.RFC3339Nano))
		start = min(max(start, j.rootStart), j.rootEnd)
		sp.SetStartTimestamp(start)
		sp.SetEndTimestamp(max(min(end, j.rootEnd), start))
	})
}

// match finds the agent call an exchange span belongs to, and the evidence.
func (j *Join) match(sp ptrace.Span) (*agentCall, []string) {
	a := sp.Attributes()
	kind := genai.Classify(a)
	if kind != genai.KindLLM && kind != genai.KindTool {
		return nil, nil
	}
	start, end := sp.StartTimestamp().AsTime(), max(sp.EndTimestamp(), sp.StartTimestamp()).AsTime()
	model, tool := genai.RequestModel(a), genai.ToolName(a)
	_, edited := a.Get(runagainattr.RerunEdits)
	if edited {
		model = "" // a rerun's --set changed the request after the agent's span recorded it
	}
	var texts map[string]bool
	if kind == genai.KindLLM && !edited {
		if cm, err := genai.LLMCallMessages(sp, nil); err == nil || len(cm.Input) > 0 {
			texts = map[string]bool{}
			for _, t := range inputTexts(cm.Input) {
				texts[t] = true
			}
		}
	}
	var best *agentCall
	var bestBody bool
	var bestOut, bestGap time.Duration
	for _, c := range j.calls {
		if c.used || c.kind != kind || start.Before(c.start.Add(-JoinSlack)) || end.After(c.end.Add(JoinSlack)) {
			continue
		}
		if kind == genai.KindLLM && !rule.SameModel(model, c.model) || kind == genai.KindTool && tool != "" && c.tool != "" && tool != c.tool {
			continue
		}
		body := false
		if c.lastText != "" && len(texts) > 0 {
			if !texts[c.lastText] {
				continue // the span recorded another request
			}
			body = true
		}
		// How far the exchange sticks out of the span (0: within it), then how far apart they start.
		out := max(c.start.Sub(start), 0) + max(end.Sub(c.end), 0)
		gap := start.Sub(c.start).Abs()
		better := best == nil || body && !bestBody ||
			body == bestBody && (out < bestOut || out == bestOut && gap < bestGap)
		if better {
			best, bestBody, bestOut, bestGap = c, body, out, gap
		}
	}
	if best == nil {
		return nil, nil
	}
	ev := []string{j.Evidence, "time"}
	if kind == genai.KindLLM && model != "" && best.model != "" {
		ev = append(ev, "model")
	}
	if kind == genai.KindTool && tool != "" && best.tool != "" {
		ev = append(ev, "tool")
	}
	if bestBody {
		ev = append(ev, "body")
	}
	return best, ev
}

// SortByStart orders exchange batches by their first span's start.
func SortByStart(tds []ptrace.Traces) {
	first := func(td ptrace.Traces) (t pcommon.Timestamp) {
		eachSpan(td, func(sp ptrace.Span) {
			if t == 0 || sp.StartTimestamp() < t {
				t = sp.StartTimestamp()
			}
		})
		return t
	}
	sort.SliceStable(tds, func(a, b int) bool { return first(tds[a]) < first(tds[b]) })
}

func eachSpan(td ptrace.Traces, f func(ptrace.Span)) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			sps := sss.At(j).Spans()
			for k := 0; k < sps.Len(); k++ {
				f(sps.At(k))
			}
		}
	}
}

// JoinPoll is how often WaitJoin reads the store.
const JoinPoll = 250 * time.Millisecond

// ErrOwnTrace is WaitJoin's answer when the agent's spans are in the execution's own trace: its
// SDK read TRACEPARENT, so the run is already one and there is nothing to join.
var ErrOwnTrace = errors.New("the agent's spans are in the execution's own trace (its SDK read TRACEPARENT)")

// WaitJoin reads the runs that overlap ex from r until the agent's trace is found with its root
// span and two reads in a row give it the same number of spans (its last batches stored), or
// until wait has passed (then it joins what it found, if anything). nil, nil: no run belongs to
// ex. nil, ErrOwnTrace as soon as the execution's own trace holds a span of the agent's (by the
// resource attribute, Execution.owns): no other trace is waited for. A store error is returned
// only when nothing was found.
func WaitJoin(ctx context.Context, r store.Reader, ex Execution, wait time.Duration) (*Join, error) {
	deadline := time.Now().Add(wait)
	var last *Join
	lastSpans := -1
	var lastErr error
	for {
		runs, own, err := overlapping(ctx, r, ex, last == nil)
		switch {
		case err != nil:
			lastErr = err
		case own && last == nil:
			return nil, ErrOwnTrace
		default:
			if j, ok := PlanJoin(ex, runs); ok {
				n := spanCount(runs, j.Trace)
				if last != nil && last.Trace == j.Trace && n == lastSpans && !j.AgentRoot.IsEmpty() {
					return j, nil
				}
				last, lastSpans = j, n
			}
		}
		if !time.Now().Before(deadline) {
			if last != nil {
				return last, nil
			}
			return nil, lastErr
		}
		select {
		case <-ctx.Done():
			return last, nil
		case <-time.After(JoinPoll):
		}
	}
}

// overlapping reads the runs other than the execution's own that started from a second before ex
// until now. With checkOwn it also reads the execution's own run, and own says whether it holds
// a span whose resource carries its runagainattr.ExecutionTraceID (the agent's, not the proxy's
// or runagain mcp's); once another trace is a candidate that question is settled and the own run
// (which grows with every exchange) is not read again.
func overlapping(ctx context.Context, r store.Reader, ex Execution, checkOwn bool) (runs []AgentRun, own bool, err error) {
	rows, err := r.Runs(ctx, store.RunFilter{Since: ex.Start.Add(-time.Second)})
	if err != nil {
		return nil, false, err
	}
	for _, row := range rows {
		isOwn := row.TraceID == ex.Root.TraceID.String()
		if row.Start.After(ex.End.Add(time.Second)) || isOwn && !checkOwn {
			continue
		}
		run, err := r.Run(ctx, row.TraceID)
		if err != nil {
			continue // gone, or a tier that cannot read it: not this execution's
		}
		if isOwn {
			own = own || hasOwnedResource(run.Traces, ex)
			continue
		}
		runs = append(runs, AgentRun{Traces: run.Traces, Logs: run.Logs})
	}
	return runs, own, nil
}

// hasOwnedResource: td has a span in ex's trace whose resource carries ex's
// runagainattr.ExecutionTraceID.
func hasOwnedResource(td ptrace.Traces, ex Execution) bool {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		if v, ok := rs.Resource().Attributes().Get(runagainattr.ExecutionTraceID); !ok || v.AsString() != ex.Root.TraceID.String() {
			continue
		}
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			sps := sss.At(j).Spans()
			for k := 0; k < sps.Len(); k++ {
				if sps.At(k).TraceID() == ex.Root.TraceID {
					return true
				}
			}
		}
	}
	return false
}

func spanCount(runs []AgentRun, trace pcommon.TraceID) int {
	n := 0
	for _, r := range runs {
		eachSpan(r.Traces, func(sp ptrace.Span) {
			if sp.TraceID() == trace {
				n++
			}
		})
	}
	return n
}
