// SPDX-License-Identifier: Apache-2.0

package loadgen

import (
	"encoding/hex"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/runagain/runagain/internal/genai"
)

// Attribute keys the generator writes besides those of internal/genai (OTel GenAI and general
// semantic conventions).
const (
	attrResponseID    = "gen_ai.response.id"
	attrRequestMaxTok = "gen_ai.request.max_tokens"
	attrRequestTemp   = "gen_ai.request.temperature"
	attrAgentID       = "gen_ai.agent.id"
	attrToolCallID    = "gen_ai.tool.call.id"
	attrToolType      = "gen_ai.tool.type"
	attrServerAddress = "server.address"
	attrServerPort    = "server.port"
	attrErrorType     = "error.type"
	// FaultsAttr is set on the root span of a trace with planted faults: its Stats.FaultRuns key,
	// the ground truth that tests compare failure patterns with (runagain ignores it).
	FaultsAttr = "loadgen.faults"
)

// SpanSpec is one span of a generated trace, independent of any SDK.
type SpanSpec struct {
	Name   string
	Kind   trace.SpanKind
	Parent int // index of the parent in the trace; -1 for the root
	Start  time.Time
	End    time.Time
	Attrs  []attribute.KeyValue
	Status codes.Code
	// StatusMessage is the status description (errors only).
	StatusMessage string
	// Exception, when non-empty, is recorded as an "exception" event (exception.type/message).
	ExceptionType, ExceptionMessage string
}

// Stats counts what a generator produced.
type Stats struct {
	Traces      int64            `json:"traces"`
	Spans       int64            `json:"spans"`
	ToolErrors  int64            `json:"tool_errors"`
	LengthStops int64            `json:"length_stops"`
	LoopTurns   int64            `json:"loop_turns"`
	Planted     map[string]int64 `json:"planted"` // PII and secret values planted, by kind
	// FaultRuns counts the traces by the faults planted in them (FaultsAttr): "length",
	// "loop", "tool_error:<tool>", several joined by "+" in sorted order. A trace without a fault
	// is not counted.
	FaultRuns map[string]int64 `json:"fault_runs"`
	// AttrBytes is the total size of string attribute values (message JSON and the like).
	AttrBytes int64 `json:"attr_bytes"`
}

func (s *Stats) add(o *Stats) {
	s.Traces += o.Traces
	s.Spans += o.Spans
	s.ToolErrors += o.ToolErrors
	s.LengthStops += o.LengthStops
	s.LoopTurns += o.LoopTurns
	s.AttrBytes += o.AttrBytes
	if s.FaultRuns == nil {
		s.FaultRuns = map[string]int64{}
	}
	for k, v := range o.FaultRuns {
		s.FaultRuns[k] += v
	}
	if s.Planted == nil {
		s.Planted = map[string]int64{}
	}
	for k, v := range o.Planted {
		s.Planted[k] += v
	}
}

var tools = []string{"search_web", "read_file", "run_sql", "get_weather", "http_get", "send_email"}

// Session generates the turns of one conversation. It is not safe for concurrent use.
type Session struct {
	cfg     *Config
	rng     *rand.Rand
	txt     text
	id      string // gen_ai.conversation.id
	agent   string
	turn    int
	loopAt  int // the runaway turn, -1 for none
	calls   int // tool call counter (ids)
	history [][]byte
	system  []byte // gen_ai.system_instructions JSON
	stats   Stats
	buf     []byte
}

// NewSession returns the generator of session index of a run with cfg. The same (cfg.Seed,
// index) always yields the same content.
func NewSession(cfg *Config, index int64) *Session {
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(index)*0x9e3779b97f4a7c15+1))
	s := &Session{cfg: cfg, rng: rng, loopAt: -1}
	s.txt = text{rng: rng, piiRate: cfg.PIIRate, secretRate: cfg.SecretRate, planted: map[string]int{}}
	var idb [16]byte
	for i := range idb {
		idb[i] = byte(rng.Uint32())
	}
	s.id = "conv_" + hex.EncodeToString(idb[:])
	s.agent = "support-agent-" + strconv.Itoa(int(index%7))
	if cfg.LoopRate > 0 && rng.Float64() < cfg.LoopRate {
		s.loopAt = rng.IntN(cfg.Turns)
	}
	if cfg.SystemPromptBytes > 0 {
		b := []byte(`[{"type":"text","content":`)
		b = appendJSONString(b, s.txt.prose(nil, cfg.SystemPromptBytes))
		s.system = append(b, "}]"...)
	}
	return s
}

// ID is the session's gen_ai.conversation.id.
func (s *Session) ID() string { return s.id }

// Done reports whether all turns were generated.
func (s *Session) Done() bool { return s.turn >= s.cfg.Turns }

