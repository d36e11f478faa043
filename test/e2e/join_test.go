// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/dataset"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestProxyRecordJoinsAnInstrumentedNodeAgent: the real openai npm client traced by
// @opentelemetry/sdk-node (test/clients/openai-node), whose SDK reads no TRACEPARENT, is run
// once on its own and once under `runagain proxy --record`. Recorded, it still gives ONE run: the
// proxy places its three exchanges in the agent's own trace, each under the LLM span it belongs
// to with a link marked inferred, and its root span under the agent's. That run counts each call
// once: the same LLM calls, tokens and cost as the run without the proxy, and no second run.
func TestProxyRecordJoinsAnInstrumentedNodeAgent(t *testing.T) {
	node, modules := nodeModules(t)
	col := collectortest.Start(t, collectortest.Options{})
	agent := filepath.Join(collectortest.RepoRoot(t), "test", "clients", "openai-node", "agent.js")
	env := []string{"NODE_PATH=" + modules, "OTEL_EXPORTER_OTLP_ENDPOINT=http://" + col.HTTP, "OTEL_METRICS_EXPORTER=none",
		"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"}

	// Instrumented only: the agent against the upstream directly.
	alone := httptest.NewServer(&scriptedOpenAI{})
	defer alone.Close()
	soloTrace := runSoloNodeAgent(t, node, agent, append(env, "OPENAI_BASE_URL="+alone.URL+"/v1"), col)

	// Recorded: the same agent under the proxy, routed to a second scripted upstream.
	upstream := &scriptedOpenAI{}
	srv := httptest.NewServer(upstream)
	defer srv.Close()
	out, errOut, err := cliEnv(t, col, env, "proxy", "--record", "--listen", "127.0.0.1:0", "--route", "openai="+srv.URL, "--", node, agent)
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
	t.Logf("proxy --record stderr:\n%s", errOut)
	assert.Equal(t, []string{"POST /v1/chat/completions", "POST /v1/chat/completions", "POST /v1/responses"}, upstream.requests)
	agentTrace := strings.TrimSpace(out)
	require.Len(t, agentTrace, 32, "the agent prints its trace id")
	m := regexp.MustCompile(`run trace ([0-9a-f]{32})`).FindStringSubmatch(errOut)
	require.NotNil(t, m, errOut)
	assert.Equal(t, agentTrace, m[1], "the run printed is the agent's own trace")
	assert.Contains(t, errOut, "joined the agent's trace "+agentTrace+" (by resource): 3 exchanges placed under the calls they belong to")

	// One run: agent (5 spans) + 3 exchanges + the proxy's root.
	run := waitRunSpans(t, col.DataDir, agentTrace, 9)
	exchanges := inferredExchanges(t, run, func(sp ptrace.Span) {
		ev, _ := sp.Links().At(0).Attributes().Get(runagainattr.LinkEvidence)
		assert.Contains(t, ev.AsString(), "body", "the request matched the span's messages")
	})
	assert.Equal(t, 3, exchanges)

	// Counted once: the joined run and the run without the proxy agree, and there is no other run.
	type row struct {
		TraceID      string  `json:"trace_id"`
		InputTokens  int64   `json:"input_tokens"`
		OutputTokens int64   `json:"output_tokens"`
		CostUSD      float64 `json:"cost_usd"`
	}
	var rows []row
	require.NoError(t, json.Unmarshal([]byte(cli(t, col, "sessions", "--json")), &rows))
	got := map[string]row{}
	for _, r := range rows {
		got[r.TraceID] = r
	}
	require.Len(t, got, 2, "two executions, two runs: %+v", rows)
	solo, joined := got[soloTrace], got[agentTrace]
	assert.Positive(t, solo.InputTokens)
	assert.Equal(t, solo.InputTokens, joined.InputTokens)
	assert.Equal(t, solo.OutputTokens, joined.OutputTokens)
	assert.InDelta(t, solo.CostUSD, joined.CostUSD, 1e-12)

	for _, trace := range []string{soloTrace, agentTrace} {
		step := cli(t, col, "show", trace, "--step", "1")
		assert.Contains(t, step, "step 1 of 3: chat gpt-4o-mini", "run %s", trace)
	}
}

