// SPDX-License-Identifier: Apache-2.0

// Package storetest builds agent-run fixtures for the storage tier tests: traces with an agent
// root, LLM calls carrying payload attributes and usage, a failing tool call with an exception
// event, and agent_guard alert records.
package storetest

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/runagainattr"
)

// TraceID derives a deterministic trace id from seed.
func TraceID(seed string) pcommon.TraceID {
	s := sha256.Sum256([]byte("trace:" + seed))
	var id pcommon.TraceID
	copy(id[:], s[:16])
	return id
}

// SpanID derives a deterministic span id from seed and n.
func SpanID(seed string, n int) pcommon.SpanID {
	s := sha256.Sum256([]byte(fmt.Sprintf("span:%s:%d", seed, n)))
	var id pcommon.SpanID
	copy(id[:], s[:8])
	if id.IsEmpty() {
		binary.BigEndian.PutUint64(id[:], 1)
	}
	return id
}

// Run describes one fixture run.
type Run struct {
	Seed     string // names the trace (TraceID(Seed))
	Session  string // gen_ai.conversation.id; '' for none
	Service  string
	Agent    string
	Model    string
	Start    int64  // Unix ns
	LLMCalls int    // each with 100 input and 20 output tokens
	ToolFail bool   // add a failing tool call with an exception event
	FailTool string // the failing tool's gen_ai.tool.name ('' for get_weather)
}

// Spans is how many spans Add creates for r.
func (r Run) Spans() int {
	n := 1 + r.LLMCalls
	if r.ToolFail {
		n++
	}
	return n
}

// Payload is the input-messages text every LLM span carries (the warm tier must not keep it).
const Payload = `[{"role":"user","parts":[{"type":"text","content":"PAYLOAD-SECRET what is the weather"}]}]`

// Add appends r's spans to td (one resource per run).
func Add(td ptrace.Traces, r Run) {
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", r.Service)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("storetest")
	tid := TraceID(r.Seed)
	root := ss.Spans().AppendEmpty()
	root.SetTraceID(tid)
	root.SetSpanID(SpanID(r.Seed, 0))
	root.SetName("invoke_agent " + r.Agent)
	root.SetStartTimestamp(pcommon.Timestamp(r.Start))
	end := r.Start + int64(r.Spans())*1_000_000_000
	root.SetEndTimestamp(pcommon.Timestamp(end))
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	root.Attributes().PutStr("gen_ai.agent.name", r.Agent)
	if r.Session != "" {
		root.Attributes().PutStr("gen_ai.conversation.id", r.Session)
	}
	for i := 1; i <= r.LLMCalls; i++ {
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(SpanID(r.Seed, i))
		s.SetParentSpanID(root.SpanID())
		s.SetName("chat " + r.Model)
		s.SetKind(ptrace.SpanKindClient)
		s.SetStartTimestamp(pcommon.Timestamp(r.Start + int64(i)*1_000_000_000))
		s.SetEndTimestamp(pcommon.Timestamp(r.Start + int64(i)*1_000_000_000 + 500_000_000))
		a := s.Attributes()
		a.PutStr("gen_ai.operation.name", "chat")
		a.PutStr("gen_ai.request.model", r.Model)
		a.PutInt("gen_ai.usage.input_tokens", 100)
		a.PutInt("gen_ai.usage.output_tokens", 20)
		a.PutStr("gen_ai.input.messages", Payload)
		a.PutStr("gen_ai.output.messages_ref", "file:///payloads/ab/cd")
		if r.Session != "" {
			a.PutStr("gen_ai.conversation.id", r.Session)
		}
	}
	if r.ToolFail {
		i := r.LLMCalls + 1
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(SpanID(r.Seed, i))
		s.SetParentSpanID(root.SpanID())
		tool := r.FailTool
		if tool == "" {
			tool = "get_weather"
		}
		s.SetName("execute_tool " + tool)
		s.SetStartTimestamp(pcommon.Timestamp(r.Start + int64(i)*1_000_000_000))
		s.SetEndTimestamp(pcommon.Timestamp(r.Start + int64(i)*1_000_000_000 + 100_000_000))
		s.Status().SetCode(ptrace.StatusCodeError)
		s.Status().SetMessage("timeout")
		s.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
		s.Attributes().PutStr("gen_ai.tool.name", tool)
		s.Attributes().PutStr("gen_ai.tool.call.arguments", `{"city":"PAYLOAD-SECRET"}`)
		ev := s.Events().AppendEmpty()
		ev.SetName("exception")
		ev.SetTimestamp(pcommon.Timestamp(r.Start + int64(i)*1_000_000_000 + 90_000_000))
		ev.Attributes().PutStr("exception.type", "TimeoutError")
		ev.Attributes().PutStr("exception.message", "weather API timed out")
		ev.Attributes().PutStr("exception.stacktrace", "Traceback ... PAYLOAD-SECRET")
	}
}

// Traces returns td holding the runs.
func Traces(runs ...Run) ptrace.Traces {
	td := ptrace.NewTraces()
	for _, r := range runs {
		Add(td, r)
	}
	return td
}

// Alert returns logs holding one agent_guard alert pointing at r's first LLM span.
func Alert(r Run, body string) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", r.Service)
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetEventName("runagain.alert")
	lr.SetTimestamp(pcommon.Timestamp(r.Start + 1_500_000_000))
	lr.SetTraceID(TraceID(r.Seed))
	lr.SetSpanID(SpanID(r.Seed, 1))
	lr.SetSeverityNumber(plog.SeverityNumberWarn)
	lr.Body().SetStr(body)
	lr.Attributes().PutStr("runagain.alert.kind", "loop")
	if r.Session != "" {
		lr.Attributes().PutStr("gen_ai.conversation.id", r.Session)
	}
	return ld
}

// Divergence returns logs holding one replay divergence record (runagainattr.EventDivergence, as
// replay writes it on the attempt's run) pointing at r's first LLM span.
func Divergence(r Run, body string) plog.Logs {
	ld := Alert(r, body)
	ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).SetEventName(runagainattr.EventDivergence)
	return ld
}
