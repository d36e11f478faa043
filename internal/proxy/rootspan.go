// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"fmt"
	"path/filepath"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	fx "github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/otlpid"
	"github.com/runagain/runagain/internal/runview"
)

// Command is one run of an agent command through the proxy (proxy --record, replay, rerun,
// test): its root span, the parent of the exchanges that carried the run's traceparent.
type Command struct {
	Root       Root
	Name       string   // span name; "" gives "runagain record <base name of Args[0]>"
	Args       []string // the command line (process.command_args); at least the program
	Start, End time.Time
	ExitCode   int // process.exit.code; non-zero sets the span status to ERROR
}

// RootSpan is the command's root span as a trace of its own: resource service.name
// runagain-proxy, scope fixture.ScopeName, kind INTERNAL, attributes process.command_args and
// process.exit.code (OpenTelemetry process semantic conventions).
func (c Command) RootSpan() ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "runagain-proxy")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(fx.ScopeName)
	sp := ss.Spans().AppendEmpty()
	sp.SetTraceID(c.Root.TraceID)
	sp.SetSpanID(c.Root.SpanID)
	name := c.Name
	if name == "" {
		name = "runagain record " + filepath.Base(c.Args[0])
	}
	sp.SetName(name)
	sp.SetKind(ptrace.SpanKindInternal)
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(c.Start))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(c.End))
	a := sp.Attributes()
	s := a.PutEmptySlice("process.command_args")
	for _, x := range c.Args {
		s.AppendEmpty().SetStr(x)
	}
	a.PutInt("process.exit.code", int64(c.ExitCode))
	if c.ExitCode != 0 {
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage(fmt.Sprintf("exit code %d", c.ExitCode)) // what the run list shows for it
	}
	return td
}

// RerunOfView is the RerunOf of a new run of orig, the original run as the read model reads
// it: its trace id and its first root span (runview.View.RootSpanID; left empty when the run
// has none), with changes (nil records no runagainattr.RerunChanges, an empty list records
// none made). ok is false when orig's trace id is not one (32 hex characters).
func RerunOfView(orig *runview.View, changes []string) (r RerunOf, ok bool) {
	tid, err := otlpid.ParseTraceID(orig.TraceID)
	if err != nil {
		return RerunOf{}, false
	}
	r = RerunOf{OriginalTrace: tid, Changes: changes}
	r.OriginalRoot, _ = orig.RootSpanID()
	return r, true
}

// RerunRootSpan is the root span of a new run made by rerun or replay from orig: c's root span
// linked to orig's first root span and naming each change (nil: none, an empty
// runagainattr.RerunChanges list), --from-step (0: none) and the first LLM call that departed
// from the recording (first nil: none), by MarkRerun.
func RerunRootSpan(c Command, orig *runview.View, changes []string, fromStep int, first *Departure) ptrace.Traces {
	td := c.RootSpan()
	if changes == nil {
		changes = []string{}
	}
	r, _ := RerunOfView(orig, changes)
	r.FromStep = fromStep
	if first != nil {
		r.FirstDeparture = first.LLMCall
	}
	MarkRerun(td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0), r)
	return td
}