// runSoloNodeAgent runs the agent without the proxy and returns the trace id it prints.
func runSoloNodeAgent(t *testing.T, node, agent string, env []string, col *collectortest.Collector) string {
	t.Helper()
	cmd := exec.Command(node, agent)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "node agent: %s", stderr.String())
	trace := strings.TrimSpace(stdout.String())
	require.Len(t, trace, 32, "agent prints its trace id; stderr: %s", stderr.String())
	waitRunSpans(t, col.DataDir, trace, 5)
	return trace
}

// TestRerunJoinsAnInstrumentedNodeAgent: the same instrumented Node agent, recorded under
// `runagain proxy --record` (one joined run), then rerun with its model changed. The rerun is one
// run too: its exchanges (the three LLM calls, edited and sent live) are placed in the agent's
// new trace under the agent's own LLM spans, matched by time alone since --set changed the
// requests after the agent's spans recorded them, and the rerun's root span (naming the original
// and the change) sits under the agent's root. Each call counts once: the rerun's tokens are the
// recording's, and `diff` names the change.
func TestRerunJoinsAnInstrumentedNodeAgent(t *testing.T) {
	node, modules := nodeModules(t)
	col := collectortest.Start(t, collectortest.Options{})
	agent := filepath.Join(collectortest.RepoRoot(t), "test", "clients", "openai-node", "agent.js")
	env := []string{"NODE_PATH=" + modules, "OTEL_EXPORTER_OTLP_ENDPOINT=http://" + col.HTTP, "OTEL_METRICS_EXPORTER=none",
		"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"}

	upstream := &scriptedOpenAI{}
	srv := httptest.NewServer(upstream)
	defer srv.Close()
	out, errOut, err := cliEnv(t, col, env, "proxy", "--record", "--listen", "127.0.0.1:0", "--route", "openai="+srv.URL, "--", node, agent)
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
	orig := strings.TrimSpace(out)
	require.Len(t, orig, 32, "the agent prints its trace id")
	require.Contains(t, errOut, "joined the agent's trace "+orig)
	waitRunSpans(t, col.DataDir, orig, 9)

	// The rerun goes live to the same upstream (the recording's route), its script started afresh.
	upstream.mu.Lock()
	upstream.requests, upstream.bodies = nil, nil
	upstream.mu.Unlock()
	out, errOut, err = cliEnv(t, col, env, "rerun", orig, "--set", "model=gpt-4o", "--listen", "127.0.0.1:0", "--", node, agent)
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
	t.Logf("rerun stderr:\n%s", errOut)
	assert.Equal(t, []string{"POST /v1/chat/completions", "POST /v1/chat/completions", "POST /v1/responses"}, upstream.requests)
	for _, b := range upstream.bodies {
		assert.Equal(t, "gpt-4o", b["model"], "the change reached the upstream")
	}
	rerun := strings.TrimSpace(out)
	require.Len(t, rerun, 32, "the agent prints its trace id")
	assert.Contains(t, errOut, "runagain rerun: joined the agent's trace "+rerun+" (by resource): 3 exchanges placed under the calls they belong to")
	assert.Contains(t, errOut, "runagain rerun: new run "+rerun+" (rerun of "+orig+")")
	assert.Contains(t, errOut, "runagain diff "+orig+" "+rerun)

	// One run: agent (5 spans) + 3 exchanges + the rerun's root, under the agent's root.
	run := waitRunSpans(t, col.DataDir, rerun, 9)
	assertRootUnderAgent(t, run, "runagain rerun", orig)
	exchanges := inferredExchanges(t, run, func(sp ptrace.Span) {
		edits, _ := sp.Attributes().Get(runagainattr.RerunEdits)
		assert.Equal(t, "model=gpt-4o", edits.Str(), sp.Name())
	})
	assert.Equal(t, 3, exchanges)

	// Two executions, two runs, each call counted once.
	type row struct {
		TraceID      string `json:"trace_id"`
		InputTokens  int64  `json:"input_tokens"`
		OutputTokens int64  `json:"output_tokens"`
	}
	var rows []row
	require.NoError(t, json.Unmarshal([]byte(cli(t, col, "sessions", "--json")), &rows))
	got := map[string]row{}
	for _, r := range rows {
		got[r.TraceID] = r
	}
	require.Len(t, got, 2, "record and rerun, two runs: %+v", rows)
	assert.Positive(t, got[orig].InputTokens)
	assert.Equal(t, got[orig].InputTokens, got[rerun].InputTokens)
	assert.Equal(t, got[orig].OutputTokens, got[rerun].OutputTokens)
	assert.Contains(t, cli(t, col, "diff", orig, rerun), "b is a rerun of a with: model=gpt-4o")

	// replay: served from the recording, and one run too: the replay's root span in the agent's trace.
	upstream.mu.Lock()
	upstream.requests = nil
	upstream.mu.Unlock()
	out, errOut, err = cliEnv(t, col, env, "replay", orig, "--", node, agent)
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
	t.Logf("replay stderr:\n%s", errOut)
	assert.Empty(t, upstream.requests, "replay reached the upstream")
	replayed := strings.TrimSpace(out)
	require.Len(t, replayed, 32, "the agent prints its trace id")
	assert.Contains(t, errOut, "runagain replay: joined the agent's trace "+replayed+" (by resource)")
	assert.Contains(t, errOut, "runagain replay: replay run "+replayed)
	assertRootUnderAgent(t, waitRunSpans(t, col.DataDir, replayed, 6), "runagain replay", orig)
	assert.Contains(t, cli(t, col, "show", replayed), "replay: served 3 of 3 recorded exchanges (3 requests); 0 refused, 0 sent live",
		"show says what the replay served (it records no exchange spans)")

	// test: the case's new run is the agent's trace, and the case passes.
	_, errOut, code := dsCLI(t, col, env, "dataset", "add", "joined", orig)
	require.Equal(t, 0, code, errOut)
	out, errOut, code = dsCLI(t, col, env, "test", "joined", "--", node, agent)
	require.Equal(t, 0, code, "%s\n%s", out, errOut)
	t.Logf("test stdout:\n%s\nstderr:\n%s", out, errOut)
	out, errOut, code = dsCLI(t, col, env, "test", "joined", "--json", "--", node, agent)
	var rep struct{ Cases []dataset.CaseResult }
	require.NoError(t, json.Unmarshal([]byte(out), &rep), "%s\n%s", out, errOut)
	require.Len(t, rep.Cases, 1)
	tc := rep.Cases[0]
	require.Equal(t, 0, code, "%+v\n%s", tc, errOut)
	assert.Equal(t, "pass", tc.Status, "%+v", tc)
	assert.NotEqual(t, orig, tc.New)
	assert.Contains(t, tc.DiffCmd, "runagain diff "+orig+" "+tc.New)
	assertRootUnderAgent(t, waitRunSpans(t, col.DataDir, tc.New, 9), "runagain test", orig)

	rows = nil
	require.NoError(t, json.Unmarshal([]byte(cli(t, col, "sessions", "--json")), &rows))
	assert.Len(t, rows, 5, "record, rerun, replay and two tests: five executions, five runs: %+v", rows)
	for _, r := range rows {
		assert.Equal(t, got[orig].InputTokens, r.InputTokens, "run %s counts each call once", r.TraceID)
	}
}

