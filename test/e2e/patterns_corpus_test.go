// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// failingCopy is the langfuse export file src as another run (trace id traceID) whose tool
// observation failed with msg (level ERROR, statusMessage), written to dir.
func failingCopy(t *testing.T, src, dir, traceID, msg string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Trace        map[string]any   `json:"trace"`
		Observations []map[string]any `json:"observations"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	d.Trace["id"] = traceID
	failed := false
	for _, o := range d.Observations {
		o["traceId"] = traceID
		if o["type"] == "TOOL" && !failed {
			o["level"], o["statusMessage"], failed = "ERROR", msg, true
		}
	}
	if !failed {
		t.Fatalf("%s has no TOOL observation", src)
	}
	out, _ := json.Marshal(d)
	p := filepath.Join(dir, traceID+".json")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCorpusRunsFormSensiblePatterns imports the 13 langfuse framework traces of the corpus
// (every one a successful run), three copies of the OpenAI Agents trace whose get_weather call
// failed (two messages that differ only by a status number, a retry count and a request id, one
// other message), and two runaway sessions (testdata of agent_guard: the same tool call
// repeated; the second asks for another city in another session) into the real collector, and
// reads `runagain patterns --json`: no corpus run is failing, the two timeouts are one pattern and
// the other failure another, and the two runaway sessions one pattern, named by the loop alert
// agent_guard raised and the collapsed tool loop before it.
func TestCorpusRunsFormSensiblePatterns(t *testing.T) {
	dir := t.TempDir()
	ft := filepath.Join(corpus.Dir(t), "langfuse/packages/shared/scripts/seeder/utils/framework-traces")
	files, err := filepath.Glob(filepath.Join(ft, "*.json"))
	if err != nil || len(files) < 13 {
		t.Fatalf("framework traces in %s: %v %v", ft, files, err)
	}
	agents := filepath.Join(ft, "openai-agents-2025-09-30.json")
	const (
		timeout1 = "aaaa0000000000000000000000000001"
		timeout2 = "aaaa0000000000000000000000000002"
		denied   = "aaaa0000000000000000000000000003"
	)
	files = append(files,
		failingCopy(t, agents, dir, timeout1, "get_weather: upstream answered 503 after 2 retries (request req_8f2a1c77)"),
		failingCopy(t, agents, dir, timeout2, "get_weather: upstream answered 504 after 3 retries (request req_00b1d3e9)"),
		failingCopy(t, agents, dir, denied, "get_weather: permission denied for this city"))
	rs, err := os.ReadFile(filepath.Join(collectortest.RepoRoot(t), "connector/agentguardconnector/testdata/runaway_session.json"))
	if err != nil {
		t.Fatal(err)
	}
	const runaway1, runaway2 = "72756e616761696e0000000000000001", "72756e616761696e0000000000000002"
	second := strings.NewReplacer(runaway1, runaway2, "runaway-session-1", "runaway-session-2", "Paris", "Tokyo").Replace(string(rs))
	files = append(files, filepath.Join(dir, "runaway1.json"), filepath.Join(dir, "runaway2.json"))
	if err := os.WriteFile(files[len(files)-2], rs, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[len(files)-1], []byte(second), 0o644); err != nil {
		t.Fatal(err)
	}

	col := collectortest.Start(t, collectortest.Options{})
	if out, errOut, code := dsCLI(t, col, nil, append([]string{"import", "--endpoint", col.GRPC}, files...)...); code != 0 {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, errOut)
	}
	type pattern struct {
		ID       string   `json:"id"`
		Title    string   `json:"title"`
		Runs     int64    `json:"runs"`
		Examples []string `json:"examples"`
		Variants []struct {
			Signature struct {
				Shape []string `json:"shape"`
			} `json:"signature"`
		} `json:"variants"`
	}
	var rep struct {
		Runs     int64     `json:"runs"`
		Failing  int64     `json:"failing"`
		Patterns []pattern `json:"patterns"`
	}
	// Wait for every run and the runaway sessions' loop alerts.
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, errOut, code := dsCLI(t, col, nil, "patterns", "--json")
		if code == 0 && json.Unmarshal([]byte(out), &rep) == nil && rep.Runs >= int64(len(files)) && rep.Failing >= 5 {
			break
		}
		if time.Now().After(deadline) {
			text, _, _ := dsCLI(t, col, nil, "patterns")
			t.Fatalf("after 60s: %d runs, %d failing (want %d runs, 5 failing)\n%s%s\n%s", rep.Runs, rep.Failing, len(files), text, errOut, col.Output())
		}
		time.Sleep(500 * time.Millisecond)
	}
	text, _, _ := dsCLI(t, col, nil, "patterns")
	t.Logf("runagain patterns:\n%s", text)
	if rep.Runs != int64(len(files)) || rep.Failing != 5 {
		t.Errorf("%d runs, %d failing: want %d runs, and only the 5 planted failures failing (no corpus run)", rep.Runs, rep.Failing, len(files))
	}
	byRun := map[string]pattern{}
	for _, p := range rep.Patterns {
		out, _, code := dsCLI(t, col, nil, "patterns", "show", "--json", p.ID)
		var show struct {
			RunList []struct {
				TraceID string `json:"trace_id"`
			} `json:"run_list"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &show) != nil {
			t.Fatalf("patterns show %s: %s", p.ID, out)
		}
		for _, r := range show.RunList {
			byRun[r.TraceID] = p
		}
	}
	if len(rep.Patterns) != 3 {
		t.Errorf("want 3 patterns (timeouts, denied, runaway), got %d", len(rep.Patterns))
	}
	if a, b := byRun[timeout1], byRun[timeout2]; a.ID == "" || a.ID != b.ID || a.Runs != 2 {
		t.Errorf("the two timeouts differ only by numbers and an id: want one pattern of 2 runs, got %+v and %+v", a, b)
	} else if !strings.Contains(a.Title, `tool get_weather: "get_weather: upstream answered <n> after <n> retries (request <id>)"`) {
		t.Errorf("timeout pattern title %q", a.Title)
	}
	if d := byRun[denied]; d.ID == "" || d.ID == byRun[timeout1].ID || d.Runs != 1 {
		t.Errorf("another message is another pattern: got %+v", d)
	}
	r1, r2 := byRun[runaway1], byRun[runaway2]
	if r1.ID == "" || r1.ID != r2.ID || r1.Runs != 2 {
		t.Errorf("the two runaway sessions: want one pattern of 2 runs, got %+v and %+v", r1, r2)
	} else {
		if !strings.Contains(r1.Title, "alert loop") {
			t.Errorf("runaway pattern title %q: want the loop alert", r1.Title)
		}
		var shapes []string
		for _, v := range r1.Variants {
			shapes = append(shapes, strings.Join(v.Signature.Shape, " > "))
		}
		sort.Strings(shapes)
		if len(shapes) == 0 || shapes[0] != "get_weather+" {
			t.Errorf("runaway shapes %q: want the collapsed loop get_weather+", shapes)
		}
	}
}
