// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// dsForecastModel is a scripted chat completions upstream on 127.0.0.1 whose model asks for a
// tool the weather agent does not have (get_forecast, with a call id that changes every call).
func dsForecastModel(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-f%d","object":"chat.completion","created":1764460800,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_f%d","type":"function","function":{"name":"get_forecast","arguments":"{\"city\":\"Paris\",\"days\":%d}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":50,"completion_tokens":12,"total_tokens":62}}`, k, 1000+k, k)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestPatternDatasetRegressionGate, end to end with the real binaries: the weather agent crashes
// on a tool it does not know; two such runs recorded through `runagain proxy --record` (the
// model's answers differ in ids and numbers) fall in one failure pattern, which `runagain
// patterns` lists; `runagain dataset add --pattern` freezes both runs, each expecting
// no_pattern=ID; `runagain test` fails against the unfixed agent, naming the pattern, and passes
// against the fixed one, with nothing reaching the model either time.
func TestPatternDatasetRegressionGate(t *testing.T) {
	col := collectortest.Start(t, collectortest.Options{})
	model, calls := dsForecastModel(t)
	agent := []string{datasetAgentEnv + "=1", "AGENT_PROMPT=You are a weather agent. Use the tool.", "AGENT_INPUT=What is the weather in Paris?", "OPENAI_API_KEY=sk-test"}
	fixed := append(append([]string(nil), agent...), "AGENT_FIXED=1")

	var runs []string
	for i := 0; i < 2; i++ {
		out, errOut, code := dsCLI(t, col, agent, append([]string{"proxy", "--record", "--listen", "127.0.0.1:0", "--route", "openai=" + model.URL, "--"}, dsAgentCmd()...)...)
		if code == 0 || !strings.Contains(out, "ERROR unknown tool get_forecast") || !strings.Contains(errOut, "command exited with code 3") {
			t.Fatalf("record %d: exit %d, want the agent's crash (code 3)\n%s\n%s", i, code, out, errOut)
		}
		m := dsTraceRE.FindStringSubmatch(errOut)
		if m == nil {
			t.Fatalf("no trace id printed:\n%s", errOut)
		}
		runs = append(runs, m[1])
	}
	for _, r := range runs {
		dsWaitSpans(t, col, r, 2)
	}

	// One pattern holds both runs.
	var rep struct {
		Failing  int64 `json:"failing"`
		Patterns []struct {
			ID       string   `json:"id"`
			Title    string   `json:"title"`
			Runs     int64    `json:"runs"`
			Examples []string `json:"examples"`
		} `json:"patterns"`
	}
	out, errOut, code := dsCLI(t, col, nil, "patterns", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("runagain patterns --json: exit %d\n%s\n%s", code, out, errOut)
	}
	if len(rep.Patterns) != 1 || rep.Patterns[0].Runs != 2 {
		text, _, _ := dsCLI(t, col, nil, "patterns")
		t.Fatalf("want one pattern of the 2 crashed runs:\n%s", text)
	}
	pid := rep.Patterns[0].ID
	text, _, _ := dsCLI(t, col, nil, "patterns")
	t.Logf("runagain patterns:\n%s", text)

	out, errOut, code = dsCLI(t, col, nil, "dataset", "add", "crashes", "--pattern", pid)
	if code != 0 || !strings.Contains(out, "2 from pattern "+pid+", each expecting no_pattern="+pid) {
		t.Fatalf("dataset add --pattern: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("dataset add --pattern:\n%s", out)

	// The unfixed agent: the failure recurs in every case, and the failure names the pattern.
	before := calls.Load()
	out, errOut, code = dsCLI(t, col, agent, append([]string{"test", "crashes", "--"}, dsAgentCmd()...)...)
	t.Logf("runagain test, unfixed agent (exit %d):\n%s%s", code, out, errOut)
	if code != 1 || !strings.Contains(out, "0 passed, 2 failed") {
		t.Errorf("runagain test on the unfixed agent: exit %d, want 1 with both cases failing", code)
	}
	fail := regexp.MustCompile(`FAIL  [0-9a-f]{32}  no_pattern ` + pid + `: expected not in pattern ` + pid + `, got in pattern ` + pid + `: ` + regexp.QuoteMeta(rep.Patterns[0].Title))
	if n := len(fail.FindAllString(out, -1)); n != 2 {
		t.Errorf("want 2 FAIL lines naming pattern %s (%q), got %d", pid, rep.Patterns[0].Title, n)
	}
	// The fixed agent passes every case.
	out, errOut, code = dsCLI(t, col, fixed, append([]string{"test", "crashes", "--"}, dsAgentCmd()...)...)
	t.Logf("runagain test, fixed agent (exit %d):\n%s%s", code, out, errOut)
	if code != 0 || !strings.Contains(out, "2 passed, 0 failed") {
		t.Errorf("runagain test on the fixed agent: exit %d, want 0 with both cases passing", code)
	}
	if calls.Load() != before {
		t.Errorf("the model got %d calls during the tests, want 0", calls.Load()-before)
	}
}
