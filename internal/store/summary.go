// SPDX-License-Identifier: Apache-2.0

package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/runview/rule"
)

// Tier names, as reported in RunSummary.Tier and Run.Tier.
const (
	TierHot  = "hot"
	TierWarm = "warm"
	TierCold = "cold"
)

// AlertEventName is the log record event name agent_guard gives its alerts; the warm tier keeps
// these records as key events and the cold tier counts them per session.
const AlertEventName = runagainattr.EventAlert

// SpanSummary is the warm tier's record of one span: what it was and how it went, without
// payloads. Times are Unix nanoseconds.
type SpanSummary struct {
	TraceID       string  `parquet:"trace_id"`
	SpanID        string  `parquet:"span_id"`
	ParentSpanID  string  `parquet:"parent_span_id"`
	SessionID     string  `parquet:"session_id"` // '' when the span names none (the run is its own session)
	Name          string  `parquet:"name"`
	Kind          int32   `parquet:"kind"` // OTLP SpanKind
	Start         int64   `parquet:"start_time_unix_nano"`
	End           int64   `parquet:"end_time_unix_nano"`
	StatusCode    int32   `parquet:"status_code"` // OTLP StatusCode (2 = error)
	StatusMessage string  `parquet:"status_message"`
	Service       string  `parquet:"service_name"`
	GenAIKind     string  `parquet:"genai_kind"` // llm | tool | agent | other
	Model         string  `parquet:"model"`
	InputTokens   int64   `parquet:"input_tokens"`
	OutputTokens  int64   `parquet:"output_tokens"`
	CostUSD       float64 `parquet:"cost_usd"` // pricing.Prices.SpanCost with the configured overrides, USD
	Unpriced      int32   `parquet:"unpriced"` // 1 for an LLM call with usage but no known price
	ToolName      string  `parquet:"tool_name"`
	AgentName     string  `parquet:"agent_name"` // genai.SpanAgent, the parent looked for in the span's batch
	ErrorType     string  `parquet:"error_type"` // error.type, else the first exception.type, else '' (see Error)
	// Attributes is a JSON object of the span's summary attributes (SummaryAttribute keys only,
	// scalar or array values as recorded; never payloads).
	Attributes string `parquet:"attributes"`
	// Exchange: a derived exchange (DerivedExchange), Edited: one a rerun edited
	// (EditedExchange), for the run index's counting rule.
	Exchange bool `parquet:"-"`
	Edited   bool `parquet:"-"`
	// Signal is whether the span's attributes can make its run fail besides its status
	// (patterns.SpanSignal), when the summariser was given the check (SummarizeSignals); a
	// record decoded from a queue or built elsewhere has SignalUnknown, and the warm writer
	// reads it from Attributes instead (patterns.SummarySignal).
	Signal SignalState `parquet:"-"`
}

// SignalState is SpanSummary.Signal: unknown, or the check's answer.
type SignalState uint8

// SignalState values.
const (
	SignalUnknown SignalState = iota
	SignalNo
	SignalYes
)

// KeyEvent is the warm tier's record of an exception span event or an alert log record.
type KeyEvent struct {
	EventID   string `json:"event_id"` // SHA-256 hex of the identifying fields: at-least-once retries collapse
	TraceID   string `json:"trace_id"`
	SpanID    string `json:"span_id"`
	SessionID string `json:"session_id"`
	Time      int64  `json:"time_unix_nano"`
	Kind      string `json:"kind"` // "exception" or "alert"
	Name      string `json:"name"` // exception.type, or the log record's event name
	Severity  int32  `json:"severity_number"`
	Service   string `json:"service_name"`
	Message   string `json:"message"` // exception.message, or the log body as a string
	// Attributes is a JSON object: the alert's attributes, or the exception's attributes without
	// exception.stacktrace. String values longer than MaxEventValueBytes are cut (marked).
	Attributes string `json:"attributes"`
}

// MaxEventValueBytes bounds a string attribute kept in a key event.
const MaxEventValueBytes = 4096

