// SPDX-License-Identifier: Apache-2.0

// Package rule is the counting rule of a run (docs/architecture.md "One read model"): which spans are steps
// (LLM calls, tool calls, HTTP and MCP exchanges), and whose usage and cost count in the run's
// totals. It is one function, Apply, called by the read model (internal/runview) and by every
// writer of run totals (the store's run index and summaries, agent_guard), so that every number
// shown for a run counts the same calls.
//
// The rule:
//   - A step is counted once.
//   - An HTTP exchange derived into an LLM call (runagain.genai.derived, or derived at read time
//     from an older recording) counts only where no instrumented LLM span covers it: it is a
//     descendant of an instrumented LLM span, or it overlaps in time with an instrumented LLM span
//     of the same request (same trace, compatible request model) that covers no other exchange.
//     An exchange derived into an MCP tool call is covered the same way by an instrumented tool span
//     of the same tool.
//   - An aggregate span's usage is never added to its children's: an agent or workflow span
//     (genai.KindAgent) adds none, and an instrumented LLM span with instrumented LLM calls below
//     it (a framework's call over the client library's, Vercel's ai.generateText over
//     ai.generateText.doGenerate) is an aggregate, not a step: its usage counts only when no call
//     below it records any.
//   - Any other recorded HTTP exchange is an HTTP step (a tool API), unless it is the transport of
//     a counted LLM or tool step (below it, or below the span its inferred link names).
//   - An exchange's span link marked inferred (runagain.link.type "inferred": `proxy --record`
//     joining an agent's trace) counts as parentage: a derived exchange linked to an instrumented
//     span of its kind is covered by it, before any overlap is looked for.
//   - A covered exchange whose request a rerun's --set changed (runagain.rerun.edits) counts in
//     place of the span that covers it: the agent's span recorded the request before the change
//     (the model it thought it asked for, the prompt before the edit), the exchange what was sent
//     and answered (so its request model is not compared with the span's when looking for the
//     span that covers it). The exchange is the step and its usage counts; the covering span is
//     not a step, and its usage counts only when the exchange records none. The exchange stays
//     covered (CoveredBy: placed under that call, the call's transport for failure signatures).
package rule

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/runagainattr"
)

// Span is what the rule reads of one span of a run.
type Span struct {
	ID, Parent pcommon.SpanID
	// Link is the span an inferred span link of the span points at (runagainattr.LinkInferred);
	// empty when none.
	Link       pcommon.SpanID
	Start, End pcommon.Timestamp // Unix ns; End before Start is read as Start
	// Kind is genai.Classify of the span as read (a derived exchange's derived attributes included).
	Kind genai.Kind
	// Exchange marks a recorded HTTP exchange (runagain.fixture.source); Derived, one whose GenAI
	// attributes were read from its bodies (at record time or now).
	Exchange, Derived bool
	// Model is the request model (genai.RequestModel), Tool the tool name: what makes an
	// instrumented span and an exchange the same request.
	Model, Tool string
	// HasUsage: the span records token usage (genai.TokenUsage non-zero).
	HasUsage bool
	// Edited: an exchange whose request a rerun's --set changed (runagainattr.RerunEdits).
	Edited bool
}

// StepKind says what a step is.
type StepKind string

// Step kinds.
const (
	StepNone StepKind = ""
	StepLLM  StepKind = "llm"
	StepTool StepKind = "tool"
	StepHTTP StepKind = "http"
)

// Verdict is the rule's answer for one span.
type Verdict struct {
	Step StepKind // StepNone: not a step
	// CountUsage: the span's token usage and cost count in the run's totals.
	CountUsage bool
	// CoveredBy is the index of the instrumented span that covers this derived exchange, -1 when
	// not covered.
	CoveredBy int
	// Aggregate: an LLM span over other instrumented LLM calls (not a step).
	Aggregate bool
	// InPlace: a covered exchange that a rerun edited (Span.Edited), counted in place of the span
	// CoveredBy names (the package documentation's last rule): the step is this exchange.
	InPlace bool
}

