// SPDX-License-Identifier: Apache-2.0

// Package runview is the read model of a run (docs/architecture.md "One read model"): Build turns a stored
// run into the one structure every view renders — `show` and `show --step`, the UI, `diff`,
// dataset facts and expectations, `sessions --failed`, `test` and `rerun`. It holds the ordered
// tree (docs/architecture.md "Order"), the steps (LLM calls, tool calls, HTTP and MCP exchanges, each counted
// once by internal/runview/rule), their messages (internal/genai), usage and cost (priced once
// with the Prices given, never a process-wide table), the records pointing at the run (alerts,
// divergences) and its completeness (orphans, a missing root).
//
// No view derives steps, counts or cost on its own: a number two views show for a run comes from
// the same View.
package runview

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/llmhttp"
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/runview/rule"
	"github.com/runagain/runagain/internal/store"
)

// Resolver fetches offloaded payloads (K_ref) into a span or log record in place
// (payloadref.Resolver).
type Resolver interface {
	RehydrateSpan(ctx context.Context, s ptrace.Span) error
	RehydrateLogRecord(ctx context.Context, lr plog.LogRecord) error
}

// Options configure Build. The zero value reads with the embedded price table and the default
// session and sequence keys, and rehydrates nothing.
type Options struct {
	// Prices prices each counted call once (the runagain_storage extension's table with its
	// overrides: Config.Prices). nil: the embedded table without overrides.
	Prices *pricing.Prices
	// SessionKeys name a run's session (the extension's session_keys); nil: genai.DefaultSessionKeys.
	SessionKeys []string
	// SequenceKeys order siblings where an SDK gives a sequence; nil: store.DefaultSequenceKeys.
	SequenceKeys []string
	// Resolver, when set, rehydrates the run's payloads before reading it; errors are kept in
	// View.RehydrateErr and the run is still built.
	Resolver Resolver
	// LazyPayloads rehydrates only what counting needs (recorded exchanges without GenAI
	// attributes, whose bodies are read now): the UI fetches the rest per span (View.Rehydrate).
	LazyPayloads bool
}

// View is one run as every view renders it.
type View struct {
	TraceID   string
	SessionID string // the first session key present on any span; else the cold record's; else TraceID
	Tier      string
	Run       *store.Run
	// Nodes are the run's spans in run order (docs/architecture.md "Order"), orphans grouped under their
	// missing parent (one level deeper, Node.MissingParent on the first of them).
	Nodes []*Node
	// Steps are the counted steps in run order (rule.Apply); Step.Node indexes Nodes.
	Steps []*Step
	// Records are the log records pointing at the run that runagain emitted (event names
	// runagain.*: alerts, divergences) or that name no span of the run, by time.
	Records []Record
	Totals  Totals
	// Start and End: earliest span start, latest (sane) span end; the cold record's for a run
	// whose spans are gone.
	Start, End time.Time
	// Incomplete: no root span arrived, or spans name a parent that is not stored.
	Incomplete       bool
	IncompleteReason string
	Roots, Orphans   int64
	// Session is the cold tier's record of the run's session (a run whose spans are gone).
	Session *store.Session
	// RehydrateErr joins what could not be rehydrated (references stay as they are).
	RehydrateErr error

	opts     Options
	byID     map[pcommon.SpanID]int
	resolved map[int]bool
	owned    map[int][]int // exchange nodes by the LLM or tool node that made them (exchange.go)
	// borrowed: built by BuildNodes, the spans are Nodes', not Run.Traces'
	borrowed bool
}

// Node is one span of the run.
type Node struct {
	Index int // position in View.Nodes
	*store.Node
	Parent int // index of the parent node, -1 for a root or an orphan
	// Placement says why the node is not under its recorded parent (place.go); RecordedParent is
	// the index of that parent (-1 for a root or an orphan), Parent's own when not moved.
	Placement      Placement
	RecordedParent int
	MissingParent  string // first orphan of a missing parent: that parent's span id (hex)
	// Kind is genai.ClassifySpan of the span as read (Effective).
	Kind genai.Kind
	// Exchange is the recorded HTTP exchange the span holds (runagain.fixture.source), nil if none
	// or unreadable (ExchangeErr).
	Exchange    *fixture.Exchange
	ExchangeErr error
	// Effective is the span as read: the recorded span, or for an exchange recorded before GenAI
	// attributes were derived at record time, a copy with them derived now (llmhttp.Derive; the
	// recorded span is never changed). Derived: the GenAI attributes were read from the bodies.
	Effective ptrace.Span
	Derived   bool
	// Verdict is the counting rule's answer; Step the node's step (nil when not a step).
	Verdict rule.Verdict
	Step    *Step
	// Usage and Cost are what the node adds to the run's totals (zero when the rule does not
	// count its usage); RecordedUsage is what the span records.
	Usage         genai.Usage
	RecordedUsage genai.Usage
	Cost          pricing.CallCost
	// Logs are the agent's own log records for this span (not runagain's), by time.
	Logs []plog.LogRecord
}

