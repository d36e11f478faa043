// SPDX-License-Identifier: Apache-2.0

package loadgen

import (
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/runagain/runagain/internal/genai"
)

func attrMap(kvs []attribute.KeyValue) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

// message is one element of gen_ai.input.messages / gen_ai.output.messages.
type message struct {
	Role  string `json:"role"`
	Parts []struct {
		Type      string          `json:"type"`
		Content   string          `json:"content"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Response  string          `json:"response"`
	} `json:"parts"`
	FinishReason string `json:"finish_reason"`
}

func decodeMessages(t *testing.T, s string) []message {
	t.Helper()
	var ms []message
	if err := json.Unmarshal([]byte(s), &ms); err != nil {
		t.Fatalf("messages are not valid JSON: %v\n%.300s", err, s)
	}
	return ms
}

func TestConfigValidate(t *testing.T) {
	def := DefaultConfig()
	if err := def.Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	cases := []struct {
		field string
		mut   func(*Config)
	}{
		{"turns", func(c *Config) { c.Turns = 0 }},
		{"tools_per_turn", func(c *Config) { c.ToolsPerTurn = -1 }},
		{"message_bytes", func(c *Config) { c.MessageBytes = 3 }},
		{"pii_rate", func(c *Config) { c.PIIRate = 1.5 }},
		{"secret_rate", func(c *Config) { c.SecretRate = -0.1 }},
		{"tool_error_rate", func(c *Config) { c.ToolErrorRate = 2 }},
		{"loop_rate", func(c *Config) { c.LoopRate = -1 }},
		{"loop_length", func(c *Config) { c.LoopLength = 1 }},
		{"length_rate", func(c *Config) { c.LengthRate = 7 }},
		{"concurrency", func(c *Config) { c.Concurrency = 0 }},
		{"protocol", func(c *Config) { c.Protocol = "udp" }},
		{"compression", func(c *Config) { c.Compression = "zstd" }},
		{"endpoint", func(c *Config) { c.Endpoint = "" }},
		{"batch_size", func(c *Config) { c.BatchSize = 0 }},
		{"at least one must bound", func(c *Config) { c.Sessions, c.MaxSpans, c.Duration = 0, 0, 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			c := DefaultConfig()
			tc.mut(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("want an error naming %q, got %v", tc.field, err)
			}
		})
	}
}

func genAll(cfg *Config, session int64) [][]SpanSpec {
	s := NewSession(cfg, session)
	var turns [][]SpanSpec
	now := time.Unix(1_800_000_000, 0)
	for !s.Done() {
		turns = append(turns, s.NextTurn(now))
	}
	return turns
}

func TestSessionDeterministic(t *testing.T) {
	cfg := DefaultConfig()
	a, b := genAll(&cfg, 7), genAll(&cfg, 7)
	other := genAll(&cfg, 8)
	for i := range a {
		for j := range a[i] {
			if a[i][j].Name != b[i][j].Name || len(a[i][j].Attrs) != len(b[i][j].Attrs) {
				t.Fatalf("turn %d span %d differs between two generations of one session", i, j)
			}
			for k := range a[i][j].Attrs {
				if a[i][j].Attrs[k] != b[i][j].Attrs[k] {
					t.Fatalf("turn %d span %d attribute %s differs", i, j, a[i][j].Attrs[k].Key)
				}
			}
		}
	}
	ida := attrMap(a[0][0].Attrs)[genai.AttrConversationID].AsString()
	ido := attrMap(other[0][0].Attrs)[genai.AttrConversationID].AsString()
	if ida == ido || !strings.HasPrefix(ida, "conv_") {
		t.Fatalf("conversation ids %q and %q: want distinct conv_ ids per session", ida, ido)
	}
}

func TestSessionShapeAndGrowingHistory(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LoopRate, cfg.ToolErrorRate, cfg.LengthRate = 0, 0, 0
	turns := genAll(&cfg, 1)
	if len(turns) != cfg.Turns {
		t.Fatalf("turns: got %d, want %d", len(turns), cfg.Turns)
	}
	prevIn := 0
	var prevInput []message
	for ti, spans := range turns {
		if len(spans) != cfg.SpansPerTurn() {
			t.Fatalf("turn %d: %d spans, want %d", ti, len(spans), cfg.SpansPerTurn())
		}
		if spans[0].Parent != -1 || attrMap(spans[0].Attrs)[genai.AttrOperationName].AsString() != "invoke_agent" {
			t.Fatalf("turn %d: span 0 is not an invoke_agent root", ti)
		}
		for si, sp := range spans[1:] {
			if sp.Parent != 0 || sp.Start.Before(spans[0].Start) || sp.End.After(spans[0].End) || !sp.End.After(sp.Start) {
				t.Fatalf("turn %d span %d: not nested in the root's time range", ti, si+1)
			}
			m := attrMap(sp.Attrs)
			if m[genai.AttrConversationID] != attrMap(spans[0].Attrs)[genai.AttrConversationID] {
				t.Fatalf("turn %d span %d: conversation id differs from the root's", ti, si+1)
			}
			op := m[genai.AttrOperationName].AsString()
			if (si%2 == 0) != (op == "chat") {
				t.Fatalf("turn %d span %d: operation %q out of order", ti, si+1, op)
			}
			if op != "chat" {
				continue
			}
			in := decodeMessages(t, m[genai.AttrInputMessages].AsString())
			out := decodeMessages(t, m[genai.AttrOutputMessages].AsString())
			if len(in) <= prevIn {
				t.Fatalf("turn %d span %d: input has %d messages, previous call had %d: history must grow", ti, si+1, len(in), prevIn)
			}
			// the previous input is a prefix of this one (resent history)
			for k := range prevInput {
				if in[k].Role != prevInput[k].Role || len(in[k].Parts) != len(prevInput[k].Parts) {
					t.Fatalf("turn %d span %d: message %d of the history changed", ti, si+1, k)
				}
			}
			prevIn, prevInput = len(in), in
			if len(out) != 1 || out[0].Role != "assistant" {
				t.Fatalf("turn %d span %d: output %+v, want one assistant message", ti, si+1, out)
			}
			fr := m[genai.AttrFinishReasons].AsStringSlice()
			last := si+1 == len(spans)-1
			want := "tool_calls"
			if last {
				want = "stop"
			}
			if len(fr) != 1 || fr[0] != want || out[0].FinishReason != want {
				t.Fatalf("turn %d span %d: finish reasons %v / %q, want %q", ti, si+1, fr, out[0].FinishReason, want)
			}
			if !last && (out[0].Parts[0].Type != "tool_call" || out[0].Parts[0].Name != attrMap(spans[si+2].Attrs)[genai.AttrToolName].AsString()) {
				t.Fatalf("turn %d span %d: tool call %+v does not name the next execute_tool span", ti, si+1, out[0].Parts[0])
			}
			if m[genai.AttrUsageInputTokens].AsInt64() <= 0 || m[genai.AttrUsageOutputTokens].AsInt64() <= 0 {
				t.Fatalf("turn %d span %d: token usage missing", ti, si+1)
			}
		}
	}

	// without resent history the second call of a turn sees only the tool call and its result
	cfg.ResendHistory = false
	turns = genAll(&cfg, 1)
	in := decodeMessages(t, attrMap(turns[2][3].Attrs)[genai.AttrInputMessages].AsString())
	if len(in) != 2 || in[0].Role != "assistant" || in[1].Role != "tool" {
		t.Fatalf("without history: second call input roles %v, want [assistant tool]", in)
	}
}

var (
	cardRE   = regexp.MustCompile(`\b4\d{3} \d{4} \d{4} \d{4}\b`)
	ibanRE   = regexp.MustCompile(`\bDE\d{20}\b`)
	emailRE  = regexp.MustCompile(`[a-z]+\.\d+@[a-z.]+`)
	phoneRE  = regexp.MustCompile(`\+1 202 \d{3} \d{4}`)
	openaiRE = regexp.MustCompile(`sk-proj-[A-Za-z0-9]{48}`)
	awsRE    = regexp.MustCompile(`AKIA[A-Z2-7]{16}`)
	ghRE     = regexp.MustCompile(`ghp_[A-Za-z0-9]{36}`)
)

func TestPlantedPIIAndSecretsAreValid(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PIIRate, cfg.SecretRate, cfg.SystemPromptBytes, cfg.ResendHistory = 1, 1, 0, false
	s := NewSession(&cfg, 3)
	found := map[string]int{}
	texts := 0
	for !s.Done() {
		for _, sp := range s.NextTurn(time.Now()) {
			m := attrMap(sp.Attrs)
			var ss []string
			switch m[genai.AttrOperationName].AsString() {
			case "chat":
				ss = append(ss, m[genai.AttrOutputMessages].AsString())
				if strings.Contains(m[genai.AttrInputMessages].AsString(), `"role":"user"`) {
					ss = append(ss, m[genai.AttrInputMessages].AsString())
				}
			case "execute_tool":
				ss = append(ss, m[genai.AttrToolCallResult].AsString())
			}
			for _, v := range ss {
				for _, c := range cardRE.FindAllString(v, -1) {
					if !LuhnValid(c) {
						t.Fatalf("planted card %q fails Luhn", c)
					}
					found["credit_card"]++
				}
				for _, c := range ibanRE.FindAllString(v, -1) {
					if !IBANValid(c) {
						t.Fatalf("planted IBAN %q fails mod-97", c)
					}
					found["iban"]++
				}
				found["email"] += len(emailRE.FindAllString(v, -1))
				found["phone"] += len(phoneRE.FindAllString(v, -1))
				found["openai_api_key"] += len(openaiRE.FindAllString(v, -1))
				found["aws_access_key_id"] += len(awsRE.FindAllString(v, -1))
				found["github_token"] += len(ghRE.FindAllString(v, -1))
				texts++
			}
		}
	}
	st := s.Stats()
	var nPII, nSec int64
	for _, k := range PIIKinds {
		nPII += st.Planted[k]
	}
	for _, k := range SecretKinds {
		nSec += st.Planted[k]
	}
	// every text (user, tool query, tool result, answer) got one of each; tool-call arguments
	// are texts too, so there are at least as many plants as texts inspected here minus inputs
	if nPII == 0 || nPII != nSec {
		t.Fatalf("with rates 1: planted %d PII and %d secrets, want equal and > 0 (%v)", nPII, nSec, st.Planted)
	}
	for _, k := range append(append([]string{}, PIIKinds...), SecretKinds...) {
		if found[k] == 0 {
			t.Errorf("no %s found in the generated text (planted %d)", k, st.Planted[k])
		}
	}
	if !LuhnValid("4111 1111 1111 1111") || LuhnValid("4111 1111 1111 1112") {
		t.Fatal("LuhnValid is wrong on known numbers")
	}
	if !IBANValid("DE89370400440532013000") || IBANValid("DE89370400440532013001") {
		t.Fatal("IBANValid is wrong on known numbers")
	}

	cfg.PIIRate, cfg.SecretRate = 0, 0
	s = NewSession(&cfg, 3)
	spans, texts0 := 0, 0
	for !s.Done() {
		for _, sp := range s.NextTurn(time.Now()) {
			spans++
			for _, kv := range sp.Attrs {
				v := kv.Value.String()
				if k := string(kv.Key); k == genai.AttrInputMessages || k == genai.AttrOutputMessages || k == genai.AttrToolCallResult {
					if len(v) > 0 {
						texts0++
					}
				}
				for _, re := range []*regexp.Regexp{cardRE, ibanRE, emailRE, phoneRE, openaiRE, awsRE, ghRE} {
					if re.MatchString(v) {
						t.Fatalf("rates 0: %s holds a planted value %q", kv.Key, re.FindString(v))
					}
				}
			}
		}
	}
	// The absence above means something only if the session generated text to look in.
	if spans == 0 || texts0 == 0 {
		t.Fatalf("rates 0: generated %d spans and %d message/tool texts: nothing to check", spans, texts0)
	}
	for k, n := range s.Stats().Planted {
		if n != 0 {
			t.Errorf("rates 0: %d %s planted", n, k)
		}
	}
}

func TestRunawayLoopLengthStopAndToolErrors(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LoopRate, cfg.LoopLength, cfg.LengthRate, cfg.ToolErrorRate = 1, 6, 1, 1
	turns := genAll(&cfg, 5)
	loops := 0
	for _, spans := range turns {
		var tools []map[string]attribute.Value
		for _, sp := range spans {
			m := attrMap(sp.Attrs)
			switch m[genai.AttrOperationName].AsString() {
			case "execute_tool":
				tools = append(tools, m)
				if sp.Status != codes.Error || m[attrErrorType].AsString() == "" || sp.ExceptionType == "" {
					t.Fatalf("tool error rate 1: tool span without error status, error.type and exception")
				}
			case "chat":
				fr := m[genai.AttrFinishReasons].AsStringSlice()
				if fr[0] == "length" && m[genai.AttrUsageOutputTokens].AsInt64() != m[attrRequestMaxTok].AsInt64() {
					t.Fatal("finish_reason length: output tokens must equal max_tokens")
				}
			}
		}
		last := attrMap(spans[len(spans)-1].Attrs)[genai.AttrFinishReasons].AsStringSlice()
		if last[0] != "length" {
			t.Fatalf("length rate 1: final finish reason %v", last)
		}
		if len(tools) == cfg.LoopLength {
			loops++
			for _, m := range tools[1:] {
				if m[genai.AttrToolName] != tools[0][genai.AttrToolName] || m[genai.AttrToolCallArguments] != tools[0][genai.AttrToolCallArguments] {
					t.Fatal("runaway turn: tool calls differ in name or arguments")
				}
			}
		} else if len(tools) != cfg.ToolsPerTurn {
			t.Fatalf("turn with %d tool calls, want %d or the loop's %d", len(tools), cfg.ToolsPerTurn, cfg.LoopLength)
		}
	}
	if loops != 1 {
		t.Fatalf("loop rate 1: %d runaway turns in the session, want exactly 1", loops)
	}
}

func TestSummarize(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(101-i)*time.Millisecond)
	}
	l := summarize(ds)
	if l.Count != 100 || l.P50 != 50 || l.P90 != 90 || l.P99 != 99 || l.Max != 100 {
		t.Fatalf("summarize 1..100 ms: %+v", l)
	}
	if (summarize(nil) != Latency{}) {
		t.Fatal("summarize(nil) must be zero")
	}
}

// traceSink is an OTLP trace receiver (gRPC and HTTP) that counts what it gets and can reject.
type traceSink struct {
	ptraceotlp.UnimplementedGRPCServer
	spans    atomic.Int64
	mu       sync.Mutex
	sessions map[string]bool
	// reject, when > 0, rejects that many spans of each request in a partial success.
	reject int64
	// fail makes every request fail with InvalidArgument (not retryable).
	fail bool
	// keep stores a copy of every request's traces in kept.
	keep bool
	kept []ptrace.Traces
}

func (s *traceSink) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	if s.fail {
		return ptraceotlp.NewExportResponse(), status.Error(grpccodes.InvalidArgument, "bad request for the test")
	}
	td := req.Traces()
	n := int64(td.SpanCount())
	s.mu.Lock()
	if s.keep {
		c := ptrace.NewTraces()
		td.CopyTo(c)
		s.kept = append(s.kept, c)
	}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				if v, ok := spans.At(k).Attributes().Get(genai.AttrConversationID); ok {
					s.sessions[v.Str()] = true
				}
			}
		}
	}
	s.mu.Unlock()
	resp := ptraceotlp.NewExportResponse()
	if s.reject > 0 {
		r := min(s.reject, n)
		resp.PartialSuccess().SetRejectedSpans(r)
		resp.PartialSuccess().SetErrorMessage("test rejects some spans")
		n -= r
	}
	s.spans.Add(n)
	return resp, nil
}

func startGRPCSink(t *testing.T, s *traceSink) string {
	t.Helper()
	s.sessions = map[string]bool{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(64 << 20))
	ptraceotlp.RegisterGRPCServer(srv, s)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func startHTTPSink(t *testing.T, s *traceSink) string {
	t.Helper()
	s.sessions = map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "unexpected "+r.URL.Path+" "+r.Header.Get("Content-Type"), http.StatusBadRequest)
			return
		}
		var rd io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			rd = zr
		}
		body, err := io.ReadAll(rd)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp, _ := s.Export(r.Context(), req)
		b, _ := resp.MarshalProto()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func smallConfig(endpoint, protocol string) Config {
	cfg := DefaultConfig()
	cfg.Endpoint, cfg.Protocol = endpoint, protocol
	cfg.Sessions, cfg.Turns, cfg.ToolsPerTurn, cfg.MessageBytes, cfg.SystemPromptBytes = 12, 3, 2, 128, 64
	cfg.Concurrency, cfg.BatchSize = 3, 16
	cfg.LoopRate = 0
	cfg.Duration = time.Minute
	cfg.ExportTimeout = 5 * time.Second
	return cfg
}

func TestRunDeliversEverySpan(t *testing.T) {
	for _, proto := range []string{ProtocolGRPC, ProtocolHTTP} {
		t.Run(proto, func(t *testing.T) {
			sink := &traceSink{}
			var ep string
			if proto == ProtocolGRPC {
				ep = startGRPCSink(t, sink)
			} else {
				ep = startHTTPSink(t, sink)
			}
			cfg := smallConfig(ep, proto)
			rep, err := Run(context.Background(), cfg, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := cfg.Sessions * int64(cfg.Turns) * int64(cfg.SpansPerTurn())
			if rep.Generated.Spans != want || rep.SpansSent != want || sink.spans.Load() != want {
				t.Fatalf("generated %d, sent %d, received %d; want %d each", rep.Generated.Spans, rep.SpansSent, sink.spans.Load(), want)
			}
			if rep.SpansFailed != 0 || rep.ExportErrors != 0 || rep.StoppedBy != StoppedBySessions {
				t.Fatalf("failed %d, errors %d (%v), stopped by %s", rep.SpansFailed, rep.ExportErrors, rep.Errors, rep.StoppedBy)
			}
			if int64(len(sink.sessions)) != cfg.Sessions || rep.Sessions != cfg.Sessions {
				t.Fatalf("sessions: received %d, reported %d, want %d", len(sink.sessions), rep.Sessions, cfg.Sessions)
			}
			if rep.Bytes < rep.Generated.AttrBytes || rep.UncompressedBytes != rep.Bytes {
				t.Fatalf("bytes %d (uncompressed %d) must cover the %d attribute bytes generated", rep.Bytes, rep.UncompressedBytes, rep.Generated.AttrBytes)
			}
			if rep.Latency.Count != int(rep.Exports) || rep.Latency.P50 <= 0 || rep.Latency.P99 < rep.Latency.P50 || rep.Latency.Max < rep.Latency.P99 {
				t.Fatalf("latency %+v over %d exports", rep.Latency, rep.Exports)
			}
		})
	}
}

func TestRunBounds(t *testing.T) {
	sink := &traceSink{}
	ep := startGRPCSink(t, sink)

	cfg := smallConfig(ep, ProtocolGRPC)
	cfg.MaxSpans = 50 // 8 spans per turn: 6 turns fit
	rep, err := Run(context.Background(), cfg, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.StoppedBy != StoppedByMaxSpans || rep.SpansSent > cfg.MaxSpans || rep.SpansSent < cfg.MaxSpans-int64(cfg.SpansPerTurn())*int64(cfg.Concurrency) {
		t.Fatalf("max spans 50: sent %d, stopped by %s", rep.SpansSent, rep.StoppedBy)
	}

	cfg = smallConfig(ep, ProtocolGRPC)
	cfg.Sessions, cfg.Duration, cfg.Rate = 0, 300*time.Millisecond, 400
	t0 := time.Now()
	rep, err = Run(context.Background(), cfg, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.StoppedBy != StoppedByDuration || rep.SpansSent == 0 || rep.SpansSent != rep.Generated.Spans {
		t.Fatalf("duration bound: stopped by %s, sent %d of %d", rep.StoppedBy, rep.SpansSent, rep.Generated.Spans)
	}
	// the rate limiter allows at most rate*duration plus one burst
	if limit := int64(400*time.Since(t0).Seconds()) + int64(max(cfg.maxSpansPerTrace(), 40)); rep.SpansSent > limit {
		t.Fatalf("rate 400/s for %v: %d spans sent, more than %d", time.Since(t0), rep.SpansSent, limit)
	}
}

func TestRunHTTPGzipCountsCompressedBytes(t *testing.T) {
	sink := &traceSink{}
	cfg := smallConfig(startHTTPSink(t, sink), ProtocolHTTP)
	cfg.Compression = "gzip"
	rep, err := Run(context.Background(), cfg, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.SpansSent != rep.Generated.Spans || sink.spans.Load() != rep.SpansSent {
		t.Fatalf("sent %d, received %d, generated %d", rep.SpansSent, sink.spans.Load(), rep.Generated.Spans)
	}
	// generated prose compresses well: the gzip bodies are smaller than the attribute text
	if rep.Bytes <= 0 || rep.Bytes >= rep.Generated.AttrBytes || rep.UncompressedBytes != 0 {
		t.Fatalf("gzip: bytes %d (uncompressed %d) for %d attribute bytes", rep.Bytes, rep.UncompressedBytes, rep.Generated.AttrBytes)
	}
}

func TestRunCountsRejectedSpans(t *testing.T) {
	sink := &traceSink{reject: 2}
	cfg := smallConfig(startGRPCSink(t, sink), ProtocolGRPC)
	rep, err := Run(context.Background(), cfg, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.SpansFailed != 2*rep.Exports || rep.SpansSent != sink.spans.Load() || rep.SpansSent+rep.SpansFailed != rep.Generated.Spans {
		t.Fatalf("partial success rejecting 2 per request: sent %d (sink %d), failed %d, exports %d, generated %d",
			rep.SpansSent, sink.spans.Load(), rep.SpansFailed, rep.Exports, rep.Generated.Spans)
	}

	bad := &traceSink{fail: true}
	cfg = smallConfig(startGRPCSink(t, bad), ProtocolGRPC)
	cfg.Sessions = 2
	rep, err = Run(context.Background(), cfg, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.SpansSent != 0 || rep.SpansFailed != rep.Generated.Spans || rep.ExportErrors == 0 || len(rep.Errors) == 0 || !strings.Contains(rep.Errors[0], "InvalidArgument") {
		t.Fatalf("failing receiver: sent %d, failed %d of %d, errors %v", rep.SpansSent, rep.SpansFailed, rep.Generated.Spans, rep.Errors)
	}
}

// TestEmitKeepsSpecs checks that the SDK spans carry the generated durations, parents, status,
// exception events and attributes.
func TestEmitKeepsSpecs(t *testing.T) {
	sink := &traceSink{keep: true}
	cfg := smallConfig(startGRPCSink(t, sink), ProtocolGRPC)
	cfg.Sessions, cfg.Turns, cfg.ToolErrorRate = 1, 1, 1
	rep, err := Run(context.Background(), cfg, nil, 0)
	if err != nil || rep.SpansSent != int64(cfg.SpansPerTurn()) {
		t.Fatalf("sent %d, err %v", rep.SpansSent, err)
	}
	want := NewSession(&cfg, 0).NextTurn(time.Now())
	byName := map[string][]ptrace.Span{}
	var rootID pcommonSpanID
	var traceIDs = map[string]bool{}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for _, td := range sink.kept {
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			if v, _ := rss.At(i).Resource().Attributes().Get("service.name"); v.Str() != cfg.ServiceName {
				t.Fatalf("resource service.name %q", v.Str())
			}
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				for k := 0; k < sss.At(j).Spans().Len(); k++ {
					sp := sss.At(j).Spans().At(k)
					byName[sp.Name()] = append(byName[sp.Name()], sp)
					traceIDs[sp.TraceID().String()] = true
					if sp.ParentSpanID().IsEmpty() {
						rootID = pcommonSpanID(sp.SpanID())
					}
				}
			}
		}
	}
	if len(traceIDs) != 1 {
		t.Fatalf("one turn must be one trace, got %d trace ids", len(traceIDs))
	}
	for _, l := range byName { // the SDK exports spans in the order they end
		slices.SortFunc(l, func(a, b ptrace.Span) int { return cmp.Compare(a.StartTimestamp(), b.StartTimestamp()) })
	}
	seen := map[string]int{}
	for _, w := range want {
		got := byName[w.Name]
		if seen[w.Name] >= len(got) {
			t.Fatalf("span %q missing", w.Name)
		}
		sp := got[seen[w.Name]]
		seen[w.Name]++
		if w.Parent >= 0 && pcommonSpanID(sp.ParentSpanID()) != rootID {
			t.Fatalf("span %q: parent is not the root", w.Name)
		}
		if d := sp.EndTimestamp().AsTime().Sub(sp.StartTimestamp().AsTime()); d != w.End.Sub(w.Start) {
			t.Fatalf("span %q: duration %v, generated %v", w.Name, d, w.End.Sub(w.Start))
		}
		if sp.Attributes().Len() != len(w.Attrs) {
			t.Fatalf("span %q: %d attributes, generated %d", w.Name, sp.Attributes().Len(), len(w.Attrs))
		}
		if w.Status == codes.Error {
			if sp.Status().Code() != ptrace.StatusCodeError || sp.Events().Len() != 1 || sp.Events().At(0).Name() != "exception" {
				t.Fatalf("span %q: status %v with %d events, want error and an exception event", w.Name, sp.Status().Code(), sp.Events().Len())
			}
		}
	}
}

type pcommonSpanID [8]byte
