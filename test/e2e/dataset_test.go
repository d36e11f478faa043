// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	junit "github.com/joshdk/go-junit"
	"github.com/openai/openai-go/v3"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

const datasetAgentEnv = "RUNAGAIN_E2E_WEATHER_AGENT"

// TestHelperWeatherAgent is not a test: it is the small agent the dataset tests run (the test
// binary re-executed). With the official openai-go client, configured from the environment only
// (OPENAI_BASE_URL), it asks the model with a system prompt (AGENT_PROMPT) and the user's question
// (RUNAGAIN_CASE_INPUT when runagain test gives one, else AGENT_INPUT), runs the get_weather tool
// the model asks for, sends the result back and prints the final answer.
func TestHelperWeatherAgent(t *testing.T) {
	if os.Getenv(datasetAgentEnv) == "" {
		t.Skip("helper process for the dataset tests")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := openai.NewClient()
	prompt := os.Getenv("AGENT_PROMPT")
	input := os.Getenv("RUNAGAIN_CASE_INPUT")
	if input == "" {
		input = os.Getenv("AGENT_INPUT")
	}
	params := openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(prompt), openai.UserMessage(input)},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: "get_weather", Description: openai.String("Weather in a city"),
			Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
		})},
	}
	for step := 0; step < 5; step++ {
		c, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(2)
		}
		msg := c.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			fmt.Println(msg.Content)
			os.Exit(0)
		}
		for _, tc := range msg.ToolCalls {
			if tc.Function.Name != "get_weather" {
				// The bug TestPatternDatasetRegressionGate gates: a tool the agent does not know
				// makes it crash; fixed (AGENT_FIXED), it answers without the tool.
				if os.Getenv("AGENT_FIXED") == "" {
					fmt.Println("ERROR unknown tool", tc.Function.Name)
					os.Exit(3)
				}
				fmt.Println("I cannot look that up.")
				os.Exit(0)
			}
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			params.Messages = append(params.Messages, openai.ToolMessage("sunny, 21 C", tc.ID))
		}
	}
	fmt.Println("ERROR too many steps")
	os.Exit(3)
}

// weatherModel is a scripted chat completions upstream on 127.0.0.1: the first call of a
// conversation gets a get_weather tool call, the call with the tool's result the final answer.
func dsWeatherModel(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "application/json")
		id := fmt.Sprintf("chatcmpl-%d", n.Load())
		if len(req.Messages) > 0 && req.Messages[len(req.Messages)-1].Role == "tool" {
			fmt.Fprintf(w, `{"id":%q,"object":"chat.completion","created":1764460800,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":"It is sunny in Paris, 21 C."},"finish_reason":"stop"}],"usage":{"prompt_tokens":60,"completion_tokens":9,"total_tokens":69}}`, id)
			return
		}
		fmt.Fprintf(w, `{"id":%q,"object":"chat.completion","created":1764460800,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":50,"completion_tokens":12,"total_tokens":62}}`, id)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// runagain runs bin/runagain with env added to the collector's environment and returns stdout,
// stderr and the exit code.
func dsCLI(t *testing.T, col *collectortest.Collector, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(collectortest.BinDir(t), "runagain"), args...)
	cmd.Env = append(append(append([]string(nil), col.Env...), "RUNAGAIN_ENDPOINT="+col.GRPC), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return o.String(), e.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), 0
}

func dsAgentCmd() []string {
	return []string{os.Args[0], "-test.run=^TestHelperWeatherAgent$", "-test.count=1"}
}

var dsTraceRE = regexp.MustCompile(`run trace ([0-9a-f]{32})`)

