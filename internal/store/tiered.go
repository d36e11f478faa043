// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/otlpid"
)

// SessionSummaryEventName is the event name of the log record a cold-tier Run carries.
const SessionSummaryEventName = "runagain.session.summary"

// Tiered reads several tiers as one, in the order given (hot, warm, cold): Run returns the run
// from the first tier that has it; Runs lists each run once, from the first tier that has it,
// and a cold session row only for the runs no earlier tier lists.
type Tiered struct {
	Readers []Reader
}

// NewTiered returns a Reader over readers in fallback order; nil readers are skipped.
func NewTiered(readers ...Reader) *Tiered {
	t := &Tiered{}
	for _, r := range readers {
		if r != nil {
			t.Readers = append(t.Readers, r)
		}
	}
	return t
}

// SessionLister is implemented by readers whose Runs rows each summarise a whole session (the
// cold tier: Parquet or ClickHouse session partials). Such a reader has no run index: listing it
// merges every partial it holds.
type SessionLister interface {
	ListsSessions() bool
}

// OldestSessionStarter is a SessionLister that tells the earliest start of the sessions it
// holds without merging every partial (the Parquet cold tier: its oldest date partition). ok is
// false when it cannot tell (none, or a partial without a start).
type OldestSessionStarter interface {
	OldestStart(ctx context.Context) (oldest time.Time, ok bool, err error)
}

