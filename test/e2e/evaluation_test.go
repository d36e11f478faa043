// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// logsBackend is another OTLP back end: an OTLP/HTTP logs endpoint on 127.0.0.1 that keeps every
// log record the collector's otlphttp exporter sends it.
type logsBackend struct {
	*httptest.Server
	mu      sync.Mutex
	records []plog.LogRecord
}

func startLogsBackend(t *testing.T) *logsBackend {
	t.Helper()
	b := &logsBackend{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		req := plogotlp.NewExportRequest()
		if err == nil {
			err = req.UnmarshalProto(body)
		}
		if r.URL.Path != "/v1/logs" || err != nil {
			http.Error(w, "want an OTLP/HTTP protobuf logs export", http.StatusBadRequest)
			return
		}
		ld := req.Logs()
		b.mu.Lock()
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			sls := ld.ResourceLogs().At(i).ScopeLogs()
			for j := 0; j < sls.Len(); j++ {
				lrs := sls.At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					lr := plog.NewLogRecord()
					lrs.At(k).CopyTo(lr)
					b.records = append(b.records, lr)
				}
			}
		}
		b.mu.Unlock()
		resp, _ := plogotlp.NewExportResponse().MarshalProto()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	}))
	t.Cleanup(b.Close)
	return b
}

// evaluation waits for the gen_ai.evaluation.result event of the run traceID.
func (b *logsBackend) evaluation(t *testing.T, traceID string) plog.LogRecord {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b.mu.Lock()
		var found []plog.LogRecord
		for _, lr := range b.records {
			if lr.EventName() == "gen_ai.evaluation.result" && lr.TraceID().String() == traceID {
				found = append(found, lr)
			}
		}
		n := len(b.records)
		b.mu.Unlock()
		if len(found) == 1 {
			return found[0]
		}
		if len(found) > 1 || time.Now().After(deadline) {
			t.Fatalf("the other back end got %d gen_ai.evaluation.result events for run %s (want 1) among %d log records", len(found), traceID, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// configWithLogsBackend is config/default.yaml with its OTLP logs pipeline also exporting to an
// OTLP/HTTP back end at url (the collector's own otlphttp exporter): what a team forwarding the
// collector's logs to another tool configures.
func configWithLogsBackend(t *testing.T, url string) string {
	t.Helper()
	base, err := os.ReadFile(filepath.Join(collectortest.RepoRoot(t), "config", "default.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(base)
	pipeline := "      processors: [retry_info, memory_limiter, agent_redaction, payload_offload]\n      exporters: [tiered]\n"
	if strings.Count(cfg, pipeline) != 1 || strings.Count(cfg, "\nexporters:\n") != 1 {
		t.Fatalf("config/default.yaml no longer has one OTLP logs pipeline exporting to [tiered]:\n%s", cfg)
	}
	cfg = strings.Replace(cfg, pipeline, strings.Replace(pipeline, "[tiered]", "[tiered, otlphttp/backend]", 1), 1)
	cfg = strings.Replace(cfg, "\nexporters:\n", "\nexporters:\n  otlphttp/backend:\n    endpoint: "+url+"\n    compression: none\n", 1)
	path := filepath.Join(t.TempDir(), "collector.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkEvaluation checks that the `runagain test` run newRun was evaluated with label ("pass"
// or "fail") in a gen_ai.evaluation.result event that reached the other back end through the
// collector, parented to the run's root span ("runagain test CASE"), naming the dataset and
// explaining the result with want; and that `runagain show` lists the same event under that span.
func checkEvaluation(t *testing.T, col *collectortest.Collector, backend *logsBackend, newRun, dataset, caseID, label, want string) {
	t.Helper()
	out, errOut, code := dsCLI(t, col, nil, "show", "--json", newRun)
	var run struct {
		Spans []struct {
			ID       string `json:"span_id"`
			Parent   string `json:"parent_span_id"`
			SpanName string `json:"name"`
			Logs     []struct {
				EventName  string         `json:"event_name"`
				Attributes map[string]any `json:"attributes"`
			} `json:"logs"`
		} `json:"spans"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &run) != nil {
		t.Fatalf("show --json %s: exit %d\n%s%s", newRun, code, out, errOut)
	}
	root := ""
	var shown map[string]any
	for _, s := range run.Spans {
		if s.SpanName == "runagain test "+caseID && s.Parent == "" {
			root = s.ID
			for _, l := range s.Logs {
				if l.EventName == "gen_ai.evaluation.result" {
					shown = l.Attributes
				}
			}
		}
	}
	if root == "" {
		t.Fatalf("run %s has no root span \"runagain test %s\":\n%s", newRun, caseID, out)
	}
	lr := backend.evaluation(t, newRun)
	if lr.SpanID().String() != root {
		t.Errorf("evaluation event's span id %s, want the test run's root span %s", lr.SpanID(), root)
	}
	a := lr.Attributes().AsRaw()
	if a["gen_ai.evaluation.name"] != dataset || a["gen_ai.evaluation.score.label"] != label || a["runagain.test.case"] != caseID {
		t.Errorf("evaluation event of %s at the other back end: %v (want name %s, label %s, case %s)", newRun, a, dataset, label, caseID)
	}
	if s, _ := a["gen_ai.evaluation.explanation"].(string); !strings.Contains(s, want) {
		t.Errorf("evaluation explanation %q lacks %q", s, want)
	}
	if shown == nil || shown["gen_ai.evaluation.score.label"] != label {
		t.Errorf("runagain show %s does not list the gen_ai.evaluation.result event (label %s) under its root span:\n%s", newRun, label, out)
	}
	t.Logf("gen_ai.evaluation.result of %s at the other back end: %v", newRun, a)
}