// Stats returns what the session generated so far.
func (s *Session) Stats() Stats {
	st := s.stats
	st.FaultRuns = map[string]int64{}
	for k, v := range s.stats.FaultRuns {
		st.FaultRuns[k] = v
	}
	st.Planted = map[string]int64{}
	for k, v := range s.txt.planted {
		st.Planted[k] = int64(v)
	}
	return st
}

// NextTurn returns the spans of the next turn (one trace), parents before children, with the
// trace ending at now; nil when the session is done.
func (s *Session) NextTurn(now time.Time) []SpanSpec {
	if s.Done() {
		return nil
	}
	cfg := s.cfg
	loop := s.turn == s.loopAt
	nTools := cfg.ToolsPerTurn
	if loop {
		nTools = cfg.LoopLength
		s.stats.LoopTurns++
	}
	s.turn++

	spans := make([]SpanSpec, 0, 2+2*nTools)
	// durations are simulated; timestamps are laid out from a start such that the trace ends now
	durs := make([]time.Duration, 0, 2*nTools+1)
	var total time.Duration
	for i := 0; i < 2*nTools+1; i++ {
		var d time.Duration
		if i%2 == 0 { // chat call: 0.4 to 3 s
			d = 400*time.Millisecond + time.Duration(s.rng.IntN(2600))*time.Millisecond
		} else { // tool: 20 to 800 ms
			d = 20*time.Millisecond + time.Duration(s.rng.IntN(780))*time.Millisecond
		}
		durs = append(durs, d)
		total += d + time.Millisecond
	}
	t0 := now.Add(-total - 2*time.Millisecond)
	root := SpanSpec{
		Name: "invoke_agent " + s.agent, Kind: trace.SpanKindInternal, Parent: -1, Start: t0, End: now,
		Attrs: []attribute.KeyValue{
			attribute.String(genai.AttrOperationName, "invoke_agent"),
			attribute.String(genai.AttrProviderName, cfg.Provider),
			attribute.String(genai.AttrAgentName, s.agent),
			attribute.String(attrAgentID, "asst_"+s.agent),
			attribute.String(genai.AttrConversationID, s.id),
			attribute.String(genai.AttrRequestModel, cfg.Model),
		},
	}
	spans = append(spans, root)

	// the user message opens the turn
	s.buf = append(s.buf[:0], `{"role":"user","parts":[{"type":"text","content":`...)
	s.buf = appendJSONString(s.buf, s.txt.prose(nil, cfg.MessageBytes))
	s.buf = append(s.buf, "}]}"...)
	newMsgs := [][]byte{append([]byte(nil), s.buf...)}

	faults := map[string]bool{}
	if loop {
		faults["loop"] = true
	}
	tool := tools[s.rng.IntN(len(tools))]
	var loopArgs []byte
	t := t0.Add(time.Millisecond)
	for k := 0; k <= nTools; k++ {
		final := k == nTools
		d := durs[2*k]
		// input messages: the history so far (or only the new messages) plus the new ones
		in := newMsgs
		if cfg.ResendHistory {
			s.history = append(s.history, newMsgs...)
			in = s.history
		}
		input := joinJSONArray(in)
		var output []byte
		var finish string
		var toolCallID string
		var args []byte
		if !final {
			if !loop {
				tool = tools[s.rng.IntN(len(tools))]
			}
			s.calls++
			toolCallID = "call_" + strconv.Itoa(s.calls)
			if loop && loopArgs != nil {
				args = loopArgs
			} else {
				args = []byte(`{"query":`)
				args = appendJSONString(args, s.txt.prose(nil, min(cfg.MessageBytes/4, 160)+16))
				args = append(args, '}')
				if loop {
					loopArgs = args
				}
			}
			finish = "tool_calls"
			output = append(output, `{"role":"assistant","parts":[{"type":"tool_call","id":"`...)
			output = append(output, toolCallID...)
			output = append(output, `","name":"`...)
			output = append(output, tool...)
			output = append(output, `","arguments":`...)
			output = append(output, args...)
			output = append(output, `}],"finish_reason":"tool_calls"}`...)
		} else {
			finish = "stop"
			if cfg.LengthRate > 0 && s.rng.Float64() < cfg.LengthRate {
				finish = "length"
				s.stats.LengthStops++
				faults["length"] = true
			}
			output = append(output, `{"role":"assistant","parts":[{"type":"text","content":`...)
			output = appendJSONString(output, s.txt.prose(nil, cfg.MessageBytes))
			output = append(output, `}],"finish_reason":"`...)
			output = append(output, finish...)
			output = append(output, `"}`...)
		}
		inTok := int64(len(input)/4 + len(s.system)/4)
		outTok := int64(len(output) / 4)
		maxTok := int64(4096)
		if finish == "length" {
			outTok = maxTok
		}
		outputArr := make([]byte, 0, len(output)+2)
		outputArr = append(append(append(outputArr, '['), output...), ']')
		attrs := []attribute.KeyValue{
			attribute.String(genai.AttrOperationName, "chat"),
			attribute.String(genai.AttrProviderName, cfg.Provider),
			attribute.String(genai.AttrRequestModel, cfg.Model),
			attribute.String(genai.AttrResponseModel, cfg.Model+"-2024-08-06"),
			attribute.String(attrResponseID, "chatcmpl-"+strconv.FormatUint(s.rng.Uint64(), 36)),
			attribute.String(genai.AttrConversationID, s.id),
			attribute.Int64(attrRequestMaxTok, maxTok),
			attribute.Float64(attrRequestTemp, 0.2),
			attribute.StringSlice(genai.AttrFinishReasons, []string{finish}),
			attribute.Int64(genai.AttrUsageInputTokens, inTok),
			attribute.Int64(genai.AttrUsageOutputTokens, outTok),
			attribute.String(attrServerAddress, "api.openai.com"),
			attribute.Int(attrServerPort, 443),
			attribute.String(genai.AttrInputMessages, string(input)),
			attribute.String(genai.AttrOutputMessages, string(outputArr)),
		}
		s.stats.AttrBytes += int64(len(input) + len(outputArr))
		if s.system != nil {
			attrs = append(attrs, attribute.String(genai.AttrSystemInstructions, string(s.system)))
			s.stats.AttrBytes += int64(len(s.system))
		}
		spans = append(spans, SpanSpec{
			Name: "chat " + cfg.Model, Kind: trace.SpanKindClient, Parent: 0,
			Start: t, End: t.Add(d), Attrs: attrs,
		})
		t = t.Add(d + time.Millisecond/2)
		newMsgs = [][]byte{output}
		if final {
			if cfg.ResendHistory {
				s.history = append(s.history, output)
			}
			break
		}

		// the tool call
		td := durs[2*k+1]
		tspan := SpanSpec{
			Name: "execute_tool " + tool, Kind: trace.SpanKindInternal, Parent: 0,
			Start: t, End: t.Add(td),
		}
		var result []byte
		if cfg.ToolErrorRate > 0 && s.rng.Float64() < cfg.ToolErrorRate {
			s.stats.ToolErrors++
			faults["tool_error:"+tool] = true
			msg := tool + ": upstream returned HTTP 503 after 3 retries"
			tspan.Status, tspan.StatusMessage = codes.Error, msg
			tspan.ExceptionType, tspan.ExceptionMessage = "ToolError", msg
			result = appendJSONString(nil, []byte("error: "+msg))
		} else if loop && k > 0 {
			result = appendJSONString(nil, []byte("no new results"))
		} else {
			result = appendJSONString(nil, s.txt.prose(nil, cfg.MessageBytes))
		}
		tspan.Attrs = []attribute.KeyValue{
			attribute.String(genai.AttrOperationName, "execute_tool"),
			attribute.String(genai.AttrToolName, tool),
			attribute.String(attrToolCallID, toolCallID),
			attribute.String(attrToolType, "function"),
			attribute.String(genai.AttrConversationID, s.id),
			attribute.String(genai.AttrToolCallArguments, string(args)),
			attribute.String(genai.AttrToolCallResult, string(result)),
		}
		if tspan.Status == codes.Error {
			tspan.Attrs = append(tspan.Attrs, attribute.String(attrErrorType, "ToolError"))
		}
		s.stats.AttrBytes += int64(len(args) + len(result))
		spans = append(spans, tspan)
		t = t.Add(td + time.Millisecond/2)

		// the tool result becomes a message of the next call's input
		msg := make([]byte, 0, len(result)+96)
		msg = append(msg, `{"role":"tool","parts":[{"type":"tool_call_response","id":"`...)
		msg = append(msg, toolCallID...)
		msg = append(msg, `","response":`...)
		msg = append(msg, result...)
		msg = append(msg, "}]}"...)
		newMsgs = append(newMsgs, msg)
	}
	if len(faults) > 0 {
		keys := make([]string, 0, len(faults))
		for k := range faults {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		key := strings.Join(keys, "+")
		spans[0].Attrs = append(spans[0].Attrs, attribute.String(FaultsAttr, key))
		if s.stats.FaultRuns == nil {
			s.stats.FaultRuns = map[string]int64{}
		}
		s.stats.FaultRuns[key]++
	}
	s.stats.Traces++
	s.stats.Spans += int64(len(spans))
	return spans
}

// joinJSONArray returns "[m0,m1,...]".
func joinJSONArray(msgs [][]byte) []byte {
	n := 2
	for _, m := range msgs {
		n += len(m) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, m := range msgs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m...)
	}
	return append(out, ']')
}