// SummaryAttribute reports whether the warm tier keeps attribute k of a span: GenAI identity,
// model, usage, tool and agent names, what marks an agent invocation (genai.AgentAttribute: the
// run page names the agents of a warm run as it does a hot one's), session keys and error type.
// Payload attributes (messages, tool arguments and results, *_ref) never qualify.
func SummaryAttribute(k string) bool {
	if strings.HasSuffix(k, genai.RefSuffix) {
		return false
	}
	if genai.AgentAttribute(k) {
		return true
	}
	switch k {
	case genai.AttrOperationName, genai.AttrProviderName, genai.AttrSystem, genai.AttrRequestModel,
		genai.AttrResponseModel, genai.AttrAgentName, "gen_ai.agent.id", genai.AttrConversationID,
		genai.AttrToolName, "gen_ai.tool.call.id", "gen_ai.tool.type", genai.AttrFinishReasons,
		"gen_ai.response.id", genai.AttrSessionID, "error.type", genai.AttrOpenInferenceKind,
		genai.AttrOpenInferenceModel, "llm.provider", "llm.system", "http.request.method",
		"http.response.status_code", "server.address", "runagain.sequence", "gen_ai.step.sequence",
		runagainattr.GenAIDerived, runagainattr.FixtureSource, runagainattr.RerunEdits:
		return true
	}
	return strings.HasPrefix(k, "gen_ai.usage.") || strings.HasPrefix(k, "llm.token_count.") || usageKeys[k]
}

// usageKeys are genai.UsageKeys: every usage spelling read, so a summary keeps the usage of a span
// whatever its dialect (Vercel's ai.usage.*, Anthropic's flat cache_*_input_tokens).
var usageKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range genai.UsageKeys() {
		m[k] = true
	}
	return m
}()

// Summarize returns the warm tier's records for td: one SpanSummary per span with non-empty
// ids, and one KeyEvent per exception span event. sessionKeys default to genai.DefaultSessionKeys;
// prices (nil: the embedded table) prices each LLM call.
func Summarize(td ptrace.Traces, sessionKeys []string, prices *pricing.Prices) ([]SpanSummary, []KeyEvent) {
	return SummarizeSignals(td, sessionKeys, prices, nil)
}

// SummarizeSignals is Summarize, setting each summary's Signal to signal(the span's attributes)
// when signal is not nil (patterns.SpanSignal: the warm writer then need not read it back from
// the summary's Attributes JSON, a visible share of signing at ingest; BENCHMARKS.md,
// "Signatures at ingest").
func SummarizeSignals(td ptrace.Traces, sessionKeys []string, prices *pricing.Prices, signal func(pcommon.Map) bool) ([]SpanSummary, []KeyEvent) {
	if sessionKeys == nil {
		sessionKeys = genai.DefaultSessionKeys
	}
	spans := make([]SpanSummary, 0, td.SpanCount())
	var events []KeyEvent
	var aj attrJSON
	var th traceHex
	var buf []byte
	agents := newAgentNamer(td)
	eachSpan(td, func(res pcommon.Resource, s ptrace.Span) {
		if s.TraceID().IsEmpty() || s.SpanID().IsEmpty() {
			return
		}
		attrs := s.Attributes()
		session, _ := genai.SessionID(attrs, res.Attributes(), sessionKeys)
		kind := genai.Classify(attrs)
		usage := genai.RunUsage(kind, attrs)
		sum := SpanSummary{
			TraceID: th.str(s.TraceID()), SpanID: s.SpanID().String(), SessionID: session,
			Name: s.Name(), Kind: int32(s.Kind()), Start: int64(s.StartTimestamp()), End: int64(SaneEnd(s.StartTimestamp(), s.EndTimestamp())),
			StatusCode: int32(s.Status().Code()), StatusMessage: s.Status().Message(),
			Service: str(res.Attributes(), genai.AttrServiceName), GenAIKind: string(kind),
			Model: genai.Model(attrs), InputTokens: usage.Input, OutputTokens: usage.Output,
			ToolName: str(attrs, genai.AttrToolName), AgentName: agents.name(res, s),
			ErrorType: str(attrs, "error.type"), Exchange: DerivedExchange(s, kind), Edited: EditedExchange(s, kind),
		}
		cost, unpriced := usageCost(prices, usage, attrs, s.StartTimestamp())
		sum.CostUSD = cost
		if unpriced {
			sum.Unpriced = 1
		}
		if !s.ParentSpanID().IsEmpty() {
			sum.ParentSpanID = s.ParentSpanID().String()
		}
		aj.reset()
		attrs.Range(func(k string, v pcommon.Value) bool {
			if SummaryAttribute(k) {
				aj.add(k, v)
			}
			return true
		})
		sum.Attributes, buf = aj.text(buf, false)
		if signal != nil {
			sum.Signal = SignalNo
			if signal(attrs) {
				sum.Signal = SignalYes
			}
		}
		for i := 0; i < s.Events().Len(); i++ {
			ev := s.Events().At(i)
			if ev.Name() != "exception" {
				continue
			}
			typ := str(ev.Attributes(), "exception.type")
			if sum.ErrorType == "" {
				sum.ErrorType = typ
			}
			aj.reset()
			ev.Attributes().Range(func(k string, v pcommon.Value) bool {
				if k != "exception.stacktrace" && !strings.HasSuffix(k, genai.RefSuffix) {
					aj.add(k, v)
				}
				return true
			})
			ke := KeyEvent{TraceID: sum.TraceID, SpanID: sum.SpanID, SessionID: session, Time: int64(ev.Timestamp()),
				Kind: "exception", Name: typ, Service: sum.Service,
				Message: bounded(str(ev.Attributes(), "exception.message")).(string)}
			ke.Attributes, buf = aj.text(buf, true)
			ke.EventID = eventID(ke, i)
			events = append(events, ke)
		}
		spans = append(spans, sum)
	})
	return spans, events
}