// Span is the recorded span.
func (n *Node) SpanID() string { return n.Span.SpanID().String() }

// Step is one counted step.
type Step struct {
	Index   int // 1-based among the run's steps
	LLMStep int // 1-based among LLM calls (`show --step N`), 0 for other steps
	// ToolStep is 1-based among tool calls (`show --tool N`), 0 for other steps.
	ToolStep int
	Node     int // index into View.Nodes
	Kind     rule.StepKind
	SpanID   string
	// Operation is gen_ai.operation.name; "chat" for an LLM call, "execute_tool" for a tool call
	// and "http" for an HTTP exchange when absent.
	Operation string
	Name      string // tool name, "METHOD /path" of an HTTP step, else the span name
	Model     string
	Usage     genai.Usage
	CostUSD   float64
	Unpriced  bool // usage recorded, no known price
	Derived   bool // read from a recorded HTTP exchange
	Status    ptrace.StatusCode
	Error     string // status message, error.type, or HTTP status of a failed exchange
	Start     pcommon.Timestamp
	Duration  time.Duration
}

// Record is a log record pointing at the run (not the agent's record of one of its spans).
type Record struct {
	LogRecord plog.LogRecord
	EventName string
	Time      time.Time
	SpanID    string // "" when it names no span
	Node      int    // index of the span's node, -1 when not in the run
}

// Totals are the run's numbers, each counted by the rule.
type Totals struct {
	Spans        int64
	Steps        int64
	LLMCalls     int64
	ToolCalls    int64 // tool steps
	HTTPCalls    int64 // other recorded HTTP exchanges (tool APIs)
	InputTokens  int64
	OutputTokens int64
	CostUSD      float64
	Unpriced     int64 // counted calls with usage and no known price (not in CostUSD)
	Errors       int64 // spans with status ERROR
	Alerts       int64 // runagain.alert records
	Divergences  int64 // runagain.replay.divergence records
	Duration     time.Duration
	Models       []string // distinct models of the counted LLM calls, sorted
}

// Build reads run into its View. It never changes the recorded spans, except that a Resolver
// rehydrates payload references in place.
func Build(ctx context.Context, run *store.Run, opts Options) (*View, error) {
	if run == nil {
		return nil, errors.New("runview: nil run")
	}
	v := newView(run, opts)
	if opts.Resolver != nil && !opts.LazyPayloads {
		var errs []error
		store.EachSpan(run.Traces, func(s ptrace.Span) {
			if err := opts.Resolver.RehydrateSpan(ctx, s); err != nil {
				errs = append(errs, err)
			}
		})
		store.EachLogRecord(run.Logs, func(lr plog.LogRecord) {
			if err := opts.Resolver.RehydrateLogRecord(ctx, lr); err != nil {
				errs = append(errs, err)
			}
		})
		v.RehydrateErr = errors.Join(errs...)
	}
	return build(ctx, v, store.Nodes(run.Traces))
}

// BuildNodes is Build over spans given as unlinked nodes of one run (store.Nodes' fields set)
// instead of run.Traces, which it does not read (run gives TraceID, Tier, Session and Logs, if any): a
// view of spans that belong to another pdata, e.g. a request the hot writer is storing, read in
// place instead of copied into a Traces of their own (the cost of signing at ingest, BENCHMARKS.md
// "Failure patterns"). The nodes' ResourceSpans and ScopeSpans may hold other spans, and the
// nodes are linked and ordered here (store.OrderNodes). Since the spans are not the view's, it
// takes no Resolver (an error): rehydrating would change them in place.
func BuildNodes(ctx context.Context, run *store.Run, nodes []*store.Node, opts Options) (*View, error) {
	if run == nil {
		return nil, errors.New("runview: nil run")
	}
	if opts.Resolver != nil {
		return nil, errors.New("runview: BuildNodes reads spans it does not own: no Resolver")
	}
	own := *run // with empty Traces and Logs where run has none
	if own.Traces == (ptrace.Traces{}) {
		own.Traces = ptrace.NewTraces()
	}
	if own.Logs == (plog.Logs{}) {
		own.Logs = plog.NewLogs()
	}
	v := newView(&own, opts)
	v.borrowed = true
	return build(ctx, v, nodes)
}