// sessionsBefore reports whether the session reader r may hold a session that started before
// the oldest run of the per-run readers (and so one they lost to retention): false when both
// are known and r's oldest session starts at or after it. A reader that cannot tell may.
func sessionsBefore(ctx context.Context, r Reader, perRun []Reader) (bool, error) {
	starter, ok := r.(OldestSessionStarter)
	if !ok {
		return true, nil
	}
	oldest, err := oldestStart(ctx, perRun)
	if errors.Is(err, errors.ErrUnsupported) || err == nil && oldest.IsZero() {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	first, ok, err := starter.OldestStart(ctx)
	if err != nil || !ok {
		return true, err
	}
	return first.Before(oldest), nil
}

func listsSessions(r Reader) bool {
	s, ok := r.(SessionLister)
	return ok && s.ListsSessions()
}

// Runs implements Reader.
//
// With f.Limit, each per-run reader is asked for its newest f.Limit rows only: a run has the same
// start in every tier that holds it (each tier stores the same spans), so the newest f.Limit of
// the union are among the newest f.Limit of each tier. A reader of whole sessions (SessionLister,
// the cold tier) is read only when the tiers before it hold fewer than f.Limit matching runs: its
// rows list the runs no earlier tier holds any more, which retention removed from them because
// they are older than what they keep. Without f.Limit every tier is read whole, as before.
//
// A per-run tier that applies f's index-only fields (MinCostUSD, ErrorsOnly, Flagged) returns only the
// runs that pass them, so its rows cannot tell which runs of a session row it holds: with such a
// filter, a session row is listed only when it started before the oldest run those tiers hold
// (sessionsBefore), as RankedRuns lists them. A range that starts at or after the oldest run of
// the per-run tiers (f.Since) does not read the session reader at all: it holds no run they lost
// to retention there; nor does any listing when the session reader's oldest session starts at or
// after that run (OldestSessionStarter).
func (t *Tiered) Runs(ctx context.Context, f RunFilter) ([]RunSummary, error) {
	seen := map[string]bool{}
	var out []RunSummary
	at := map[string]int{} // trace id -> index in out of a per-run row
	for i, r := range t.Readers {
		sub := f.forReader(r)
		var before time.Time // a session row must start before it (zero: no bound)
		if listsSessions(r) {
			if f.Limit > 0 && len(out) >= f.Limit {
				continue
			}
			sub.Limit = 0 // rows already listed by an earlier tier are dropped below: read them all
			var filtered, perRun []Reader
			for _, e := range t.Readers[:i] {
				if f.indexOnly() && !listsSessions(e) && filtersIndex(e) {
					filtered = append(filtered, e)
				}
				if !listsSessions(e) {
					perRun = append(perRun, e)
				}
			}
			var err error
			if before, err = oldestStart(ctx, filtered); err != nil {
				return nil, err
			}
			if !f.Since.IsZero() {
				// A range that starts at or after the oldest run the per-run tiers hold has no
				// run retention removed from them: the session reader (which merges every
				// partial it holds, whatever the range) is not read.
				oldest, err := oldestStart(ctx, perRun)
				if err != nil && !errors.Is(err, errors.ErrUnsupported) {
					return nil, err
				}
				if err == nil && !oldest.IsZero() && !f.Since.Before(oldest) {
					continue
				}
			}
			// Nor is a session reader whose sessions all started at or after that run.
			if may, err := sessionsBefore(ctx, r, perRun); err != nil {
				return nil, err
			} else if !may {
				continue
			}
		}
		rows, err := r.Runs(ctx, sub)
		if err != nil {
			return nil, err
		}
		var add []RunSummary
		for _, row := range rows {
			if !f.Keep(row) || !before.IsZero() && !row.Start.Before(before) {
				continue
			}
			if i, ok := at[row.TraceID]; ok && len(row.TraceIDs) == 0 && out[i].CostUSD == 0 && out[i].Unpriced == 0 {
				// A tier that does not price (the hot tier on the contrib ClickHouse tables) takes
				// the cost a later tier computed for the same run.
				out[i].CostUSD, out[i].Unpriced = row.CostUSD, row.Unpriced
			}
			if len(row.TraceIDs) > 0 {
				fresh := false
				for _, id := range row.TraceIDs {
					if !seen[id] {
						fresh = true
					}
				}
				if !fresh {
					continue
				}
			} else if seen[row.TraceID] {
				continue
			}
			add = append(add, row)
		}
		for k, row := range add {
			if len(row.TraceIDs) == 0 {
				at[row.TraceID] = len(out) + k
			}
			seen[row.TraceID] = true
			for _, id := range row.TraceIDs {
				seen[id] = true
			}
		}
		out = append(out, add...)
	}
	SortRuns(out)
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// oldestStart is the earliest start of a run any of readers holds, each asked through its run
// index (RankedRunLister, one row); zero when none holds a run. Errors: a reader that cannot
// rank wraps errors.ErrUnsupported.
func oldestStart(ctx context.Context, readers []Reader) (time.Time, error) {
	var oldest time.Time
	for _, r := range readers {
		rl, ok := r.(RankedRunLister)
		if !ok {
			return time.Time{}, fmt.Errorf("oldest run: %T: %w", r, errors.ErrUnsupported)
		}
		first, err := rl.RankedRuns(ctx, RunFilter{Limit: 1}, RunOrder{Key: OrderStart, Asc: true})
		if err != nil {
			return time.Time{}, err
		}
		if len(first) > 0 && (oldest.IsZero() || first[0].Start.Before(oldest)) {
			oldest = first[0].Start
		}
	}
	return oldest, nil
}

// FiltersRunIndex implements RunIndexFilterer: Tiered applies f's index-only fields when every
// per-run reader does (a reader of whole sessions is read whole, so filtering its rows after is
// exact). With one that does not, the newest f.Limit matching runs may not be among its newest
// f.Limit rows, so Tiered is then given a filter without them.
func (t *Tiered) FiltersRunIndex() bool {
	for _, r := range t.Readers {
		if !listsSessions(r) && !filtersIndex(r) {
			return false
		}
	}
	return true
}

// Run implements Reader.
func (t *Tiered) Run(ctx context.Context, traceID string) (*Run, error) {
	for _, r := range t.Readers {
		run, err := r.Run(ctx, traceID)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		return run, err
	}
	return nil, ErrNotFound
}

// Close closes every reader.
func (t *Tiered) Close() error {
	var errs []error
	for _, r := range t.Readers {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}

var _ Reader = (*Tiered)(nil)

// RebuildTraces turns warm summaries (and their exception key events) back into spans: ids,
// name, kind, timing, status, the summary attributes as recorded, resource service.name, and an
// "exception" span event per exception key event. Payloads are not there: the warm tier never
// had them. A resource-level gen_ai.agent.name (an agent named by its service, not its spans)
// is put back on the rebuilt resource when a span's summary shows it (resourceAgent), so the
// run page names that agent as it does from the hot tier.
func RebuildTraces(spans []SpanSummary, events []KeyEvent) (ptrace.Traces, error) {
	td := ptrace.NewTraces()
	type resKey struct{ service, agent string }
	byRes := map[resKey]ptrace.SpanSlice{}
	bySpan := map[string]ptrace.Span{}
	for _, s := range spans {
		one := ptrace.NewSpanSlice() // the span is built here, then moved under its resource
		sp := one.AppendEmpty()
		tid, err := decodeTraceID(s.TraceID)
		if err != nil {
			return td, err
		}
		sp.SetTraceID(tid)
		sid, err := decodeSpanID(s.SpanID)
		if err != nil {
			return td, err
		}
		sp.SetSpanID(sid)
		if s.ParentSpanID != "" {
			pid, err := decodeSpanID(s.ParentSpanID)
			if err != nil {
				return td, err
			}
			sp.SetParentSpanID(pid)
		}
		sp.SetName(s.Name)
		sp.SetKind(ptrace.SpanKind(s.Kind))
		sp.SetStartTimestamp(pcommon.Timestamp(s.Start))
		sp.SetEndTimestamp(pcommon.Timestamp(s.End))
		sp.Status().SetCode(ptrace.StatusCode(s.StatusCode))
		sp.Status().SetMessage(s.StatusMessage)
		if err := putJSON(sp.Attributes(), s.Attributes); err != nil {
			return td, fmt.Errorf("warm span %s attributes: %w", s.SpanID, err)
		}
		k := resKey{s.Service, resourceAgent(sp, s.AgentName)}
		ss, ok := byRes[k]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			if k.service != "" {
				rs.Resource().Attributes().PutStr(genai.AttrServiceName, k.service)
			}
			if k.agent != "" {
				rs.Resource().Attributes().PutStr(genai.AttrAgentName, k.agent)
			}
			sc := rs.ScopeSpans().AppendEmpty()
			sc.Scope().SetName("runagain.warm")
			ss = sc.Spans()
			byRes[k] = ss
		}
		one.MoveAndAppendTo(ss)
		bySpan[s.TraceID+s.SpanID] = sp
	}
	for _, e := range events {
		if e.Kind != "exception" {
			continue
		}
		sp, ok := bySpan[e.TraceID+e.SpanID]
		if !ok {
			continue
		}
		ev := sp.Events().AppendEmpty()
		ev.SetName("exception")
		ev.SetTimestamp(pcommon.Timestamp(e.Time))
		if err := putJSON(ev.Attributes(), e.Attributes); err != nil {
			return td, fmt.Errorf("warm event %s attributes: %w", e.EventID, err)
		}
	}
	return td, nil
}

// RebuildAlerts turns alert key events back into log records (event name, time, severity,
// body, attributes, trace and span ids, resource service.name).
func RebuildAlerts(events []KeyEvent) (plog.Logs, error) {
	ld := plog.NewLogs()
	for _, e := range events {
		if e.Kind != "alert" {
			continue
		}
		rl := ld.ResourceLogs().AppendEmpty()
		if e.Service != "" {
			rl.Resource().Attributes().PutStr(genai.AttrServiceName, e.Service)
		}
		lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		lr.SetEventName(e.Name)
		lr.SetTimestamp(pcommon.Timestamp(e.Time))
		lr.SetSeverityNumber(plog.SeverityNumber(e.Severity))
		lr.Body().SetStr(e.Message)
		if e.TraceID != "" {
			if tid, err := decodeTraceID(e.TraceID); err == nil {
				lr.SetTraceID(tid)
			}
		}
		if e.SpanID != "" {
			if sid, err := decodeSpanID(e.SpanID); err == nil {
				lr.SetSpanID(sid)
			}
		}
		if err := putJSON(lr.Attributes(), e.Attributes); err != nil {
			return ld, fmt.Errorf("warm alert %s attributes: %w", e.EventID, err)
		}
	}
	return ld, nil
}

// SessionRun is the Run a cold-tier reader returns for traceID, a run of session s: no spans,
// Session set, and one log record describing the session in words and attributes.
func SessionRun(traceID string, s Session) *Run {
	run := &Run{TraceID: traceID, Traces: ptrace.NewTraces(), Logs: plog.NewLogs(), Tier: TierCold, Session: &s}
	lr := run.Logs.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetEventName(SessionSummaryEventName)
	lr.SetTimestamp(pcommon.Timestamp(s.FirstSeen))
	lr.Body().SetStr(fmt.Sprintf("only the cold tier holds this run: its spans are past the hot and warm retention. "+
		"Session %s: %d runs, %d spans, %d errors, %d alerts, tokens in %d out %d, cost %.6f USD (%d LLM calls unpriced), models %s, %s to %s",
		s.SessionID, len(s.TraceIDs), s.Spans, s.Errors, s.Alerts, s.InputTokens, s.OutputTokens, s.CostUSD, s.Unpriced,
		strings.Join(s.Models, ","), time.Unix(0, s.FirstSeen).UTC().Format(time.RFC3339Nano),
		time.Unix(0, s.LastSeen).UTC().Format(time.RFC3339Nano)))
	a := lr.Attributes()
	a.PutStr("session.id", s.SessionID)
	a.PutStr("gen_ai.agent.name", s.Agent)
	a.PutStr("service.name", s.Service)
	a.PutInt("runagain.session.runs", int64(len(s.TraceIDs)))
	a.PutInt("runagain.session.spans", s.Spans)
	a.PutInt("runagain.session.errors", s.Errors)
	a.PutInt("runagain.session.alerts", s.Alerts)
	a.PutInt("gen_ai.usage.input_tokens", s.InputTokens)
	a.PutInt("gen_ai.usage.output_tokens", s.OutputTokens)
	a.PutDouble("runagain.session.cost_usd", s.CostUSD)
	a.PutInt("runagain.session.unpriced_calls", s.Unpriced)
	ms := a.PutEmptySlice("runagain.session.models")
	for _, m := range s.Models {
		ms.AppendEmpty().SetStr(m)
	}
	ts := a.PutEmptySlice("runagain.session.trace_ids")
	for _, t := range s.TraceIDs {
		ts.AppendEmpty().SetStr(t)
	}
	return run
}

// SessionRows turns merged cold sessions into RunSummary rows (one per session), keeping those
// that started at or after since (zero: all).
func SessionRows(ss []Session, since time.Time) []RunSummary {
	var out []RunSummary
	for _, s := range ss {
		start := time.Unix(0, s.FirstSeen).UTC()
		if !since.IsZero() && start.Before(since) {
			continue
		}
		last := ""
		if n := len(s.TraceIDs); n > 0 {
			last = s.TraceIDs[n-1]
		}
		out = append(out, RunSummary{SessionID: s.SessionID, TraceID: last, TraceIDs: s.TraceIDs, Start: start,
			End: time.Unix(0, s.LastSeen).UTC(), Spans: s.Spans, Models: nonNil(s.Models), InputTokens: s.InputTokens,
			OutputTokens: s.OutputTokens, Errors: s.Errors, Tier: TierCold, CostUSD: s.CostUSD, Unpriced: s.Unpriced, Alerts: s.Alerts})
	}
	return out
}

// FindSession returns the session whose runs include traceID.
func FindSession(ss []Session, traceID string) (Session, bool) {
	for _, s := range ss {
		i := sort.SearchStrings(s.TraceIDs, traceID)
		if i < len(s.TraceIDs) && s.TraceIDs[i] == traceID {
			return s, true
		}
	}
	return Session{}, false
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// resourceAgent is the resource-level gen_ai.agent.name that the summary of sp shows (sp rebuilt
// from it; agent is the agent name it was stored with, genai.SpanAgent at write time): agent
// when the span alone would not be named so, since SpanAgent reads the resource's
// gen_ai.agent.name before any name the span gives of itself; "" when the span alone is named
// so too (or names no agent): the resource adds nothing to its page.
func resourceAgent(sp ptrace.Span, agent string) string {
	if agent == "" || genai.SpanAgent(sp, pcommon.NewMap(), func() bool { return true }) == agent {
		return ""
	}
	return agent
}

func putJSON(m pcommon.Map, js string) error {
	if js == "" || js == "{}" {
		return nil
	}
	// Member by member, in the text's order: through a Go map, every read of the same run listed
	// them in another order.
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil {
		return err
	} else if t != json.Delim('{') {
		return fmt.Errorf("attributes: want a JSON object, got %v", t)
	}
	m.Clear()
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := t.(string) // an object's member name is always a string token
		var v any
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if err := m.PutEmpty(k).FromRaw(numbers(v)); err != nil {
			return fmt.Errorf("attribute %q: %w", k, err)
		}
	}
	_, err := dec.Token() // the closing '}'
	return err
}

// numbers turns json.Number into int64 where integral, else float64, recursively.
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = numbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = numbers(x[k])
		}
	}
	return v
}

func decodeTraceID(s string) (pcommon.TraceID, error) { return otlpid.ParseTraceID(s) }

func decodeSpanID(s string) (pcommon.SpanID, error) { return otlpid.ParseSpanID(s) }
