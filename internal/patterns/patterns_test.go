// SPDX-License-Identifier: Apache-2.0

package patterns

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

func TestNormalise(t *testing.T) {
	for in, want := range map[string]string{
		"read_file: open /tmp/run-42/notes.txt: no such file":                  "read_file: open <path>: no such file",
		`tool "search_web" failed after 3 retries`:                             "tool <q> failed after <n> retries",
		"request req_8f3k2a9 id 550e8400-e29b-41d4-a716-446655440000 rejected": "request <id> id <uuid> rejected",
		"digest deadbeef00112233 mismatch at 0x1f":                             "digest <hex> mismatch at <hex>",
		"GET https://api.example.com/v1/x?q=1 returned 503":                    "GET <url> returned <n>",
		"  rate   limited\n(retry in 1.5s)  ":                                  "rate limited (retry in <n>)",
		"ToolError":                                                            "ToolError",
	} {
		assert.Equal(t, want, Normalise(in), in)
	}
	assert.Equal(t, "/v1/users/<n>/orders", Route("https://h.example/v1/users/123/orders?x=1"))
	assert.Equal(t, "/v1/items/<uuid>", Route("/v1/items/550e8400-e29b-41d4-a716-446655440000"))
	assert.Equal(t, "body.messages[*].content", Field("body.messages[3].content"))
}

// runOf builds a stored run: an agent root, tools in order, one of them failing with msg.
type spec struct {
	tool   string
	err    string
	finish string
}

func runOf(t *testing.T, trace byte, specs []spec, alerts ...string) *store.Run {
	t.Helper()
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "svc")
	ss := rs.ScopeSpans().AppendEmpty()
	tid := pcommon.TraceID{trace, 1}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	root := ss.Spans().AppendEmpty()
	root.SetTraceID(tid)
	root.SetSpanID(pcommon.SpanID{trace, 0xff})
	root.SetName("invoke_agent support")
	root.Attributes().PutStr(genai.AttrOperationName, "invoke_agent")
	root.Attributes().PutStr(genai.AttrAgentName, "support")
	root.SetStartTimestamp(pcommon.NewTimestampFromTime(t0))
	root.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Minute)))
	for i, s := range specs {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(tid)
		sp.SetSpanID(pcommon.SpanID{trace, byte(i + 1)})
		sp.SetParentSpanID(root.SpanID())
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(i+1) * time.Second)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(i+1)*time.Second + 500*time.Millisecond)))
		if s.tool != "" {
			sp.SetName("execute_tool " + s.tool)
			sp.Attributes().PutStr(genai.AttrOperationName, "execute_tool")
			sp.Attributes().PutStr(genai.AttrToolName, s.tool)
		} else {
			sp.SetName("chat gpt-4o")
			sp.Attributes().PutStr(genai.AttrOperationName, "chat")
			sp.Attributes().PutStr(genai.AttrRequestModel, "gpt-4o")
			if s.finish != "" {
				sp.Attributes().PutEmptySlice(genai.AttrFinishReasons).AppendEmpty().SetStr(s.finish)
			}
		}
		if s.err != "" {
			sp.Status().SetCode(ptrace.StatusCodeError)
			sp.Status().SetMessage(s.err)
			sp.Attributes().PutStr(genai.AttrErrorType, "ToolError")
		}
	}
	ld := plog.NewLogs()
	for _, k := range alerts {
		lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		lr.SetEventName(runagainattr.EventAlert)
		lr.SetTraceID(tid)
		lr.SetTimestamp(pcommon.NewTimestampFromTime(t0.Add(30 * time.Second)))
		lr.Attributes().PutStr(runagainattr.AttrAlertKind, k)
	}
	return &store.Run{TraceID: tid.String(), Traces: td, Logs: ld, Tier: store.TierHot}
}

func sigOf(t *testing.T, r *store.Run) Signature {
	t.Helper()
	v, err := runview.Build(context.Background(), r, runview.Options{})
	require.NoError(t, err)
	return FromView(v)
}

