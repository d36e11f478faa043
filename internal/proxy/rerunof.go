// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/runagainattr"
)

// RerunOf says what a new run (a rerun, a replay or a test run) reruns: DESIGN "Reruns and
// datasets": a rerun is a new trace linked to its original, with attributes naming the original
// and each change.
type RerunOf struct {
	OriginalTrace pcommon.TraceID
	OriginalRoot  pcommon.SpanID // the original run's root span; empty when unknown
	// Changes name each change (rerun --set specs, a test's --change); nil records none.
	Changes        []string
	FromStep       int // --from-step; 0: none
	FirstDeparture int // the first LLM call that went live; 0: none
}

// MarkRerun puts the rerun rule on sp, the new run's root span: the attributes naming the
// original run and each change (runagainattr.RerunOriginalTrace, RerunChanges as a string
// array, RerunFromStep, RerunFirstDeparture) and a span link to the original run's root
// (runagainattr.LinkType rerun_of). It is the one writer of these attributes (rerun, replay, test).
func MarkRerun(sp ptrace.Span, r RerunOf) {
	a := sp.Attributes()
	a.PutStr(runagainattr.RerunOriginalTrace, r.OriginalTrace.String())
	if r.Changes != nil {
		runagainattr.PutChanges(a, r.Changes)
	}
	if r.FromStep > 0 {
		a.PutInt(runagainattr.RerunFromStep, int64(r.FromStep))
	}
	if r.FirstDeparture > 0 {
		a.PutInt(runagainattr.RerunFirstDeparture, int64(r.FirstDeparture))
	}
	link := sp.Links().AppendEmpty()
	link.SetTraceID(r.OriginalTrace)
	link.SetSpanID(r.OriginalRoot)
	link.Attributes().PutStr(runagainattr.LinkType, runagainattr.LinkRerunOf)
}