// AlertEvents returns one KeyEvent per log record of ld whose event name is AlertEventName.
func AlertEvents(ld plog.Logs, sessionKeys []string) []KeyEvent {
	if sessionKeys == nil {
		sessionKeys = genai.DefaultSessionKeys
	}
	var out []KeyEvent
	var aj attrJSON
	var buf []byte
	eachLog(ld, func(res pcommon.Resource, lr plog.LogRecord) {
		if lr.EventName() != AlertEventName {
			return
		}
		session, _ := genai.SessionID(lr.Attributes(), res.Attributes(), sessionKeys)
		ts := lr.Timestamp()
		if ts == 0 {
			ts = lr.ObservedTimestamp()
		}
		aj.reset()
		lr.Attributes().Range(func(k string, v pcommon.Value) bool {
			if !strings.HasSuffix(k, genai.RefSuffix) {
				aj.add(k, v)
			}
			return true
		})
		ke := KeyEvent{SessionID: session, Time: int64(ts), Kind: "alert", Name: lr.EventName(),
			Severity: int32(lr.SeverityNumber()), Service: str(res.Attributes(), genai.AttrServiceName),
			Message: bounded(lr.Body().AsString()).(string)}
		ke.Attributes, buf = aj.text(buf, true)
		if !lr.TraceID().IsEmpty() {
			ke.TraceID = lr.TraceID().String()
		}
		if !lr.SpanID().IsEmpty() {
			ke.SpanID = lr.SpanID().String()
		}
		ke.EventID = eventID(ke, 0)
		if id, ok := RecordIDOfLog(lr); ok {
			// an alert with an identity is one key event, whatever else differs when it is
			// emitted again (its observed time, its counts so far)
			ke.EventID = id
		}
		out = append(out, ke)
	})
	return out
}

// RecordIDOfLog returns the record's identity (runagain.record.id) when it carries a valid one
// (runagainattr.ValidRecordID).
func RecordIDOfLog(lr plog.LogRecord) (string, bool) {
	v, ok := lr.Attributes().Get(runagainattr.RecordID)
	if !ok || !runagainattr.ValidRecordID(v.Str()) {
		return "", false
	}
	return v.Str(), true
}