// inferredExchanges checks each recorded exchange of run (a span with runagainattr.FixtureSource)
// is under one of the agent's LLM spans with one span link to it marked inferred, calls check with
// it, and returns how many there are.
func inferredExchanges(t *testing.T, run *store.Run, check func(ptrace.Span)) int {
	t.Helper()
	byID := map[string]string{}
	for _, sp := range spansOf(run.Traces) {
		byID[sp.SpanID().String()] = sp.Name()
	}
	n := 0
	for _, sp := range spansOf(run.Traces) {
		if _, ok := sp.Attributes().Get(runagainattr.FixtureSource); !ok {
			continue
		}
		n++
		parent := byID[sp.ParentSpanID().String()]
		assert.True(t, strings.HasPrefix(parent, "chat ") || strings.HasPrefix(parent, "responses") || strings.Contains(parent, "gpt-4o-mini"),
			"exchange %s is under %q, want the agent's LLM span", sp.Name(), parent)
		require.Equal(t, 1, sp.Links().Len(), sp.Name())
		l := sp.Links().At(0)
		assert.Equal(t, sp.ParentSpanID(), l.SpanID())
		typ, _ := l.Attributes().Get(runagainattr.LinkType)
		assert.Equal(t, runagainattr.LinkInferred, typ.Str())
		check(sp)
	}
	return n
}

