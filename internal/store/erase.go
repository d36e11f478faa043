// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
)

// Erasure names what a data-subject erasure removes from a tier: every row of the runs in
// TraceIDs, and every row whose session is Session (records that name the session without a
// trace id, such as alerts). Session is "" for the erasure of single runs.
type Erasure struct {
	Session  string   // gen_ai.conversation.id / session.id value, or "" (see above)
	TraceIDs []string // 32 lowercase hex characters each
}

// Empty tells whether the erasure names nothing.
func (e Erasure) Empty() bool { return e.Session == "" && len(e.TraceIDs) == 0 }

// Removed counts what one tier removed, by kind of record: "spans", "logs", "payload_refs"
// (hot SQLite), "run_index" (runindex rows, SQLite), "span_summaries", "key_events" (warm), "session_partials",
// "session_partials_changed", "files_rewritten", "files_deleted" (cold Parquet), "rows"
// (ClickHouse tables, by table name). Where names the backend (a path or an endpoint).
type Removed struct {
	Tier   string
	Where  string
	Counts map[string]int64
	// PayloadRefs are the payload reference URIs the removed rows held (hot tier): the objects
	// an erasure must sweep unless live rows still reference them.
	PayloadRefs []string
	// Notes say in words what could not be done completely (a WAL checkpoint a reader blocked).
	Notes []string
}

// Add adds n to the count of kind (creating the map).
func (r *Removed) Add(kind string, n int64) {
	if r.Counts == nil {
		r.Counts = map[string]int64{}
	}
	r.Counts[kind] += n
}

// Total is the sum of every count.
func (r Removed) Total() int64 {
	var n int64
	for _, v := range r.Counts {
		n += v
	}
	return n
}

// String is "spans 12, logs 3" in kind order, or "nothing" when every count is 0.
func (r Removed) String() string {
	var kinds []string
	for k, v := range r.Counts {
		if v != 0 {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return "nothing"
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, r.Counts[k])
	}
	return strings.Join(parts, ", ")
}

// Eraser is a tier that can erase runs and sessions (every backend: hot and warm SQLite, cold
// Parquet, the ClickHouse tables). Implementations are safe to run while the collector writes
// (SQLite WAL with a busy timeout, atomic object rewrites, ClickHouse mutations).
type Eraser interface {
	// SessionTraces lists the trace ids (32 lowercase hex) of the runs of session that this tier
	// holds: runs whose spans or records name it, and the run whose trace id it is (a run
	// without a session is its own session).
	SessionTraces(ctx context.Context, session string) ([]string, error)
	// Erase removes what e names and returns what it removed.
	Erase(ctx context.Context, e Erasure) (Removed, error)
}

// LiveRefs enumerates the payload reference URIs still referenced by stored rows (the hot
// tier's spans and log records, which include every pinned run: janitors never delete those),
// calling yield for each (a URI may come more than once) until it returns false. It is the shape
// payloadref's Collect (writer.Store.Collect) takes (COORDINATION.md interface 1).
type LiveRefs func(yield func(uri string) bool) error

// RefLister is a hot tier that can enumerate its live payload references.
type RefLister interface {
	// EachPayloadRef calls yield with the payload reference URIs of the stored rows (each at
	// least once), until yield returns false.
	EachPayloadRef(ctx context.Context, yield func(uri string) bool) error
}

// LiveRefsOf binds a RefLister to ctx.
func LiveRefsOf(ctx context.Context, l RefLister) LiveRefs {
	return func(yield func(uri string) bool) error { return l.EachPayloadRef(ctx, yield) }
}

// IsPayloadRef tells whether attribute k with value v is a payload reference: a key ending in
// "_ref" (genai.RefSuffix, docs/architecture.md "Payload references") whose string value is a URI.
func IsPayloadRef(k string, v pcommon.Value) bool {
	return len(k) > len(genai.RefSuffix) && strings.HasSuffix(k, genai.RefSuffix) &&
		v.Type() == pcommon.ValueTypeStr && strings.Contains(v.Str(), "://")
}

// mapRefs appends the payload references in m and, to depth 16, in the maps it holds (a log
// body map holds K_ref at any depth, as payload_offload writes them).
func mapRefs(out []string, m pcommon.Map, depth int) []string {
	if depth > 16 {
		return out
	}
	m.Range(func(k string, v pcommon.Value) bool {
		switch {
		case IsPayloadRef(k, v):
			out = append(out, v.Str())
		case v.Type() == pcommon.ValueTypeMap:
			out = mapRefs(out, v.Map(), depth+1)
		case v.Type() == pcommon.ValueTypeSlice:
			for i := 0; i < v.Slice().Len(); i++ {
				if e := v.Slice().At(i); e.Type() == pcommon.ValueTypeMap {
					out = mapRefs(out, e.Map(), depth+1)
				}
			}
		}
		return true
	})
	return out
}

// SpanPayloadRefs returns the payload reference URIs of a span: its attributes and its events'
// attributes (where payload_offload puts K_ref), distinct, sorted.
func SpanPayloadRefs(s ptrace.Span) []string {
	out := mapRefs(nil, s.Attributes(), 0)
	for i := 0; i < s.Events().Len(); i++ {
		out = mapRefs(out, s.Events().At(i).Attributes(), 0)
	}
	return uniq(out)
}

// LogPayloadRefs returns the payload reference URIs of a log record: its attributes (K_ref and
// log.body_ref) and, for a map body, K_ref at any depth; distinct, sorted.
func LogPayloadRefs(lr plog.LogRecord) []string {
	out := mapRefs(nil, lr.Attributes(), 0)
	if lr.Body().Type() == pcommon.ValueTypeMap {
		out = mapRefs(out, lr.Body().Map(), 0)
	}
	return uniq(out)
}

func uniq(s []string) []string {
	if len(s) < 2 {
		return s
	}
	sort.Strings(s)
	j := 1
	for i := 1; i < len(s); i++ {
		if s[i] != s[j-1] {
			s[j] = s[i]
			j++
		}
	}
	return s[:j]
}

// EachSpan calls f with every span of td.
func EachSpan(td ptrace.Traces, f func(ptrace.Span)) {
	eachSpan(td, func(_ pcommon.Resource, s ptrace.Span) { f(s) })
}

// EachLogRecord calls f with every log record of ld.
func EachLogRecord(ld plog.Logs, f func(plog.LogRecord)) {
	eachLog(ld, func(_ pcommon.Resource, lr plog.LogRecord) { f(lr) })
}