// Apply returns the verdict for each span of one run (spans of one trace, in any order; a span
// id seen twice is read as the first). It reads only the fields of Span, so a writer can call it
// on the few columns it stores.
func Apply(spans []Span) []Verdict {
	out := make([]Verdict, len(spans))
	byID := make(map[pcommon.SpanID]int, len(spans))
	for i, s := range spans {
		out[i].CoveredBy = -1
		if _, dup := byID[s.ID]; !dup {
			byID[s.ID] = i
		}
	}
	// ancestors calls f for each ancestor of span i, nearest first, until f returns false.
	ancestors := func(i int, f func(j int) bool) {
		seen := 0
		for p := spans[i].Parent; !p.IsEmpty() && seen < len(spans); seen++ {
			j, ok := byID[p]
			if !ok || j == i {
				return
			}
			if !f(j) {
				return
			}
			p = spans[j].Parent
		}
	}
	instrumented := func(i int, k genai.Kind) bool { return !spans[i].Exchange && spans[i].Kind == k }

	// Aggregates: instrumented LLM spans with an instrumented LLM call below them.
	usageBelow := make([]bool, len(spans))
	for i := range spans {
		if !instrumented(i, genai.KindLLM) {
			continue
		}
		ancestors(i, func(j int) bool {
			if instrumented(j, genai.KindLLM) {
				out[j].Aggregate = true
				if spans[i].HasUsage {
					usageBelow[j] = true
				}
			}
			return true
		})
	}
	// Derived exchanges below an instrumented span of their kind are covered by the nearest.
	taken := make([]bool, len(spans)) // instrumented spans that cover an exchange below them
	derivedKind := func(i int) genai.Kind {
		s := spans[i]
		if !s.Exchange || !s.Derived || (s.Kind != genai.KindLLM && s.Kind != genai.KindTool) {
			return ""
		}
		return s.Kind
	}
	for i := range spans {
		k := derivedKind(i)
		if k == "" {
			continue
		}
		if j, ok := byID[spans[i].Link]; ok && !spans[i].Link.IsEmpty() && j != i && !taken[j] && instrumented(j, k) &&
			(k == genai.KindLLM || sameName(spans[j].Tool, spans[i].Tool)) {
			out[i].CoveredBy, taken[j] = j, true
			continue
		}
		ancestors(i, func(j int) bool {
			if instrumented(j, k) && (k == genai.KindLLM || sameName(spans[j].Tool, spans[i].Tool)) {
				out[i].CoveredBy, taken[j] = j, true
				return false
			}
			return true
		})
	}
	// Exchanges not below one: covered by an overlapping instrumented call of the same request,
	// one exchange per call, in the order given (run order: the earliest call first).
	for i := range spans {
		k := derivedKind(i)
		if k == "" || out[i].CoveredBy >= 0 {
			continue
		}
		for j := range spans {
			if taken[j] || !instrumented(j, k) || out[j].Aggregate || !overlaps(spans[i], spans[j]) {
				continue
			}
			if k == genai.KindLLM && !spans[i].Edited && !SameModel(spans[i].Model, spans[j].Model) ||
				k == genai.KindTool && !sameName(spans[i].Tool, spans[j].Tool) {
				continue
			}
			out[i].CoveredBy, taken[j] = j, true
			break
		}
	}
	// Steps and usage.
	for i, s := range spans {
		v := &out[i]
		switch {
		case v.CoveredBy >= 0:
			// covered: neither a step nor counted
		case s.Kind == genai.KindAgent:
			// an aggregate of its calls: no usage
		case s.Kind == genai.KindLLM && v.Aggregate:
			v.CountUsage = s.HasUsage && !usageBelow[i]
		case s.Kind == genai.KindLLM:
			v.Step, v.CountUsage = StepLLM, s.HasUsage
		case s.Kind == genai.KindTool:
			v.Step, v.CountUsage = StepTool, s.HasUsage
		default:
			v.CountUsage = s.HasUsage
		}
	}
	// Other exchanges: HTTP steps unless the transport of a step above them.
	for i, s := range spans {
		if !s.Exchange || out[i].Step != StepNone || out[i].CoveredBy >= 0 || s.Kind == genai.KindLLM || s.Kind == genai.KindTool {
			continue
		}
		transport := false
		step := func(j int) bool { return out[j].Step == StepLLM || out[j].Step == StepTool || out[j].Aggregate }
		if j, ok := byID[s.Link]; ok && !s.Link.IsEmpty() && j != i && step(j) {
			transport = true
		}
		ancestors(i, func(j int) bool {
			if step(j) {
				transport = true
				return false
			}
			return true
		})
		if !transport {
			out[i].Step = StepHTTP
		}
	}
	// Edited exchanges count in place of the calls that cover them.
	for i, s := range spans {
		j := out[i].CoveredBy
		if j < 0 || !s.Edited {
			continue
		}
		v := &out[i]
		v.InPlace, v.CountUsage = true, s.HasUsage
		v.Step = StepLLM
		if s.Kind == genai.KindTool {
			v.Step = StepTool
		}
		out[j].Step = StepNone
		if s.HasUsage {
			out[j].CountUsage = false
		}
	}
	return out
}

