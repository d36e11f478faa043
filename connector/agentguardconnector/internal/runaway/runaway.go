// SPDX-License-Identifier: Apache-2.0

// Package runaway generates agent sessions as OTLP traces for tests and demos of the agent_guard
// connector: a runaway session repeats one tool call with the same arguments.
package runaway

import (
	"encoding/binary"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Options describe a generated session. Zero values take the defaults of Default.
type Options struct {
	Session  string        // gen_ai.conversation.id
	Service  string        // service.name
	Agent    string        // gen_ai.agent.name
	Provider string        // gen_ai.provider.name
	Model    string        // gen_ai.request.model / gen_ai.response.model
	Tool     string        // gen_ai.tool.name
	Args     string        // gen_ai.tool.call.arguments, identical on every call
	Calls    int           // tool calls (each preceded by one chat call)
	Start    time.Time     // start of the agent span
	Step     time.Duration // time between consecutive calls
	Seed     uint64        // makes trace and span ids distinct between sessions
	// InputTokens and OutputTokens are the usage of each chat call.
	InputTokens, OutputTokens int64
}

// Default is a runaway session: 20 identical get_weather calls by gpt-4o-mini.
func Default() Options {
	return Options{
		Session: "runaway-session-1", Service: "weather-agent", Agent: "weather_assistant",
		Provider: "openai", Model: "gpt-4o-mini", Tool: "get_weather", Args: `{"city":"Paris","unit":"celsius"}`,
		Calls: 20, Start: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), Step: 2 * time.Second, Seed: 1,
		InputTokens: 1200, OutputTokens: 40,
	}
}

func (o *Options) fill() {
	d := Default()
	if o.Session == "" {
		o.Session = d.Session
	}
	if o.Service == "" {
		o.Service = d.Service
	}
	if o.Agent == "" {
		o.Agent = d.Agent
	}
	if o.Provider == "" {
		o.Provider = d.Provider
	}
	if o.Model == "" {
		o.Model = d.Model
	}
	if o.Tool == "" {
		o.Tool = d.Tool
	}
	if o.Args == "" {
		o.Args = d.Args
	}
	if o.Calls == 0 {
		o.Calls = d.Calls
	}
	if o.Start.IsZero() {
		o.Start = d.Start
	}
	if o.Step == 0 {
		o.Step = d.Step
	}
	if o.InputTokens == 0 && o.OutputTokens == 0 {
		o.InputTokens, o.OutputTokens = d.InputTokens, d.OutputTokens
	}
}

// TraceID returns the trace id of the session generated with seed.
func TraceID(seed uint64) pcommon.TraceID {
	var id pcommon.TraceID
	binary.BigEndian.PutUint64(id[:8], 0x72756e616761696e) // "runagain"
	binary.BigEndian.PutUint64(id[8:], seed)
	return id
}

// SpanID returns the n-th span id of the session generated with seed (n from 1).
func SpanID(seed uint64, n int) pcommon.SpanID {
	var id pcommon.SpanID
	binary.BigEndian.PutUint32(id[:4], uint32(seed))
	binary.BigEndian.PutUint32(id[4:], uint32(n))
	return id
}

// Generate builds the session as one trace: an invoke_agent root span, and per call a chat
// span (usage recorded, finish reason tool_calls) followed by an execute_tool span with the
// same tool and arguments. Spans are in run order.
func Generate(o Options) ptrace.Traces {
	o.fill()
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", o.Service)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("runagain/runaway-generator")
	tid := TraceID(o.Seed)
	root := SpanID(o.Seed, 1)
	end := o.Start.Add(time.Duration(o.Calls)*o.Step + time.Second)

	sp := ss.Spans().AppendEmpty()
	sp.SetTraceID(tid)
	sp.SetSpanID(root)
	sp.SetName("invoke_agent " + o.Agent)
	sp.SetKind(ptrace.SpanKindInternal)
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(o.Start))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
	a := sp.Attributes()
	a.PutStr("gen_ai.operation.name", "invoke_agent")
	a.PutStr("gen_ai.agent.name", o.Agent)
	a.PutStr("gen_ai.conversation.id", o.Session)

	n := 2
	for i := 0; i < o.Calls; i++ {
		t0 := o.Start.Add(time.Duration(i)*o.Step + 10*time.Millisecond)
		llm := ss.Spans().AppendEmpty()
		llm.SetTraceID(tid)
		llm.SetSpanID(SpanID(o.Seed, n))
		n++
		llm.SetParentSpanID(root)
		llm.SetName("chat " + o.Model)
		llm.SetKind(ptrace.SpanKindClient)
		llm.SetStartTimestamp(pcommon.NewTimestampFromTime(t0))
		llm.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(o.Step / 2)))
		la := llm.Attributes()
		la.PutStr("gen_ai.operation.name", "chat")
		la.PutStr("gen_ai.provider.name", o.Provider)
		la.PutStr("gen_ai.request.model", o.Model)
		la.PutStr("gen_ai.response.model", o.Model)
		la.PutStr("gen_ai.conversation.id", o.Session)
		la.PutInt("gen_ai.usage.input_tokens", o.InputTokens+int64(i)*60)
		la.PutInt("gen_ai.usage.output_tokens", o.OutputTokens)
		la.PutEmptySlice("gen_ai.response.finish_reasons").AppendEmpty().SetStr("tool_calls")

		t1 := t0.Add(o.Step/2 + 5*time.Millisecond)
		tool := ss.Spans().AppendEmpty()
		tool.SetTraceID(tid)
		tool.SetSpanID(SpanID(o.Seed, n))
		n++
		tool.SetParentSpanID(root)
		tool.SetName("execute_tool " + o.Tool)
		tool.SetKind(ptrace.SpanKindInternal)
		tool.SetStartTimestamp(pcommon.NewTimestampFromTime(t1))
		tool.SetEndTimestamp(pcommon.NewTimestampFromTime(t1.Add(o.Step / 4)))
		ta := tool.Attributes()
		ta.PutStr("gen_ai.operation.name", "execute_tool")
		ta.PutStr("gen_ai.tool.name", o.Tool)
		ta.PutStr("gen_ai.tool.call.id", fmt.Sprintf("call_%d", i+1))
		ta.PutStr("gen_ai.tool.call.arguments", o.Args)
		ta.PutStr("gen_ai.conversation.id", o.Session)
		ta.PutStr("gen_ai.tool.call.result", `{"temperature":12,"conditions":"cloudy"}`)
	}
	return td
}
