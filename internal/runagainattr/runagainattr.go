// SPDX-License-Identifier: Apache-2.0

// Package runagainattr is the one place for runagain's own attribute keys and event names
// (runagain.*), like a semantic-conventions package: every writer (proxy, rerun, test, importer,
// agent_guard) and every reader (the read model, the UI, datasets) uses these constants, so a key
// is spelled and typed once.
//
// What an agent recorded keeps its own conventions (gen_ai.*, http.*: internal/genai,
// internal/fixture); the keys here mark what runagain added (docs/architecture.md "Recorded versus inferred").
package runagainattr

import (
	"crypto/sha256"
	"encoding/hex"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Keys runagain puts on recorded spans.
const (
	// GenAIDerived (bool) is on an HTTP exchange span whose GenAI attributes the proxy or the
	// cassette importer read from the recorded bodies (docs/architecture.md "Derived at record time").
	GenAIDerived = "runagain.genai.derived"
	// FixtureSource (string) marks a recorded HTTP exchange span: "proxy", or the importer's
	// cassette format.
	FixtureSource = "runagain.fixture.source"
	// Sequence (int) orders the events of a run where an SDK gives no sequence of its own
	// (docs/architecture.md "Order": a sequence attribute wins over start time).
	Sequence = "runagain.sequence"
)

// Keys on the root span of a rerun (`runagain rerun`) and a test run (`runagain test`), and on a
// rerun's exchanges.
const (
	RerunOriginalTrace = "runagain.rerun.original_trace_id" // string: the trace id rerun or tested
	// RerunChanges (string array) names each change of the rerun ("model=gpt-4.1", a test's
	// --change text). Written by PutChanges; read by Changes, which also reads the plain string
	// `runagain test` wrote before.
	RerunChanges        = "runagain.rerun.changes"
	RerunFromStep       = "runagain.rerun.from_step"       // int: --from-step
	RerunFirstDeparture = "runagain.rerun.first_departure" // int: the first LLM call that went live
	RerunSource         = "runagain.rerun.source"          // string on each exchange: recording | live | refused
	RerunOriginalSpan   = "runagain.rerun.original_span_id"
	RerunLLMCall        = "runagain.rerun.llm_call" // int: 1-based LLM request of the rerun
	// RerunEdits (string) on a rerun's exchange whose request body a --set changed: the specs
	// applied, comma-separated. The agent's own span of that call records the request before
	// the change, so a join (internal/proxy join.go) matches such an exchange by time only.
	RerunEdits = "runagain.rerun.edits"

	TestDataset = "runagain.test.dataset"         // string: the dataset a test run checks
	TestVersion = "runagain.test.dataset.version" // string: its version
	TestCase    = "runagain.test.case"            // string: the case id

	// LinkType (string) on the span link from a rerun or test run to the original run's root.
	LinkType = "runagain.link.type"
	// LinkRerunOf is LinkType's value on a rerun's link.
	LinkRerunOf = "rerun_of"
	// LinkInferred is LinkType's value on the link from a proxy exchange to the agent's own span
	// it was placed under without a traceparent (internal/proxy join): an inference, not a
	// propagated context. LinkEvidence ([]string) on that link says what matched: "resource"
	// (ExecutionTraceID), "process" (process.pid), "time", "model", "body".
	LinkInferred = "inferred"
	LinkEvidence = "runagain.link.evidence"
	// ExecutionTraceID (string) is the resource attribute `proxy --record -- COMMAND` adds to the
	// command's OTEL_RESOURCE_ATTRIBUTES: the trace id of its own root span, so the agent's
	// telemetry names the execution it belongs to even when its SDK ignores TRACEPARENT.
	ExecutionTraceID = "runagain.execution.trace_id"
	// Joined (string) on the proxy's root span: how the proxy's exchanges joined the agent's own
	// trace ("inferred"); absent when they did not (or joined through traceparent).
	Joined = "runagain.proxy.joined"
)

// Log records runagain emits that point at a run (inferences: docs/architecture.md "Recorded versus
// inferred"), and their attributes.
const (
	// RecordID (string) on an alert or divergence record is its identity: the hex SHA-256 of the
	// rule, the run and the spans it points at (RecordIDOf), so a store keeps it once however
	// often it is emitted again (a run re-imported after a collector restart).
	RecordID = "runagain.record.id"

	EventAlert     = "runagain.alert" // agent_guard
	AttrAlertKind  = "alert.kind"
	AttrAlertCount = "runagain.alert.count"
	// AttrAlertKindLegacy is the alert kind's key on records of older agent_guard builds (read by
	// AlertKind, never written).
	AttrAlertKindLegacy = "runagain.alert.kind"
	// AlertKindPatternNew and AlertKindPatternRateJump are the alert kinds of agent_guard's
	// pattern watcher: alerts about a failure pattern (internal/patterns), raised on a run that
	// already fails. A run's signature leaves them out, so raising one never moves the run to
	// another pattern.
	AlertKindPatternNew      = "pattern_new"
	AlertKindPatternRateJump = "pattern_rate_jump"

	EventDivergence    = "runagain.replay.divergence" // replay, rerun and test
	DivergenceField    = "runagain.replay.divergence.field"
	DivergenceExpected = "runagain.replay.divergence.expected"
	DivergenceGot      = "runagain.replay.divergence.got"
	DivergenceRequest  = "runagain.replay.request.index" // int: 1-based replayed request
	DivergenceNearest  = "runagain.replay.nearest.index"
	// ReplayRefusal is set on the divergence record of a request the side-effect firewall refused
	// (HTTP: internal/proxy; MCP: internal/mcp), saying why.
	ReplayRefusal = "runagain.replay.refusal"
	// On a replay run's root span (ints): the recording's HTTP exchanges, how many were served,
	// the requests the agent made, and how many were refused or sent live. A replay records no
	// exchange spans of its own, so these say what it served (`runagain show`).
	ReplayRecorded = "runagain.replay.recorded"
	ReplayServed   = "runagain.replay.served"
	ReplayRequests = "runagain.replay.requests"
	ReplayRefused  = "runagain.replay.refused"
	ReplayLive     = "runagain.replay.live"
	// MCPServer is the --name of the MCP server an exchange recorded over stdio went to.
	MCPServer            = "runagain.mcp.server.name"
	EventPrefix          = "runagain."
	MetricCost           = "runagain.cost"          // agent_guard counter, USD
	MetricUnpricedCalls  = "runagain.cost.unpriced" // agent_guard counter, {call}
	AttrCostReportedUSD  = "runagain.cost.reported_usd"
	AttrRedactionCount   = "runagain.redaction.count"
	AttrRedactionChanged = "runagain.redaction.changed"
)

// PutChanges sets RerunChanges on m as a string array (an empty array for no change).
func PutChanges(m pcommon.Map, changes []string) {
	s := m.PutEmptySlice(RerunChanges)
	s.EnsureCapacity(len(changes))
	for _, c := range changes {
		s.AppendEmpty().SetStr(c)
	}
}

// Changes reads RerunChanges from m: the string array PutChanges writes, or the plain string
// `runagain test --change` wrote before (one change; "" is none). ok is false when absent.
func Changes(m pcommon.Map) (changes []string, ok bool) {
	v, ok := m.Get(RerunChanges)
	if !ok {
		return nil, false
	}
	if v.Type() == pcommon.ValueTypeSlice {
		s := v.Slice()
		out := make([]string, 0, s.Len())
		for i := 0; i < s.Len(); i++ {
			out = append(out, s.At(i).AsString())
		}
		return out, true
	}
	if str := v.AsString(); str != "" {
		return []string{str}, true
	}
	return []string{}, true
}

// ValidRecordID tells whether id is a RecordID (64 lower-case hex digits, as RecordIDOf
// writes): anything else a client sent in that attribute is ignored, and the record is keyed by
// its content.
func ValidRecordID(id string) bool {
	if len(id) != 64 {
		return false
	}
	for _, c := range id {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// RecordIDOf is the RecordID of a record made of parts (its rule or event, its run, the spans it
// points at, in order): the hex SHA-256 of the parts, each followed by a newline.
func RecordIDOf(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// AlertKind reads an alert record's kind (AttrAlertKind, else AttrAlertKindLegacy); "" when it
// names none.
func AlertKind(m pcommon.Map) string {
	for _, k := range []string{AttrAlertKind, AttrAlertKindLegacy} {
		if v, ok := m.Get(k); ok && v.AsString() != "" {
			return v.AsString()
		}
	}
	return ""
}