// overlaps reports whether the two spans' [start, end] intervals meet.
func overlaps(a, b Span) bool {
	ae, be := max(a.End, a.Start), max(b.End, b.Start)
	return a.Start <= be && b.Start <= ae
}

// SameModel: request models name the same request when either is unknown, they are equal, or one
// is the other with a version suffix ("gpt-4o-mini" and "gpt-4o-mini-2024-07-18"), ignoring
// case and a provider prefix ("openai/gpt-4o").
func SameModel(a, b string) bool {
	a, b = bareModel(a), bareModel(b)
	if a == "" || b == "" || a == b {
		return true
	}
	return strings.HasPrefix(a, b+"-") || strings.HasPrefix(b, a+"-")
}

func bareModel(m string) string {
	m = strings.ToLower(strings.TrimSpace(m))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	return m
}

// sameName: tool names match when either is unknown or they are equal.
func sameName(a, b string) bool { return a == "" || b == "" || a == b }

// FromSpan is what the rule reads of a span as recorded: its kind (genai.Classify), whether it is
// a recorded exchange (runagain.fixture.source) and whether its GenAI attributes were derived
// (runagain.genai.derived). The read model passes derived itself for exchanges it reads now.
func FromSpan(s ptrace.Span) Span {
	a := s.Attributes()
	_, exchange := a.Get(runagainattr.FixtureSource)
	derived := false
	if v, ok := a.Get(runagainattr.GenAIDerived); ok && v.Type() == pcommon.ValueTypeBool {
		derived = v.Bool()
	}
	var link pcommon.SpanID
	for k := 0; k < s.Links().Len(); k++ {
		l := s.Links().At(k)
		if t, ok := l.Attributes().Get(runagainattr.LinkType); ok && t.AsString() == runagainattr.LinkInferred {
			link = l.SpanID()
			break
		}
	}
	_, edited := a.Get(runagainattr.RerunEdits)
	return Span{ID: s.SpanID(), Parent: s.ParentSpanID(), Link: link, Start: s.StartTimestamp(), End: s.EndTimestamp(),
		Kind: genai.Classify(a), Exchange: exchange, Derived: derived, Model: genai.RequestModel(a),
		Tool: genai.ToolName(a), HasUsage: genai.TokenUsage(a) != (genai.Usage{}), Edited: exchange && edited}
}

// SpanKey names a span: its trace and span ids.
type SpanKey struct {
	Trace pcommon.TraceID
	Span  pcommon.SpanID
}

// Uncounted returns the spans of td that record usage the rule does not count (agent spans,
// which never add usage, are left out), applying it to the spans of each trace in td together:
// what one batch tells. Spans of the run that arrive in other batches are not seen: a writer that
// meters batch by batch (agent_guard, the cold tier's session partials) uses a Window; the run
// index applies the rule over the whole stored run. nil when every span's usage counts.
func Uncounted(td ptrace.Traces) map[SpanKey]bool {
	var out map[SpanKey]bool
	for tid, spans := range batchSpans(td) {
		if len(spans) < 2 {
			continue
		}
		for i, v := range Apply(spans) {
			if !v.CountUsage && spans[i].HasUsage && spans[i].Kind != genai.KindAgent {
				if out == nil {
					out = map[SpanKey]bool{}
				}
				out[SpanKey{tid, spans[i].ID}] = true
			}
		}
	}
	return out
}
