// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/corpus"
	fx "github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/importer"
	"github.com/runagain/runagain/internal/payloadref"
	"github.com/runagain/runagain/internal/payloadref/packfile"
	"github.com/runagain/runagain/internal/proxy"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

const helperEnv = "RUNAGAIN_TEST_OPENAI_HELPER"

// TestHelperOpenAIClient is not a test: it is the agent the record/replay tests run as a child
// process (the test binary re-executed). It uses the official openai-go client configured only
// from the environment (OPENAI_BASE_URL, OPENAI_API_KEY), makes one chat completion and one
// streamed chat completion, and prints the raw JSON of every response and chunk, one per line.
func TestHelperOpenAIClient(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("helper process for the record/replay tests")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := openai.NewClient()
	prompt := os.Getenv("RUNAGAIN_TEST_PROMPT")
	params := openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}
	out := os.Stdout
	c, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			fmt.Fprintln(out, "ERROR", err, apiErr.Message)
		} else {
			fmt.Fprintln(out, "ERROR", err)
		}
		os.Exit(2)
	}
	fmt.Fprintln(out, c.RawJSON())
	if os.Getenv("RUNAGAIN_TEST_STREAM") == "0" {
		os.Exit(0)
	}
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	n := 0
	for stream.Next() {
		fmt.Fprintln(out, stream.Current().RawJSON())
		n++
	}
	if err := stream.Err(); err != nil {
		fmt.Fprintln(out, "ERROR", err)
		os.Exit(2)
	}
	fmt.Fprintln(out, "chunks", n)
	os.Exit(0)
}

// upstream serves corpus responses for /v1/chat/completions (JSON, or SSE written event by
// event when the request asks to stream) and counts the requests it receives.
type upstream struct {
	srv      *httptest.Server
	requests atomic.Int64
	auth     atomic.Value
	plain    *fx.Exchange
	stream   *fx.Exchange
}

