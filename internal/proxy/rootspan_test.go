// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// original is a recorded run of two spans: a child that started first, then its root.
func original(t *testing.T) (*runview.View, pcommon.SpanID) {
	t.Helper()
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	tid := pcommon.TraceID{1, 2, 3}
	rootID, childID := pcommon.SpanID{9}, pcommon.SpanID{8}
	t0 := time.Unix(1_700_000_000, 0)
	child := spans.AppendEmpty()
	child.SetTraceID(tid)
	child.SetSpanID(childID)
	child.SetParentSpanID(rootID)
	child.SetStartTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Second)))
	root := spans.AppendEmpty()
	root.SetTraceID(tid)
	root.SetSpanID(rootID)
	root.SetName("agent")
	root.SetStartTimestamp(pcommon.NewTimestampFromTime(t0))
	v, err := runview.Build(context.Background(), &store.Run{TraceID: tid.String(), Tier: store.TierHot, Traces: td, Logs: plog.NewLogs()}, runview.Options{})
	require.NoError(t, err)
	return v, rootID
}

// The new run's root span names the original and links to its root span, whatever order the
// spans were stored in; a replay (no changes) records an empty change list.
func TestRerunRootSpanLinksToTheOriginalRoot(t *testing.T) {
	orig, rootID := original(t)
	start := time.Unix(1_800_000_000, 0)
	c := Command{Root: Root{TraceID: NewTraceID(), SpanID: NewSpanID()}, Name: "runagain rerun agent.py",
		Args: []string{"/usr/bin/python3", "agent.py"}, Start: start, End: start.Add(2 * time.Second), ExitCode: 3}
	td := RerunRootSpan(c, orig, []string{"model=gpt-4.1"}, 2, &Departure{LLMCall: 3})
	require.Equal(t, 1, td.SpanCount())
	sp := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	assert.Equal(t, "runagain rerun agent.py", sp.Name())
	assert.Equal(t, c.Root.SpanID, sp.SpanID())
	assert.Equal(t, ptrace.StatusCodeError, sp.Status().Code(), "a non-zero exit")
	assert.Equal(t, "exit code 3", sp.Status().Message(), "what the run list previews for a failed run")
	a := sp.Attributes()
	code, _ := a.Get("process.exit.code")
	assert.Equal(t, int64(3), code.Int())
	ot, _ := a.Get(runagainattr.RerunOriginalTrace)
	assert.Equal(t, orig.TraceID, ot.Str())
	ch, ok := runagainattr.Changes(a)
	require.True(t, ok)
	assert.Equal(t, []string{"model=gpt-4.1"}, ch)
	fs, _ := a.Get(runagainattr.RerunFromStep)
	assert.Equal(t, int64(2), fs.Int())
	fd, _ := a.Get(runagainattr.RerunFirstDeparture)
	assert.Equal(t, int64(3), fd.Int())
	require.Equal(t, 1, sp.Links().Len())
	l := sp.Links().At(0)
	assert.Equal(t, rootID, l.SpanID(), "the link names the original's root span, not its first stored span")
	lt, _ := l.Attributes().Get(runagainattr.LinkType)
	assert.Equal(t, runagainattr.LinkRerunOf, lt.Str())

	replay := RerunRootSpan(Command{Root: c.Root, Args: []string{"agent"}, Start: start, End: start}, orig, nil, 0, nil)
	a = replay.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes()
	ch, ok = runagainattr.Changes(a)
	assert.True(t, ok, "a replay records that it changed nothing")
	assert.Empty(t, ch)
	_, ok = a.Get(runagainattr.RerunFromStep)
	assert.False(t, ok)
	assert.Equal(t, "runagain record agent", replay.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Name())
}

// A test run given no --change records no change list at all; an original whose trace id is
// not one gives no rerun record.
func TestRerunOfView(t *testing.T) {
	orig, rootID := original(t)
	r, ok := RerunOfView(orig, nil)
	require.True(t, ok)
	assert.Nil(t, r.Changes)
	assert.Equal(t, rootID, r.OriginalRoot)
	_, ok = RerunOfView(&runview.View{TraceID: "not-a-trace"}, nil)
	assert.False(t, ok)
}