// SessionPartial is the cold tier's record: what one batch contributed to one session.
// Partials of a session are merged by MergePartials (sums, min/max, set unions); duplicate
// partials of one batch (same BatchID, from a retried write) count once.
type SessionPartial struct {
	SessionID    string   `parquet:"session_id"` // the trace id when the run names no session
	BatchID      string   `parquet:"batch_id"`   // SHA-256 hex of the batch's span and record identities, or a record's runagain.record.id
	FirstSeen    int64    `parquet:"first_seen_unix_nano"`
	LastSeen     int64    `parquet:"last_seen_unix_nano"`
	Agent        string   `parquet:"agent"`   // the greatest SpanSummary.AgentName of the batch's spans
	Service      string   `parquet:"service"` // resource service.name (the greatest seen)
	Models       []string `parquet:"models,list"`
	TraceIDs     []string `parquet:"trace_ids,list"`
	Spans        int64    `parquet:"spans"`
	InputTokens  int64    `parquet:"input_tokens"`
	OutputTokens int64    `parquet:"output_tokens"`
	CostUSD      float64  `parquet:"cost_usd"` // sum of pricing.Prices.SpanCost over the batch's spans
	Unpriced     int64    `parquet:"unpriced"` // LLM calls with usage but no known price
	Errors       int64    `parquet:"errors"`   // spans with status ERROR
	Alerts       int64    `parquet:"alerts"`   // agent_guard alert records
	Ingested     int64    `parquet:"ingested_unix_nano"`
}

// Partials returns one SessionPartial per session present in td and ld (either may be empty),
// plus one per alert record carrying a runagain.record.id (its BatchID is that id, so the record
// counts once however often it is sent), sorted by session id and batch id, stamped with
// ingested (Unix ns); prices (nil: the embedded table) prices each LLM call. Usage the counting
// rule does not count is left out, judged within the batch (rule.Uncounted); JoinedPartials
// judges it with earlier batches too.
func Partials(td ptrace.Traces, ld plog.Logs, sessionKeys []string, ingested int64, prices *pricing.Prices) []SessionPartial {
	return JoinedPartials(td, ld, sessionKeys, ingested, prices, nil)
}