// waitSpans polls `runagain show --json` until the run has n spans.
func dsWaitSpans(t *testing.T, col *collectortest.Collector, traceID string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, code := dsCLI(t, col, nil, "show", "--json", traceID)
		if code == 0 && strings.Count(out, `"spanId"`) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s did not reach %d spans in 30s:\n%s", traceID, n, out)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// TestDatasetRegressionGate, end to end with the real binaries: a small openai-go agent is
// recorded three times through `runagain proxy --record`; one run becomes a dataset case with
// expectations; `runagain test` passes on the unchanged agent with nothing reaching the model;
// a prompt change makes it fail naming the expectation, with exit code 1, and the JUnit file
// (parsed by a JUnit XML library) holds the failure. The dataset exported and imported into an
// empty data directory has the same version digest and gives the same results.
func TestDatasetRegressionGate(t *testing.T) {
	evals := startLogsBackend(t)
	col := collectortest.Start(t, collectortest.Options{Config: configWithLogsBackend(t, evals.URL)})
	model, calls := dsWeatherModel(t)
	agent := []string{datasetAgentEnv + "=1", "AGENT_PROMPT=You are a weather agent. Use the tool.", "AGENT_INPUT=What is the weather in Paris?", "OPENAI_API_KEY=sk-test"}

	var runs []string
	for i := 0; i < 3; i++ {
		out, errOut, code := dsCLI(t, col, agent, append([]string{"proxy", "--record", "--listen", "127.0.0.1:0", "--route", "openai=" + model.URL, "--"}, dsAgentCmd()...)...)
		if code != 0 || !strings.Contains(out, "sunny in Paris") {
			t.Fatalf("record %d: exit %d\n%s\n%s", i, code, out, errOut)
		}
		m := dsTraceRE.FindStringSubmatch(errOut)
		if m == nil {
			t.Fatalf("no trace id printed:\n%s", errOut)
		}
		runs = append(runs, m[1])
	}
	if calls.Load() != 6 {
		t.Fatalf("the model got %d calls while recording, want 6", calls.Load())
	}
	for _, r := range runs {
		dsWaitSpans(t, col, r, 3)
	}

	out, errOut, code := dsCLI(t, col, nil, "dataset", "add", "weather", runs[1], "--note", "paris weather",
		"--expect", "output~sunny", "--expect", "tools=recorded", "--expect", "max_steps=2", "--expect", "max_tokens=200",
		"--expect", "max_cost_usd=0.01", "--expect", "max_duration=60s", "--expect", "no_alert=loop", "--expect", "replay=strict")
	if code != 0 || !strings.Contains(out, "dataset weather@") || !strings.Contains(out, "1 cases (new version)") {
		t.Fatalf("dataset add: exit %d\n%s\n%s", code, out, errOut)
	}
	out, _, _ = dsCLI(t, col, nil, "dataset", "show", "weather")
	for _, want := range []string{"case " + runs[1], "2 recorded HTTP exchanges", `input: "What is the weather in Paris?"`, `expect output contains "sunny"`, `expect tool calls get_weather({"city":"Paris"})`, "expect max_steps 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("dataset show lacks %q:\n%s", want, out)
		}
	}
	t.Logf("dataset show:\n%s", out)
	list, _, _ := dsCLI(t, col, nil, "dataset", "list")
	t.Logf("dataset list:\n%s", list)
	// Unknown dataset or version: an error naming it, exit 1.
	for _, args := range [][]string{{"dataset", "show", "nope"}, {"dataset", "show", "weather@ffff0000"}, {"test", "nope", "--", "true"}, {"dataset", "rm", "weather@ffff0000"}} {
		o, e, code := dsCLI(t, col, nil, args...)
		name := strings.TrimPrefix(args[2], "weather@")
		if args[0] == "test" {
			name = args[1]
		}
		if code != 1 || !strings.Contains(e, name) || !strings.Contains(e, "not found") {
			t.Errorf("runagain %s: exit %d, want 1 and an error naming %s\n%s%s", strings.Join(args, " "), code, name, o, e)
		}
	}
	if !strings.Contains(list, "weather") || !strings.Contains(list, "paris weather") {
		t.Errorf("dataset list:\n%s", list)
	}

	// The unchanged agent passes, and the model is never called.
	before := calls.Load()
	out, errOut, code = dsCLI(t, col, agent, append([]string{"test", "weather", "--"}, dsAgentCmd()...)...)
	if code != 0 || !strings.Contains(out, "PASS  "+runs[1]) || !strings.Contains(out, "1 passed, 0 failed") {
		nt := regexp.MustCompile(`runagain diff [0-9a-f]{32} ([0-9a-f]{32})`).FindStringSubmatch(out)
		show := ""
		if nt != nil {
			show, _, _ = dsCLI(t, col, nil, "show", nt[1])
		}
		t.Fatalf("runagain test on the unchanged agent: exit %d\n%s\n%s\nnew run:\n%s", code, out, errOut, show)
	}
	if calls.Load() != before {
		t.Errorf("the model got %d calls during the test, want 0", calls.Load()-before)
	}
	// The result is a gen_ai.evaluation.result event on the test run's root span, for other back ends too.
	if m := regexp.MustCompile(`PASS  ` + runs[1] + `  .*run ([0-9a-f]{32})\)`).FindStringSubmatch(out); m == nil {
		t.Errorf("no new run in the PASS line:\n%s", out)
	} else {
		checkEvaluation(t, col, evals, m[1], "weather", runs[1], "pass", `output contains "sunny"`)
	}

	// A prompt change fails, naming the expectation, expected and got, and the diff command.
	changed := append(append([]string(nil), agent...), "AGENT_PROMPT=You are a terse weather agent.")
	junitFile := filepath.Join(t.TempDir(), "report.xml")
	out, errOut, code = dsCLI(t, col, changed, append([]string{"test", "weather", "--junit", junitFile, "--"}, dsAgentCmd()...)...)
	if code != 1 {
		t.Fatalf("runagain test on the changed agent exited %d, want 1\n%s\n%s", code, out, errOut)
	}
	t.Logf("runagain test, changed prompt:\n%s", out)
	line := regexp.MustCompile(`FAIL  ` + runs[1] + `  output contains "sunny": expected output containing "sunny", got no final output \(replay diverged at request 1: body\.messages\[0\]\.content: .*\(.*compare: runagain diff ` + runs[1] + ` [0-9a-f]{32}\)`)
	if !line.MatchString(out) || !strings.Contains(out, "0 passed, 1 failed") {
		t.Errorf("failure line:\n%s\n%s", out, errOut)
	}
	// The failed run is a candidate for a dataset: sessions --failed lists it with its reason.
	if m := regexp.MustCompile(`runagain diff [0-9a-f]{32} ([0-9a-f]{32})`).FindStringSubmatch(out); m == nil {
		t.Errorf("no new run in the failure line")
	} else {
		checkEvaluation(t, col, evals, m[1], "weather", runs[1], "fail", `output contains "sunny": expected output containing "sunny", got no final output`)
		failed, errOut, code := dsCLI(t, col, nil, "sessions", "--failed")
		row := ""
		for _, l := range strings.Split(failed, "\n") {
			if strings.Contains(l, m[1]) {
				row = l
			}
		}
		if code != 0 || !strings.Contains(row, "replay divergence") || !strings.Contains(row, "error spans") || strings.Contains(failed, runs[0]) {
			t.Errorf("sessions --failed (want %s with its reasons, not the clean run %s):\n%s%s", m[1], runs[0], failed, errOut)
		}
	}
	suites, err := junit.IngestFile(junitFile)
	if err != nil {
		t.Fatalf("parse %s: %v", junitFile, err)
	}
	if len(suites) != 1 || len(suites[0].Tests) != 1 {
		t.Fatalf("JUnit report: %+v", suites)
	}
	tc := suites[0].Tests[0]
	if tc.Status != junit.StatusFailed || tc.Name != runs[1] || tc.Error == nil || !strings.HasPrefix(tc.Error.Error(), `output contains "sunny": expected output containing "sunny", got no final output (replay diverged at request 1: body.messages[0].content`) {
		t.Errorf("JUnit test case: status %s name %s error %v", tc.Status, tc.Name, tc.Error)
	}
	if je, ok := tc.Error.(junit.Error); !ok || !strings.Contains(je.Body, "compare: runagain diff "+runs[1]) || je.Type != `output contains "sunny"` {
		t.Errorf("JUnit failure: %#v", tc.Error)
	}
	if suites[0].Totals.Failed != 1 {
		t.Errorf("JUnit totals: %+v", suites[0].Totals)
	}

	// Export, then import into an empty data directory: same digest, same results.
	exp := filepath.Join(t.TempDir(), "datasets", "weather")
	if out, errOut, code := dsCLI(t, col, nil, "dataset", "export", "weather", exp); code != 0 {
		t.Fatalf("export: %s%s", out, errOut)
	}
	empty := t.TempDir()
	out, errOut, code = dsCLI(t, col, nil, "--data-dir", empty, "dataset", "import", exp)
	if code != 0 || !strings.Contains(out, "(new version)") {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, errOut)
	}
	version := func(dataDir string) string {
		out, errOut, code := dsCLI(t, col, nil, "--data-dir", dataDir, "dataset", "show", "--json", "weather")
		var v struct{ Version string }
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil || len(v.Version) != 64 {
			t.Fatalf("dataset show --json: %s%s", out, errOut)
		}
		return v.Version
	}
	if a, b := version(col.DataDir), version(empty); a != b {
		t.Errorf("imported version %s, exported %s", b, a)
	}
	// A malformed exported file: the import fails naming it, and writes nothing.
	bad := filepath.Join(t.TempDir(), "bad")
	if out, errOut, code := dsCLI(t, col, nil, "dataset", "export", "weather", bad); code != 0 {
		t.Fatalf("export: %s%s", out, errOut)
	}
	badRun := filepath.Join(bad, "cases", runs[1], "run.json")
	if err := os.WriteFile(badRun, []byte(`{"resourceSpans": [{`), 0o644); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	out, errOut, code = dsCLI(t, col, nil, "--data-dir", other, "dataset", "import", bad)
	if code != 1 || !strings.Contains(errOut, badRun) {
		t.Errorf("import of a malformed run.json: exit %d, want 1 and an error naming %s\n%s%s", code, badRun, out, errOut)
	}
	if out, _, _ := dsCLI(t, col, nil, "--data-dir", other, "dataset", "list"); !strings.Contains(out, "no datasets") {
		t.Errorf("a failed import wrote something:\n%s", out)
	}
	imported := "--datasets-url=file://" + filepath.ToSlash(empty) + "/datasets"
	out, errOut, code = dsCLI(t, col, agent, append([]string{"test", imported, "weather", "--"}, dsAgentCmd()...)...)
	if code != 0 || !strings.Contains(out, "PASS  "+runs[1]) {
		t.Errorf("test of the imported dataset, unchanged agent: exit %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = dsCLI(t, col, changed, append([]string{"test", imported, "weather", "--"}, dsAgentCmd()...)...)
	if code != 1 || !strings.Contains(out, `output contains "sunny"`) {
		t.Errorf("test of the imported dataset, changed agent: exit %d\n%s", code, out)
	}

	// The CI gate script (deploy/ci, called by the GitHub and GitLab jobs) on the exported
	// directory: its own collector on a fresh data directory, the JUnit report, the exit code.
	for _, tc := range []struct {
		env    []string
		code   int
		status junit.Status
	}{{agent, 0, junit.StatusPassed}, {changed, 1, junit.StatusFailed}} {
		report := filepath.Join(t.TempDir(), "ci-junit.xml")
		cmd := exec.Command("bash", append([]string{filepath.Join(collectortest.RepoRoot(t), "deploy", "ci", "runagain-test.sh")}, dsAgentCmd()...)...)
		cmd.Env = append(append(os.Environ(), tc.env...),
			"RUNAGAIN_DATASET_DIR="+exp, "RUNAGAIN_BIN_DIR="+collectortest.BinDir(t), "RUNAGAIN_JUNIT="+report,
			"RUNAGAIN_CONFIG="+filepath.Join(collectortest.RepoRoot(t), "config", "default.yaml"), "RUNAGAIN_DATA_DIR="+t.TempDir(),
			fmt.Sprintf("RUNAGAIN_OTLP_GRPC_ENDPOINT=127.0.0.1:%d", collectortest.FreePort(t)),
			fmt.Sprintf("RUNAGAIN_OTLP_HTTP_ENDPOINT=127.0.0.1:%d", collectortest.FreePort(t)),
			fmt.Sprintf("RUNAGAIN_HEALTH_ENDPOINT=127.0.0.1:%d", collectortest.FreePort(t)),
			fmt.Sprintf("RUNAGAIN_TELEMETRY_PORT=%d", collectortest.FreePort(t)),
			fmt.Sprintf("RUNAGAIN_PROMETHEUS_ENDPOINT=127.0.0.1:%d", collectortest.FreePort(t)),
			"RUNAGAIN_TEST_ARGS=--parallel 2", "RUNAGAIN_DATASETS_URL=", "RUNAGAIN_ENDPOINT=")
		var o bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &o
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		suites, jerr := junit.IngestFile(report)
		if code != tc.code || jerr != nil || len(suites) != 1 || len(suites[0].Tests) != 1 || suites[0].Tests[0].Status != tc.status {
			t.Errorf("deploy/ci/runagain-test.sh: exit %d (want %d), report %v %+v\n%s", code, tc.code, jerr, suites, o.String())
		}
	}
}