func corpusExchange(t *testing.T, rel string) *fx.Exchange {
	t.Helper()
	res, err := importer.ParseFile(filepath.Join(corpus.Dir(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	var out *fx.Exchange
	rss := res.Traces.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		for j := 0; j < rss.At(i).ScopeSpans().Len(); j++ {
			spans := rss.At(i).ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				if fx.IsFixture(spans.At(k)) && out == nil {
					out, err = fx.FromSpan(spans.At(k))
					if err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	if out == nil || out.Status != 200 {
		t.Fatalf("%s: no 200 exchange", rel)
	}
	return out
}

func newUpstream(t *testing.T) *upstream {
	const dir = "otel-python-contrib/instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/cassettes/"
	u := &upstream{plain: corpusExchange(t, dir+"test_chat_completion_with_content.yaml"), stream: corpusExchange(t, dir+"test_chat_completion_streaming.yaml")}
	if len(u.stream.Chunks) < 3 {
		t.Fatalf("streaming cassette has %d SSE chunks", len(u.stream.Chunks))
	}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.requests.Add(1)
		u.auth.Store(r.Header.Get("Authorization"))
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.Unmarshal(body, &req)
		ex := u.plain
		if req.Stream {
			ex = u.stream
		}
		for k, vs := range ex.ReplayHeader() {
			w.Header()[k] = vs
		}
		w.WriteHeader(ex.Status)
		if !req.Stream {
			_, _ = w.Write(ex.ResponseBody)
			return
		}
		for _, c := range ex.Chunks {
			_, _ = w.Write(ex.ResponseBody[c.Offset : c.Offset+c.Size])
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// cli runs a fresh runagain command tree (proxy, replay) in process.
func cli(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	saved := dataDirFlag
	t.Cleanup(func() { dataDirFlag = saved })
	root := &cobra.Command{Use: "runagain", SilenceUsage: true, SilenceErrors: true}
	root.PersistentFlags().StringVar(&dataDirFlag, "data-dir", "./data", "")
	root.AddCommand(newProxyCmd(), newReplayCmd(), newRerunCmd(), newTestCmd())
	var o, e bytes.Buffer
	root.SetOut(&o)
	root.SetErr(&e)
	root.SetArgs(args)
	err = root.Execute()
	return o.String(), e.String(), err
}

func helperArgs() []string {
	return []string{os.Args[0], "-test.run=^TestHelperOpenAIClient$", "-test.count=1"}
}

// waitRun polls the hot tier until the run has at least n spans (30 s at most).
func waitRun(t *testing.T, dataDir, traceID string, spans, logs int) *store.Run {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		db, err := sqlitestore.Open(filepath.Join(dataDir, "hot.db"), sqlitestore.Options{ReadOnly: true})
		if err == nil {
			run, err := db.Run(context.Background(), traceID)
			db.Close()
			if err == nil && run.Traces.SpanCount() >= spans && run.Logs.LogRecordCount() >= logs {
				return run
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s did not reach %d spans and %d log records in the store in 30s", traceID, spans, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var reTrace = func(s string) string {
	i := strings.LastIndex(s, "run trace ")
	if i < 0 || len(s) < i+10+32 {
		return ""
	}
	return s[i+10 : i+10+32]
}

// TestRecordReplayOpenAI: the official openai-go client, pointed at `runagain proxy --record`
// by OPENAI_BASE_URL only, talks to a local upstream serving corpus responses; the run lands in
// the real collector's SQLite store as one trace; `runagain replay` of the same client code gets
// identical responses with zero upstream requests; the API key sent in Authorization is never
// stored and replay still matches; changing the prompt stops the replay at that request with
// a message naming body.messages[0].content, a non-nil error (exit code 1), and a divergence
// log record pointing at the recorded span.
func TestRecordReplayOpenAI(t *testing.T) {
	// The collector's agent_redaction and the replay normaliser share the HMAC key.
	key := "RUNAGAIN_REDACTION_KEY=replay-test-" + randHex(8)
	col := collectortest.Start(t, collectortest.Options{Env: []string{key}})
	up := newUpstream(t)
	secret := "sk-proj-" + randHex(24) + "T3BlbkFJ" + randHex(20)
	// A prompt over payload_offload's 4 KiB threshold: the request bodies are stored as blobs
	// (http.request.body_ref) and replay must rehydrate them to match.
	padding := strings.Repeat(" The quick brown fox jumps over the lazy dog.", 120)
	env := map[string]string{helperEnv: "1", "OPENAI_API_KEY": secret, "RUNAGAIN_TEST_PROMPT": "Say this is a test." + padding,
		"RUNAGAIN_REDACTION_KEY": strings.TrimPrefix(key, "RUNAGAIN_REDACTION_KEY=")}
	common := []string{"--data-dir", col.DataDir, "--endpoint", col.GRPC, "--listen", "127.0.0.1:0", "--route", "openai=" + up.srv.URL}

	// Record.
	recOut, recErr, err := cli(t, env, append(append([]string{"proxy", "--record"}, common...), append([]string{"--"}, helperArgs()...)...)...)
	if err != nil {
		t.Fatalf("record: %v\nstdout:\n%s\nstderr:\n%s", err, recOut, recErr)
	}
	if n := up.requests.Load(); n != 2 {
		t.Fatalf("upstream got %d requests while recording, want 2", n)
	}
	if got, _ := up.auth.Load().(string); got != "Bearer "+secret {
		t.Fatalf("upstream saw Authorization %q: the proxy must forward the credential", got)
	}
	if !strings.Contains(recOut, "chunks ") || strings.Contains(recOut, "ERROR") {
		t.Fatalf("client output while recording:\n%s", recOut)
	}
	traceID := reTrace(recErr)
	if traceID == "" {
		t.Fatalf("no trace id printed:\n%s", recErr)
	}
	run := waitRun(t, col.DataDir, traceID, 3, 0)
	refs := 0
	rss := run.Traces.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		for j := 0; j < rss.At(i).ScopeSpans().Len(); j++ {
			ss := rss.At(i).ScopeSpans().At(j).Spans()
			for k := 0; k < ss.Len(); k++ {
				if _, ok := ss.At(k).Attributes().Get(fx.AttrRequestBodyRef); ok {
					refs++
				}
			}
		}
	}
	if refs != 2 {
		t.Errorf("%d stored spans have %s, want 2 (payload_offload in the default pipeline)", refs, fx.AttrRequestBodyRef)
	}
	// The bodies may still be in the collector's open pack (staged, not uploaded yet): read it
	// as the CLI on this machine does (payloads::dir of config/default.yaml).
	res := payloadref.NewResolver(payloadref.WithStagingDir(filepath.Join(col.DataDir, "payloads", packfile.StagingDir)))
	if err := res.RehydrateTraces(context.Background(), run.Traces); err != nil {
		t.Fatal(err)
	}
	res.Close()

	// The stored run: a root span and two client spans with the bodies the upstream sent.
	var exs []*fx.Exchange
	var spans []ptrace.Span
	for i := 0; i < rss.Len(); i++ {
		for j := 0; j < rss.At(i).ScopeSpans().Len(); j++ {
			ss := rss.At(i).ScopeSpans().At(j).Spans()
			for k := 0; k < ss.Len(); k++ {
				if fx.IsFixture(ss.At(k)) {
					ex, err := fx.FromSpan(ss.At(k))
					if err != nil {
						t.Fatal(err)
					}
					exs = append(exs, ex)
					spans = append(spans, ss.At(k))
				}
			}
		}
	}
	if len(exs) != 2 {
		t.Fatalf("stored run has %d fixture spans, want 2", len(exs))
	}
	for i, ex := range exs {
		sp := spans[i]
		if sp.Kind() != ptrace.SpanKindClient || sp.ParentSpanID().IsEmpty() {
			t.Errorf("span %d: kind %v parent %v, want a client child of the run's root", i, sp.Kind(), sp.ParentSpanID())
		}
		if ex.Method != "POST" || !strings.HasSuffix(ex.URL, "/v1/chat/completions") || ex.Status != 200 {
			t.Errorf("span %d: %s %s -> %d", i, ex.Method, ex.URL, ex.Status)
		}
		want := up.plain
		if len(ex.Chunks) > 0 {
			want = up.stream
			if len(ex.Chunks) != len(up.stream.Chunks) {
				t.Errorf("stream recorded in %d chunks, upstream sent %d", len(ex.Chunks), len(up.stream.Chunks))
			}
			for c := 1; c < len(ex.Chunks); c++ {
				if ex.Chunks[c].Time.Before(ex.Chunks[c-1].Time) || ex.Chunks[c].Offset <= ex.Chunks[c-1].Offset {
					t.Errorf("chunk %d out of order", c)
				}
			}
		}
		if !bytes.Equal(ex.ResponseBody, want.ResponseBody) {
			t.Errorf("span %d: stored response body differs from what the upstream sent", i)
		}
		if !strings.Contains(string(ex.RequestBody), "Say this is a test."+padding) {
			t.Errorf("span %d: request body %q", i, ex.RequestBody)
		}
		if a := ex.RequestHeader.Get("Authorization"); a == "" || strings.Contains(a, secret) {
			t.Errorf("span %d: stored Authorization %q, want a redaction token", i, a)
		}
	}
	// The credential is nowhere in the data directory (SQLite file, WAL, queues).
	assertNotInDir(t, col.DataDir, secret)

	// Replay: same client code, identical output, no upstream request.
	before := up.requests.Load()
	repOut, repErr, err := cli(t, env, append(append([]string{"replay", traceID}, common[:len(common)-2]...), append([]string{"--"}, helperArgs()...)...)...)
	if err != nil {
		t.Fatalf("replay: %v\nstderr:\n%s", err, repErr)
	}
	if repOut != recOut {
		t.Errorf("replayed client output differs:\nrecord:\n%s\nreplay:\n%s", recOut, repOut)
	}
	if n := up.requests.Load() - before; n != 0 {
		t.Errorf("upstream got %d requests during replay, want 0", n)
	}
	if !strings.Contains(repErr, "served 2 of 2") {
		t.Errorf("replay summary: %s", repErr)
	}

	// Divergence: one field changed.
	env["RUNAGAIN_TEST_PROMPT"] = "Say this is not a test." + padding
	divOut, divErr, err := cli(t, env, append(append([]string{"replay", traceID}, common[:len(common)-2]...), append([]string{"--"}, helperArgs()...)...)...)
	if err == nil || !errors.Is(err, ErrDiverged) {
		t.Fatalf("diverging replay returned %v, want ErrDiverged\nstderr:\n%s", err, divErr)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "replay diverged at request 1: body.messages[0].content") || strings.Count(msg, ErrDiverged.Error()) != 1 {
		t.Errorf("replay error %q, want one %q naming the request and field", msg, ErrDiverged)
	}
	for _, want := range []string{"request 1 (POST", "body.messages[0].content", `expected "Say this is a test. The quick`, `got "Say this is not a test. The quick`} {
		if !strings.Contains(divErr, want) {
			t.Errorf("divergence report lacks %q:\n%s", want, divErr)
		}
	}
	if !strings.Contains(divOut, "ERROR") || !strings.Contains(divOut, "body.messages[0].content") {
		t.Errorf("the client did not get the divergence error:\n%s", divOut)
	}
	if n := up.requests.Load() - before; n != 0 {
		t.Errorf("upstream got %d requests during replays, want 0", n)
	}
	// The attempt owns its records: the divergence is stored on the replay's own run, naming the
	// recorded run and pointing at its exchange; the recording stays clean.
	attempt := replayRunID(divErr)
	if attempt == "" || attempt == traceID {
		t.Fatalf("the diverging replay names no run of its own (got %q):\n%s", attempt, divErr)
	}
	arun := waitRun(t, col.DataDir, attempt, 1, 1)
	lr := findLog(arun.Logs, proxy.EventDivergence)
	if lr == nil {
		t.Fatalf("no %s log record in the replay's run %s", proxy.EventDivergence, attempt)
	}
	if f, _ := lr.Attributes().Get(proxy.AttrDivField); f.Str() != "body.messages[0].content" {
		t.Errorf("divergence record field %q", f.Str())
	}
	if o, _ := lr.Attributes().Get(proxy.AttrDivOriginalTrace); o.Str() != traceID {
		t.Errorf("divergence record names original run %q, want %s", o.Str(), traceID)
	}
	if lr.SpanID() != spans[0].SpanID() && lr.SpanID() != spans[1].SpanID() {
		t.Errorf("divergence record points at span %s, not a recorded exchange", lr.SpanID())
	}
	if run = waitRun(t, col.DataDir, traceID, 3, 0); findLog(run.Logs, proxy.EventDivergence) != nil {
		t.Errorf("the recorded run %s holds a divergence record: it must stay clean", traceID)
	}
}

// replayRunID reads the replay's own run id from its first line ("...; replay run ID").
func replayRunID(stderr string) string {
	const marker = "; replay run "
	i := strings.Index(stderr, marker)
	if i < 0 || len(stderr) < i+len(marker)+32 {
		return ""
	}
	return stderr[i+len(marker) : i+len(marker)+32]
}

func findLog(ld plog.Logs, event string) *plog.LogRecord {
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		sls := ld.ResourceLogs().At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			for k := 0; k < sls.At(j).LogRecords().Len(); k++ {
				if lr := sls.At(j).LogRecords().At(k); lr.EventName() == event {
					return &lr
				}
			}
		}
	}
	return nil
}

func assertNotInDir(t *testing.T, dir, secret string) {
	t.Helper()
	files := 0
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		files++
		if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte(secret[8:40])) {
			t.Errorf("credential found in %s", p)
		}
		return nil
	})
	if files == 0 {
		t.Fatalf("no files under %s", dir)
	}
}

func randHex(n int) string {
	b := make([]byte, n/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TestImportedCassetteReplayBinary: the real binaries. `runagain import` sends a nock cassette of
// the OpenAI JS client to the collector; `runagain replay` serves it to the openai-go client,
// which gets the recorded response; a changed prompt makes `runagain replay` exit with code 1
// and name the field.
func TestImportedCassetteReplayBinary(t *testing.T) {
	col := collectortest.Start(t, collectortest.Options{})
	file := filepath.Join(corpus.Dir(t), "otel-js-contrib-nock/packages/instrumentation-openai/test/mock-responses/openai-chat-completions-adds-genai-conventions.json")
	res, err := importer.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	traceID := res.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID().String()
	want := corpusExchangeFile(t, file)
	out, errOut, err := col.CLI("import", "--endpoint", col.GRPC, file)
	if err != nil || !strings.Contains(out, "nock, 2 spans") {
		t.Fatalf("import: %v\n%s%s", err, out, errOut)
	}
	waitRun(t, col.DataDir, traceID, 2, 0)

	run := func(prompt string) (string, string, int) {
		cmd := exec.Command(filepath.Join(collectortest.BinDir(t), "runagain"), append([]string{"replay", traceID, "--"}, helperArgs()...)...)
		cmd.Env = append(append([]string(nil), col.Env...), "RUNAGAIN_ENDPOINT="+col.GRPC, helperEnv+"=1", "RUNAGAIN_TEST_STREAM=0",
			"OPENAI_API_KEY=test_openai_api_key", "RUNAGAIN_TEST_PROMPT="+prompt)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}
	o, e, code := run("Answer in up to 3 words: Which ocean contains Bouvet Island?")
	if code != 0 {
		t.Fatalf("replay exited %d\nstdout:\n%s\nstderr:\n%s", code, o, e)
	}
	if strings.TrimSpace(o) != strings.TrimSpace(string(want.ResponseBody)) {
		t.Errorf("client got\n%s\nrecorded\n%s", o, want.ResponseBody)
	}
	o, e, code = run("Answer in up to 5 words: Which ocean contains Bouvet Island?")
	if code != 1 {
		t.Fatalf("diverging replay exited %d, want 1\nstderr:\n%s", code, e)
	}
	if !strings.Contains(e, "body.messages[0].content") || !strings.Contains(e, "replay diverged") || !strings.Contains(o, "ERROR") {
		t.Errorf("divergence not reported:\nstdout:\n%s\nstderr:\n%s", o, e)
	}
}

func corpusExchangeFile(t *testing.T, file string) *fx.Exchange {
	t.Helper()
	rel, err := filepath.Rel(corpus.Dir(t), file)
	if err != nil {
		t.Fatal(err)
	}
	return corpusExchange(t, rel)
}