// newView is an empty view of run read with opts, its defaults filled in (the embedded price
// table, the default session keys).
func newView(run *store.Run, opts Options) *View {
	if opts.Prices == nil {
		opts.Prices = pricing.DefaultPrices()
	}
	if opts.SessionKeys == nil {
		opts.SessionKeys = genai.DefaultSessionKeys
	}
	return &View{TraceID: run.TraceID, Tier: run.Tier, Run: run, Session: run.Session, opts: opts,
		byID: map[pcommon.SpanID]int{}, resolved: map[int]bool{}}
}

// build links and orders nodes (the run's spans) into v and counts them.
func build(ctx context.Context, v *View, nodes []*store.Node) (*View, error) {
	run, opts := v.Run, v.opts
	_, flat := store.OrderNodes(nodes, opts.SequenceKeys)
	flat, missing, roots, orphans := groupOrphans(flat)
	v.Roots, v.Orphans = roots, orphans
	if len(flat) > 0 {
		v.Incomplete, v.IncompleteReason = store.Completeness(roots, orphans)
	}
	var lazyErrs []error
	for i, sn := range flat {
		n := &Node{Index: i, Node: sn, Parent: -1, MissingParent: missing[sn], Effective: sn.Span}
		v.byID[sn.Span.SpanID()] = i
		if p, ok := v.byID[sn.Span.ParentSpanID()]; ok && !sn.Span.ParentSpanID().IsEmpty() && p != i {
			n.Parent = p
		}
		n.RecordedParent = n.Parent
		s := sn.Span
		if v.SessionID == "" {
			if id, ok := genai.SessionID(s.Attributes(), sn.Resource.Attributes(), opts.SessionKeys); ok {
				v.SessionID = id
			}
		}
		if fixture.IsFixture(s) {
			if opts.Resolver != nil && opts.LazyPayloads && genai.Classify(s.Attributes()) == genai.KindOther {
				// Read now: what the exchange was depends on its bodies.
				if err := opts.Resolver.RehydrateSpan(ctx, s); err != nil {
					lazyErrs = append(lazyErrs, err)
				}
				v.resolved[i] = true
			}
			n.Exchange, n.ExchangeErr = fixture.FromSpan(s)
			if n.Exchange != nil && genai.Classify(s.Attributes()) == genai.KindOther {
				// Recorded before the proxy and importer derived GenAI attributes at record time:
				// read them from the bodies now, on a copy.
				c := ptrace.NewSpan()
				s.CopyTo(c)
				if llmhttp.Derive(n.Exchange, c.Attributes()) != llmhttp.APINone {
					n.Effective = c
				}
			}
		}
		if fixture.IsFixture(s) || fixture.IsMCPExchange(s) {
			if d, ok := n.Effective.Attributes().Get(runagainattr.GenAIDerived); ok && d.Type() == pcommon.ValueTypeBool {
				n.Derived = d.Bool()
			}
		}
		n.Kind = genai.ClassifySpan(n.Effective)
		n.RecordedUsage = genai.TokenUsage(n.Effective.Attributes())
		v.Nodes = append(v.Nodes, n)
	}
	if len(lazyErrs) > 0 {
		v.RehydrateErr = errors.Join(v.RehydrateErr, errors.Join(lazyErrs...))
	}
	v.count()
	v.place()
	v.records()
	if v.SessionID == "" && run.Session != nil {
		v.SessionID = run.Session.SessionID
	}
	if v.SessionID == "" {
		v.SessionID = run.TraceID
	}
	if len(v.Nodes) == 0 && run.Session != nil {
		// A cold-tier run keeps no spans: its session's record says what is known.
		ss := run.Session
		v.Start, v.End = time.Unix(0, ss.FirstSeen).UTC(), time.Unix(0, ss.LastSeen).UTC()
		v.Totals.Spans, v.Totals.CostUSD, v.Totals.Unpriced = ss.Spans, ss.CostUSD, ss.Unpriced
		v.Totals.InputTokens, v.Totals.OutputTokens, v.Totals.Errors = ss.InputTokens, ss.OutputTokens, ss.Errors
		if v.Totals.Alerts == 0 {
			v.Totals.Alerts = ss.Alerts
		}
	}
	return v, nil
}