// assertRootUnderAgent: run holds the span named name* (runagain's root of the attempt) under the
// agent's root span, naming orig as the run it replayed.
func assertRootUnderAgent(t *testing.T, run *store.Run, name, orig string) {
	t.Helper()
	var agentRoot string
	for _, sp := range spansOf(run.Traces) {
		if sp.ParentSpanID().IsEmpty() {
			agentRoot = sp.SpanID().String()
		}
	}
	found := false
	for _, sp := range spansOf(run.Traces) {
		if !strings.HasPrefix(sp.Name(), name) {
			continue
		}
		found = true
		assert.Equal(t, agentRoot, sp.ParentSpanID().String(), "%s is under the agent's root", sp.Name())
		v, _ := sp.Attributes().Get(runagainattr.RerunOriginalTrace)
		assert.Equal(t, orig, v.Str())
	}
	assert.True(t, found, "no span %s* in the run", name)
}

// TestJoinsAnAgentWhoseRequestsCarryTraceparent: the same instrumented agent, but each request
// carries its span's traceparent (AGENT_PROPAGATE=1, as an HTTP client instrumentation sends
// it) while its SDK still ignores TRACEPARENT. The proxy then holds no exchange: each goes into
// the agent's trace by its traceparent. The execution is still one run: the proxy's root span
// (the command, its exit code and the recording's settings) waits for the agent's trace and goes
// under its root, for `proxy --record` and for `rerun` alike.
func TestJoinsAnAgentWhoseRequestsCarryTraceparent(t *testing.T) {
	node, modules := nodeModules(t)
	col := collectortest.Start(t, collectortest.Options{})
	agent := filepath.Join(collectortest.RepoRoot(t), "test", "clients", "openai-node", "agent.js")
	env := []string{"NODE_PATH=" + modules, "OTEL_EXPORTER_OTLP_ENDPOINT=http://" + col.HTTP, "OTEL_METRICS_EXPORTER=none",
		"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true", "AGENT_PROPAGATE=1"}
	upstream := &scriptedOpenAI{}
	srv := httptest.NewServer(upstream)
	defer srv.Close()

	out, errOut, err := cliEnv(t, col, env, "proxy", "--record", "--listen", "127.0.0.1:0", "--route", "openai="+srv.URL, "--", node, agent)
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
	t.Logf("proxy --record stderr:\n%s", errOut)
	orig := strings.TrimSpace(out)
	require.Len(t, orig, 32, "the agent prints its trace id")
	assert.Contains(t, errOut, "runagain proxy: joined the agent's trace "+orig+" (by resource): no exchange without traceparent to place")
	assert.Contains(t, errOut, "run trace "+orig)
	run := waitRunSpans(t, col.DataDir, orig, 9)
	var proxyRoot ptrace.Span
	for _, sp := range spansOf(run.Traces) {
		if strings.HasPrefix(sp.Name(), "runagain record") {
			proxyRoot = sp
		}
	}
	require.NotEqual(t, ptrace.Span{}, proxyRoot, "the proxy's root span is in the agent's run")
	assert.False(t, proxyRoot.ParentSpanID().IsEmpty(), "under the agent's root")

	type row struct {
		TraceID     string `json:"trace_id"`
		InputTokens int64  `json:"input_tokens"`
	}
	sessions := func() map[string]row {
		var rows []row
		require.NoError(t, json.Unmarshal([]byte(cli(t, col, "sessions", "--json")), &rows))
		got := map[string]row{}
		for _, r := range rows {
			got[r.TraceID] = r
		}
		return got
	}
	got := sessions()
	require.Len(t, got, 1, "one execution, one run: %+v", got)
	assert.Positive(t, got[orig].InputTokens)

	upstream.mu.Lock() // the rerun goes live to the same upstream, its script started afresh
	upstream.requests, upstream.bodies = nil, nil
	upstream.mu.Unlock()
	out, errOut, err = cliEnv(t, col, env, "rerun", orig, "--set", "model=gpt-4o", "--listen", "127.0.0.1:0", "--", node, agent)
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
	t.Logf("rerun stderr:\n%s", errOut)
	rerun := strings.TrimSpace(out)
	require.Len(t, rerun, 32)
	assert.Contains(t, errOut, "runagain rerun: joined the agent's trace "+rerun+" (by resource): no exchange without traceparent to place")
	assertRootUnderAgent(t, waitRunSpans(t, col.DataDir, rerun, 9), "runagain rerun", orig)
	got = sessions()
	require.Len(t, got, 2, "record and rerun, two runs: %+v", got)
	assert.Equal(t, got[orig].InputTokens, got[rerun].InputTokens, "each call counted once")
}