func TestSignatureFields(t *testing.T) {
	s := sigOf(t, runOf(t, 1, []spec{{}, {tool: "search_web"}, {}, {tool: "search_web"}, {}, {tool: "read_file", err: "read_file: open /tmp/a/1.txt: denied"}, {finish: "length"}}, "loop"))
	require.True(t, s.Failing())
	require.Len(t, s.Errors, 1)
	assert.Equal(t, Error{Kind: KindTool, Name: "read_file", Type: "ToolError", Message: "read_file: open <path>: denied", Step: 6, Count: 1}, s.Errors[0])
	assert.Equal(t, []string{"length"}, s.FinishReasons)
	assert.Equal(t, []string{"loop"}, s.Alerts)
	assert.Equal(t, []string{"search_web+"}, s.Shape, "the loop of search_web before the failure, collapsed")
	assert.Contains(t, s.Title(), `tool read_file: ToolError "read_file: open <path>: denied"`)

	ok := sigOf(t, runOf(t, 2, []spec{{}, {tool: "search_web"}, {}}))
	assert.False(t, ok.Failing())
	assert.Equal(t, "", ok.ID())
}

// A run whose error differs only by an id or a number, at another step, after other steps, is
// the same pattern; the merge rules that joined them are named.
func TestSamePatternAcrossIDsAndSteps(t *testing.T) {
	a := sigOf(t, runOf(t, 3, []spec{{}, {tool: "run_sql", err: "run_sql: query q_81f2 timed out after 30s"}}))
	b := sigOf(t, runOf(t, 4, []spec{{}, {tool: "get_weather"}, {}, {tool: "run_sql", err: "run_sql: query q_9ac3 timed out after 45s"}}))
	c := sigOf(t, runOf(t, 5, []spec{{}, {tool: "run_sql", err: "run_sql: permission denied"}}))
	assert.Equal(t, a.ID(), b.ID())
	assert.NotEqual(t, a.VariantID(), b.VariantID())
	assert.NotEqual(t, a.ID(), c.ID(), "another message is another pattern")

	g := NewGrouper()
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	for i, s := range []Signature{a, b, a, c} {
		g.Add(Run{TraceID: string(rune('a' + i)), Start: now.Add(time.Duration(i) * 25 * time.Hour), PatternID: s.ID(), VariantID: s.VariantID(), Agent: "support", CostUSD: 0.5})
	}
	g.Add(Run{TraceID: "z", Start: now})
	rep := g.Report(map[string]Signature{a.VariantID(): a, b.VariantID(): b, c.VariantID(): c})
	assert.Equal(t, int64(5), rep.Runs)
	assert.Equal(t, int64(4), rep.Failing)
	require.Len(t, rep.Patterns, 2)
	p := rep.Patterns[0]
	assert.Equal(t, a.ID(), p.ID)
	assert.Equal(t, int64(3), p.Runs)
	assert.InDelta(t, 0.6, p.ShareOfRuns, 1e-9)
	assert.InDelta(t, 0.75, p.ShareOfFailing, 1e-9)
	assert.Equal(t, []string{RuleStepIndex, RuleStepsBefore}, p.MergedBy)
	assert.Equal(t, []Day{{"2026-01-02", 1}, {"2026-01-03", 1}, {"2026-01-04", 1}}, p.Trend)
	assert.Equal(t, []string{"c", "b", "a"}, p.Examples, "the newest run of each variant, then the newest others")
	assert.InDelta(t, 1.5, p.CostUSD, 1e-9)
}

func TestUncategorised(t *testing.T) {
	r := runOf(t, 6, nil)
	r.Traces = ptrace.NewTraces()
	r.Session = &store.Session{SessionID: "s", Errors: 2}
	s := sigOf(t, r)
	assert.True(t, s.Uncategorised)
	assert.Equal(t, Uncategorised, s.ID())
}

// A command runagain ran that exited non-zero is one failure whatever runagain called its root
// span: the crash recorded by `proxy --record` and the same crash under `runagain test`.
func TestCommandCrashSameUnderRecordAndTest(t *testing.T) {
	crash := func(trace byte, name string, code int64) Signature {
		r := runOf(t, trace, []spec{{}})
		root := r.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
		root.SetName(name)
		root.Attributes().Clear()
		root.Attributes().PutInt(AttrProcessExitCode, code)
		root.Status().SetCode(ptrace.StatusCodeError)
		return sigOf(t, r)
	}
	rec := crash(7, "runagain record agent.py", 3)
	test := crash(8, "runagain test 3d407bd2bcc69c5a058216a6a766f052", 3)
	require.Len(t, rec.Errors, 1)
	assert.Equal(t, Error{Kind: KindProcess, Name: "command", Type: "exit 3", Count: 1}, rec.Errors[0])
	assert.Equal(t, rec.ID(), test.ID())
	assert.NotEqual(t, rec.ID(), crash(9, "runagain test 3d407bd2bcc69c5a058216a6a766f052", 1).ID(), "another exit code is another failure")
}