// count applies the rule and fills steps, usage, cost and totals.
func (v *View) count() {
	in := make([]rule.Span, len(v.Nodes))
	for i, n := range v.Nodes {
		in[i] = rule.FromSpan(n.Effective)
		in[i].Derived = n.Derived
	}
	verdicts := rule.Apply(in)
	t := &v.Totals
	t.Spans = int64(len(v.Nodes))
	models := map[string]bool{}
	var first, last pcommon.Timestamp
	for i, n := range v.Nodes {
		s := n.Span
		n.Verdict = verdicts[i]
		if st := s.StartTimestamp(); st != 0 && (first == 0 || st < first) {
			first = st
		}
		if e := store.SaneEnd(s.StartTimestamp(), s.EndTimestamp()); e > last {
			last = e
		}
		if s.Status().Code() == ptrace.StatusCodeError {
			t.Errors++
		}
		a := n.Effective.Attributes()
		if n.Verdict.CountUsage {
			n.Usage = n.RecordedUsage
			n.Cost = v.opts.Prices.UsageCost(n.Usage, a, s.StartTimestamp())
			t.InputTokens += n.Usage.Input
			t.OutputTokens += n.Usage.Output
			if n.Cost.Unpriced {
				t.Unpriced++
			} else {
				t.CostUSD += n.Cost.USD
			}
		}
		if n.Verdict.Step == rule.StepNone {
			continue
		}
		st := &Step{Index: len(v.Steps) + 1, Node: i, Kind: n.Verdict.Step, SpanID: s.SpanID().String(),
			Operation: attr(a, genai.AttrOperationName), Name: s.Name(), Model: genai.Model(a), Usage: n.Usage,
			CostUSD: n.Cost.USD, Unpriced: n.Cost.Unpriced, Derived: n.Derived, Status: s.Status().Code(),
			Start: s.StartTimestamp()}
		st.Duration, _ = store.SpanDuration(s.StartTimestamp(), s.EndTimestamp())
		if st.Status == ptrace.StatusCodeError {
			st.Error = s.Status().Message()
			if st.Error == "" {
				st.Error = attr(a, genai.AttrErrorType)
			}
			if st.Error == "" {
				st.Error = "error"
			}
		}
		switch st.Kind {
		case rule.StepLLM:
			t.LLMCalls++
			st.LLMStep = int(t.LLMCalls)
			if st.Operation == "" {
				st.Operation = "chat"
			}
			if st.Model != "" {
				models[st.Model] = true
			}
		case rule.StepTool:
			t.ToolCalls++
			st.ToolStep = int(t.ToolCalls)
			if st.Operation == "" {
				st.Operation = "execute_tool"
			}
			if tn := genai.ToolName(a); tn != "" {
				st.Name = tn
			}
		case rule.StepHTTP:
			t.HTTPCalls++
			st.Operation = "http"
			if ex := n.Exchange; ex != nil {
				st.Name = ex.Method + " " + urlPath(ex.URL)
				if st.Error == "" && ex.Status >= 400 {
					st.Status, st.Error = ptrace.StatusCodeError, fmt.Sprintf("HTTP %d", ex.Status)
				} else if st.Error == "" && ex.Error != "" {
					st.Status, st.Error = ptrace.StatusCodeError, ex.Error
				}
			}
		}
		n.Step = st
		v.Steps = append(v.Steps, st)
	}
	t.Steps = int64(len(v.Steps))
	for m := range models {
		t.Models = append(t.Models, m)
	}
	sort.Strings(t.Models)
	if first != 0 {
		v.Start = first.AsTime().UTC()
		v.End = last.AsTime().UTC()
		if v.End.Before(v.Start) {
			v.End = v.Start
		}
		t.Duration = v.End.Sub(v.Start)
	}
}