// JoinedPartials is Partials with the counting rule applied across batches through join (the
// spans of recent traces; nil: within the batch), so the halves of a joined run arriving in
// separate batches add each call's usage once; ingested is join's clock.
func JoinedPartials(td ptrace.Traces, ld plog.Logs, sessionKeys []string, ingested int64, prices *pricing.Prices, join *rule.Window) []SessionPartial {
	if sessionKeys == nil {
		sessionKeys = genai.DefaultSessionKeys
	}
	by := map[string]*SessionPartial{}
	models := map[string]map[string]bool{}
	traces := map[string]map[string]bool{}
	h := sha256.New()
	get := func(session, trace string) *SessionPartial {
		p := by[session]
		if p == nil {
			p = &SessionPartial{SessionID: session, Ingested: ingested}
			by[session] = p
			models[session], traces[session] = map[string]bool{}, map[string]bool{}
		}
		if trace != "" {
			traces[session][trace] = true
		}
		return p
	}
	seen := func(p *SessionPartial, first, last int64) {
		if first != 0 && (p.FirstSeen == 0 || first < p.FirstSeen) {
			p.FirstSeen = first
		}
		if last < first {
			last = first
		}
		if last > p.LastSeen {
			p.LastSeen = last
		}
	}
	// A run's session is named by any of its spans (often only the root carries the key): the
	// first span of a trace in this batch that names one names it for all its spans here.
	runSession := map[string]string{}
	var records []SessionPartial // one per record with an identity
	var line []byte
	var th traceHex
	if td != (ptrace.Traces{}) {
		agents := newAgentNamer(td)
		uncounted := join.Uncounted(td, time.Unix(0, ingested))
		eachSpan(td, func(res pcommon.Resource, s ptrace.Span) {
			if s.TraceID().IsEmpty() {
				return
			}
			trace := th.str(s.TraceID())
			if _, done := runSession[trace]; done {
				return
			}
			if id, ok := genai.SessionID(s.Attributes(), res.Attributes(), sessionKeys); ok {
				runSession[trace] = id
			}
		})
		eachSpan(td, func(res pcommon.Resource, s ptrace.Span) {
			if s.TraceID().IsEmpty() || s.SpanID().IsEmpty() {
				return
			}
			attrs := s.Attributes()
			trace := th.str(s.TraceID())
			sid := s.SpanID()
			session, ok := runSession[trace]
			if !ok {
				session = trace
			}
			p := get(session, trace)
			seen(p, int64(s.StartTimestamp()), int64(SaneEnd(s.StartTimestamp(), s.EndTimestamp())))
			p.Spans++
			u := genai.RunUsage(genai.Classify(attrs), attrs)
			if uncounted[rule.SpanKey{Trace: s.TraceID(), Span: sid}] {
				u = genai.Usage{} // counted on another span of the run (runview/rule)
			}
			p.InputTokens += u.Input
			p.OutputTokens += u.Output
			cost, unpriced := usageCost(prices, u, attrs, s.StartTimestamp())
			p.CostUSD += cost
			if unpriced {
				p.Unpriced++
			}
			if s.Status().Code() == ptrace.StatusCodeError {
				p.Errors++
			}
			if m := genai.Model(attrs); m != "" {
				models[session][m] = true
			}
			p.Agent = maxStr(p.Agent, agents.name(res, s))
			p.Service = maxStr(p.Service, str(res.Attributes(), genai.AttrServiceName))
			// "s" trace span "\n", the hex ids (as fmt wrote them before: batch ids stay the same)
			line = append(line[:0], 's')
			line = append(line, trace...)
			line = hex.AppendEncode(line, sid[:])
			line = append(line, '\n')
			h.Write(line)
		})
	}
	if ld != (plog.Logs{}) {
		eachLog(ld, func(res pcommon.Resource, lr plog.LogRecord) {
			if lr.EventName() != AlertEventName {
				return
			}
			trace := ""
			if !lr.TraceID().IsEmpty() {
				trace = lr.TraceID().String()
			}
			session, ok := genai.SessionID(lr.Attributes(), res.Attributes(), sessionKeys)
			if !ok {
				session, ok = runSession[trace]
			}
			if !ok {
				session = trace
			}
			if session == "" {
				return // an alert tied to no run and no session has no cold record
			}
			ts := lr.Timestamp()
			if ts == 0 {
				ts = lr.ObservedTimestamp()
			}
			if id, ok := RecordIDOfLog(lr); ok {
				// A record with an identity is a partial of its own whose batch id is that
				// identity: sent again in another batch (a retry after a lost
				// acknowledgement, a re-import after a restart), it is the same (session,
				// batch) and counts once (MergePartials; ClickHouse drops the insert by its
				// token).
				r := SessionPartial{SessionID: session, BatchID: id, FirstSeen: int64(ts), LastSeen: int64(ts), Alerts: 1,
					Service: str(res.Attributes(), genai.AttrServiceName), Ingested: ingested, Models: []string{}, TraceIDs: []string{}}
				if trace != "" {
					r.TraceIDs = []string{trace}
				}
				records = append(records, r)
				return
			}
			p := get(session, trace)
			seen(p, int64(ts), int64(ts))
			p.Alerts++
			p.Service = maxStr(p.Service, str(res.Attributes(), genai.AttrServiceName))
			fmt.Fprintf(h, "l%s%d%s%s\n", trace, ts, lr.SpanID(), lr.Body().AsString())
		})
	}
	batch := hex.EncodeToString(h.Sum(nil))
	out := make([]SessionPartial, 0, len(by)+len(records))
	for s, p := range by {
		p.BatchID = batch
		p.Models = sortedKeys(models[s])
		p.TraceIDs = sortedKeys(traces[s])
		out = append(out, *p)
	}
	out = append(out, records...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].SessionID != out[j].SessionID {
			return out[i].SessionID < out[j].SessionID
		}
		return out[i].BatchID < out[j].BatchID
	})
	return out
}

// Session is one session merged from its cold partial records.
type Session struct {
	SessionID    string   `json:"session_id"`
	FirstSeen    int64    `json:"first_seen_unix_nano"`
	LastSeen     int64    `json:"last_seen_unix_nano"`
	Agent        string   `json:"agent"`
	Service      string   `json:"service"`
	Models       []string `json:"models"`
	TraceIDs     []string `json:"trace_ids"`
	Spans        int64    `json:"spans"`
	InputTokens  int64    `json:"input_tokens"`
	OutputTokens int64    `json:"output_tokens"`
	CostUSD      float64  `json:"cost_usd"`
	Unpriced     int64    `json:"unpriced"` // LLM calls with usage but no known price
	Errors       int64    `json:"errors"`
	Alerts       int64    `json:"alerts"`
	Partials     int64    `json:"partials"` // distinct batches (and identified records) merged
}

