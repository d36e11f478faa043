// SPDX-License-Identifier: Apache-2.0

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/runagain/runagain/connector/agentguardconnector/internal/metadata"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/runview/rule"
	"github.com/runagain/runagain/internal/store"
)

// AlertEventName is the event name of alert log records.
const AlertEventName = store.AlertEventName

// Log record attribute keys of alerts (besides alert.kind, session.id, gen_ai.agent.name and
// the subject gen_ai.tool.name or gen_ai.request.model; evidence keys are runagain.alert.*).
const (
	AttrAlertKind     = "alert.kind"
	AttrAlertRule     = "runagain.alert.rule"
	AttrAlertSpanIDs  = "runagain.alert.span_ids"
	AttrAlertTraceIDs = "runagain.alert.trace_ids"
)

type evidence struct {
	key   string
	value any // int64, float64 or string
}

// alert is one inferred finding. It points at spans (trace and span ids) and never changes them.
type alert struct {
	kind, rule              string
	service, agent, session string
	at                      spanRef // the span whose arrival crossed the threshold
	ts                      pcommon.Timestamp
	subject                 kv
	spans                   []spanRef // spans involved (loop, cost spike): same session
	hits                    []hitRef  // spans involved (window alerts): any session of the service
	evidence                []evidence
	message                 string
	// recordID, when set, is the record's runagain.record.id (pattern alerts point at a run,
	// not at spans: raisePattern).
	recordID string
}

// batch collects the output of one ConsumeTraces call.
type batch struct {
	st     *state
	now    time.Time
	ts     pcommon.Timestamp
	cur    pcommon.Timestamp // end time of the span being processed
	alerts []*alert
	// uncounted are the batch's spans whose usage the counting rule does not count (a proxy
	// exchange joined to an instrumented call, a framework's call over the client library's),
	// judged with the spans of their traces in earlier batches (rule.Window, join_window), so
	// cost and token metrics count each call once.
	uncounted map[rule.SpanKey]bool
}

func (st *state) newBatch(now time.Time) *batch {
	return &batch{st: st, now: now, ts: pcommon.NewTimestampFromTime(now)}
}

func (b *batch) raise(a *alert) {
	a.ts = b.cur
	b.alerts = append(b.alerts, a)
	s := b.st.agg.get(mAlerts, a.service, []kv{{AttrAlertKind, a.kind}, {genai.AttrAgentName, a.agent}}, b.ts)
	b.st.agg.record(s, 1, exemplar{trace: a.at.trace, span: a.at.span, ts: a.ts})
}

// build returns one log record per alert of the batch (its metrics wait in the aggregator for
// the next flush).
func (b *batch) build() plog.Logs {
	ld := plog.NewLogs()
	var (
		cur string
		sl  plog.ScopeLogs
	)
	for i, a := range b.alerts {
		if i == 0 || a.service != cur {
			cur = a.service
			rl := ld.ResourceLogs().AppendEmpty()
			if a.service != "" {
				rl.Resource().Attributes().PutStr(genai.AttrServiceName, a.service)
			}
			sl = rl.ScopeLogs().AppendEmpty()
			sl.Scope().SetName(metadata.ScopeName)
		}
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(a.ts)
		lr.SetObservedTimestamp(b.ts)
		lr.SetSeverityNumber(plog.SeverityNumberWarn)
		lr.SetSeverityText("WARN")
		lr.SetEventName(AlertEventName)
		lr.SetTraceID(a.at.trace)
		lr.SetSpanID(a.at.span)
		lr.Body().SetStr(a.message)
		attrs := lr.Attributes()
		attrs.PutStr(AttrAlertKind, a.kind)
		if a.rule != "" {
			attrs.PutStr(AttrAlertRule, a.rule)
		}
		attrs.PutStr(genai.AttrSessionID, a.session)
		if a.agent != "" {
			attrs.PutStr(genai.AttrAgentName, a.agent)
		}
		if a.subject.k != "" {
			attrs.PutStr(a.subject.k, a.subject.v)
		}
		spanIDs := attrs.PutEmptySlice(AttrAlertSpanIDs)
		traceIDs := attrs.PutEmptySlice(AttrAlertTraceIDs)
		if len(a.hits) > 0 {
			sessions := attrs.PutEmptySlice("runagain.alert.session_ids")
			for _, h := range a.hits {
				spanIDs.AppendEmpty().SetStr(h.span.String())
				traceIDs.AppendEmpty().SetStr(h.trace.String())
				sessions.AppendEmpty().SetStr(h.session)
			}
		} else {
			for _, r := range a.spans {
				spanIDs.AppendEmpty().SetStr(r.span.String())
				traceIDs.AppendEmpty().SetStr(r.trace.String())
			}
		}
		// The alert's identity: its rule, its run and the spans it points at (a re-import after a
		// restart raises the same alert again; the store keeps it once).
		parts := []string{AlertEventName, a.kind, a.rule, a.at.trace.String(), a.at.span.String()}
		for i := 0; i < spanIDs.Len(); i++ {
			parts = append(parts, traceIDs.At(i).Str()+"/"+spanIDs.At(i).Str())
		}
		if a.recordID != "" {
			attrs.PutStr(runagainattr.RecordID, a.recordID)
		} else {
			attrs.PutStr(runagainattr.RecordID, runagainattr.RecordIDOf(parts...))
		}
		for _, e := range a.evidence {
			switch v := e.value.(type) {
			case int64:
				attrs.PutInt(e.key, v)
			case float64:
				attrs.PutDouble(e.key, v)
			case string:
				attrs.PutStr(e.key, v)
			}
		}
	}
	return ld
}