// records sorts the run's log records: the agent's own under their span's node, runagain's and
// those naming no span of the run into Records.
func (v *View) records() {
	store.EachLogRecord(v.Run.Logs, func(lr plog.LogRecord) {
		name := EventName(lr)
		switch name {
		case runagainattr.EventAlert:
			v.Totals.Alerts++
		case runagainattr.EventDivergence:
			v.Totals.Divergences++
		}
		i, inRun := -1, false
		if !lr.SpanID().IsEmpty() {
			i, inRun = v.byID[lr.SpanID()]
			if !inRun {
				i = -1
			}
		}
		if inRun && !strings.HasPrefix(name, runagainattr.EventPrefix) {
			v.Nodes[i].Logs = append(v.Nodes[i].Logs, lr)
			return
		}
		r := Record{LogRecord: lr, EventName: name, Time: RecordTime(lr), Node: i}
		if !lr.SpanID().IsEmpty() {
			r.SpanID = lr.SpanID().String()
		}
		v.Records = append(v.Records, r)
	})
	sort.SliceStable(v.Records, func(i, j int) bool { return v.Records[i].Time.Before(v.Records[j].Time) })
	for _, n := range v.Nodes {
		ls := n.Logs
		sort.SliceStable(ls, func(a, b int) bool { return RecordTime(ls[a]).Before(RecordTime(ls[b])) })
	}
}

// EventName is a log record's event name: LogRecord.EventName, else (before it existed) its
// event.name attribute.
func EventName(lr plog.LogRecord) string {
	if n := lr.EventName(); n != "" {
		return n
	}
	if v, ok := lr.Attributes().Get(genai.AttrEventName); ok {
		return v.AsString()
	}
	return ""
}

// RecordTime is a log record's time, else its observed time, in UTC.
func RecordTime(lr plog.LogRecord) time.Time {
	ts := lr.Timestamp()
	if ts == 0 {
		ts = lr.ObservedTimestamp()
	}
	return ts.AsTime().UTC()
}

// RootSpanID is the span id of the run's first root span in run order (Nodes[0]: a span without
// parent, or the first orphan when that comes first); ok is false for a run without spans.
// A rerun of the run links to it (proxy.MarkRerun).
func (v *View) RootSpanID() (id pcommon.SpanID, ok bool) {
	if len(v.Nodes) == 0 {
		return pcommon.SpanID{}, false
	}
	return v.Nodes[0].Span.SpanID(), true
}

// NodeOf returns the node of a span id (hex), or nil.
func (v *View) NodeOf(spanID string) *Node {
	for _, n := range v.Nodes {
		if n.SpanID() == spanID {
			return n
		}
	}
	return nil
}

// LLMStep returns the n-th LLM call (1-based, `show --step N`); the error names the valid range.
func (v *View) LLMStep(n int) (*Step, error) {
	if v.Totals.LLMCalls == 0 {
		return nil, fmt.Errorf("run %s has no LLM call", v.TraceID)
	}
	if n < 1 || int64(n) > v.Totals.LLMCalls {
		return nil, fmt.Errorf("--step %d: run %s has LLM steps 1..%d", n, v.TraceID, v.Totals.LLMCalls)
	}
	for _, s := range v.Steps {
		if s.LLMStep == n {
			return s, nil
		}
	}
	return nil, fmt.Errorf("--step %d: not found", n) // unreachable: LLMStep numbers 1..LLMCalls
}

// Messages returns the messages of node n's LLM call (genai.LLMCallMessages on the span as read
// and the agent's log records for it). Payloads must be rehydrated (Build with a Resolver, or
// Rehydrate).
func (v *View) Messages(n *Node) (genai.CallMessages, error) {
	return genai.LLMCallMessages(n.Effective, n.Logs)
}

// Rehydrate fetches node i's payloads and its log records' on first use (a View built with
// LazyPayloads). It is not safe for concurrent use: callers serialise (the UI holds a lock).
func (v *View) Rehydrate(ctx context.Context, i int) error {
	r := v.opts.Resolver
	if r == nil || v.resolved[i] || (!v.opts.LazyPayloads) {
		return nil
	}
	v.resolved[i] = true
	n := v.Nodes[i]
	var errs []error
	if err := r.RehydrateSpan(ctx, n.Span); err != nil {
		errs = append(errs, err)
	}
	if n.Effective != n.Span {
		if err := r.RehydrateSpan(ctx, n.Effective); err != nil {
			errs = append(errs, err)
		}
	}
	for _, lr := range n.Logs {
		if err := r.RehydrateLogRecord(ctx, lr); err != nil {
			errs = append(errs, err)
		}
	}
	for _, rec := range v.Records {
		if rec.Node == i {
			if err := r.RehydrateLogRecord(ctx, rec.LogRecord); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func attr(a pcommon.Map, k string) string {
	if v, ok := a.Get(k); ok {
		return v.AsString()
	}
	return ""
}

// urlPath is the escaped path of a URL, or the URL when it does not parse.
func urlPath(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.EscapedPath()
	}
	return raw
}