// MergePartials merges partial records into one Session per session id, sorted by last seen,
// newest first. Partials with the same (SessionID, BatchID) count once.
func MergePartials(ps []SessionPartial) []Session {
	by := map[string]*Session{}
	sets := map[string][2]map[string]bool{}
	done := map[[2]string]bool{}
	for _, p := range ps {
		key := [2]string{p.SessionID, p.BatchID}
		if done[key] {
			continue
		}
		done[key] = true
		s := by[p.SessionID]
		if s == nil {
			s = &Session{SessionID: p.SessionID, FirstSeen: p.FirstSeen}
			by[p.SessionID] = s
			sets[p.SessionID] = [2]map[string]bool{{}, {}}
		}
		if p.FirstSeen != 0 && (s.FirstSeen == 0 || p.FirstSeen < s.FirstSeen) {
			s.FirstSeen = p.FirstSeen
		}
		if p.LastSeen > s.LastSeen {
			s.LastSeen = p.LastSeen
		}
		s.Agent = maxStr(s.Agent, p.Agent)
		s.Service = maxStr(s.Service, p.Service)
		for _, m := range p.Models {
			sets[p.SessionID][0][m] = true
		}
		for _, t := range p.TraceIDs {
			sets[p.SessionID][1][t] = true
		}
		s.Spans += p.Spans
		s.InputTokens += p.InputTokens
		s.OutputTokens += p.OutputTokens
		s.CostUSD += p.CostUSD
		s.Unpriced += p.Unpriced
		s.Errors += p.Errors
		s.Alerts += p.Alerts
		s.Partials++
	}
	out := make([]Session, 0, len(by))
	for id, s := range by {
		s.Models = sortedKeys(sets[id][0])
		s.TraceIDs = sortedKeys(sets[id][1])
		out = append(out, *s)
	}
	SortSessions(out)
	return out
}

// SortSessions orders sessions by last seen, newest first, then session id.
func SortSessions(ss []Session) {
	sort.Slice(ss, func(i, j int) bool {
		if ss[i].LastSeen != ss[j].LastSeen {
			return ss[i].LastSeen > ss[j].LastSeen
		}
		return ss[i].SessionID < ss[j].SessionID
	})
}

// traceHex is the hex text of the last trace id asked for: the spans of a trace are mostly
// adjacent, so they share one string instead of encoding the id per span.
type traceHex struct {
	id pcommon.TraceID
	s  string
}

func (t *traceHex) str(id pcommon.TraceID) string {
	if t.s == "" || id != t.id {
		t.id, t.s = id, id.String()
	}
	return t.s
}

func eachSpan(td ptrace.Traces, f func(pcommon.Resource, ptrace.Span)) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			spans := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				f(rs.Resource(), spans.At(k))
			}
		}
	}
}

func eachLog(ld plog.Logs, f func(pcommon.Resource, plog.LogRecord)) {
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		for j := 0; j < rl.ScopeLogs().Len(); j++ {
			lrs := rl.ScopeLogs().At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				f(rl.Resource(), lrs.At(k))
			}
		}
	}
}

func str(m pcommon.Map, k string) string {
	if v, ok := m.Get(k); ok {
		return v.AsString()
	}
	return ""
}

func maxStr(a, b string) string {
	if b > a {
		return b
	}
	return a
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func bounded(v any) any {
	if s, ok := v.(string); ok && len(s) > MaxEventValueBytes {
		return s[:MaxEventValueBytes] + fmt.Sprintf("…[cut: %d bytes]", len(s))
	}
	return v
}

func eventID(e KeyEvent, i int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s|%s|%s|%d|%s|%s|%d|%s|%s", e.Kind, e.TraceID, e.SpanID, e.Time,
		e.Name, e.Message, i, e.SessionID, e.Attributes)))
	return hex.EncodeToString(sum[:])
}
