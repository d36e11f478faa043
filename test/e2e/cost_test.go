// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestOneCostEverywhere: the collector runs on config/default.yaml rewritten to a data directory
// of its own (no ${env:RUNAGAIN_DATA_DIR}) with a price override for gpt-4.1 in its
// runagain_storage extension (2.5 and 12.5 USD per million input and output tokens; the embedded
// table says 2 and 8). One LLM span (1000 input, 500 output tokens) costs, by hand,
// 1000*2.5/1e6 + 500*12.5/1e6 = 0.00875 USD. That figure is what agent_guard's runagain_cost
// counter shows on Prometheus, what the warm summary stores, and what `runagain sessions --json`
// and `runagain show` print with the CLI given only --config (no data-dir flag or variable, run
// from another directory).
func TestOneCostEverywhere(t *testing.T) {
	const want = 1000*2.5/1e6 + 500*12.5/1e6
	dataDir := filepath.Join(t.TempDir(), "elsewhere")
	body, err := os.ReadFile(filepath.Join(collectortest.RepoRoot(t), "config", "default.yaml"))
	require.NoError(t, err)
	cfg := strings.ReplaceAll(string(body), "${env:RUNAGAIN_DATA_DIR:-./data}", dataDir)
	require.NotEqual(t, string(body), cfg, "default.yaml no longer places its files under ${env:RUNAGAIN_DATA_DIR:-./data}")
	override := `  runagain_storage:
    pricing:
      models:
        - provider: openai
          model: gpt-4.1
          input_mtok: 2.5
          output_mtok: 12.5
`
	cfg = strings.Replace(cfg, "  runagain_storage:\n", override, 1)
	require.Contains(t, cfg, "input_mtok: 2.5", "default.yaml has no runagain_storage extension to add the override to")
	cfgPath := filepath.Join(t.TempDir(), "collector.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))

	promPort := collectortest.FreePort(t)
	c := collectortest.Start(t, collectortest.Options{Config: cfgPath,
		Env: []string{"RUNAGAIN_PROMETHEUS_ENDPOINT=127.0.0.1:" + strconv.Itoa(promPort)}})

	traceID := pcommon.TraceID{0xc0, 0x57, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "cost-test")
	sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(traceID)
	sp.SetSpanID(pcommon.SpanID{0xc0, 0x57, 0, 0, 0, 0, 0, 1})
	sp.SetName("chat gpt-4.1")
	sp.SetKind(ptrace.SpanKindClient)
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(1500 * time.Millisecond)))
	a := sp.Attributes()
	a.PutStr("gen_ai.operation.name", "chat")
	a.PutStr("gen_ai.provider.name", "openai")
	a.PutStr("gen_ai.request.model", "gpt-4.1")
	a.PutInt("gen_ai.usage.input_tokens", 1000)
	a.PutInt("gen_ai.usage.output_tokens", 500)
	conn, err := grpc.NewClient(c.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	_, err = ptraceotlp.NewGRPCClient(conn).Export(context.Background(), ptraceotlp.NewExportRequestFromTraces(td))
	require.NoError(t, err)

	// The CLI with only --config: a clean environment (no RUNAGAIN_*), another working directory.
	runCLI := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(collectortest.BinDir(t), "runagain"), append([]string{"--config", cfgPath}, args...)...)
		cmd.Dir = t.TempDir()
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "RUNAGAIN_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		require.NoError(t, cmd.Run(), "runagain %v: %s", args, errb.String())
		return out.String()
	}

	type row struct {
		TraceID  string  `json:"trace_id"`
		CostUSD  float64 `json:"cost_usd"`
		Unpriced int64   `json:"unpriced"`
		Tier     string  `json:"tier"`
	}
	var rows []row
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		rows = nil
		require.NoError(t, json.Unmarshal([]byte(runCLI("sessions", "--json")), &rows))
		if len(rows) == 1 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Len(t, rows, 1, "the run in `runagain sessions --json` (data directory %s)", dataDir)
	assert.Equal(t, traceID.String(), rows[0].TraceID)
	assert.Equal(t, "hot", rows[0].Tier)
	assert.InDelta(t, want, rows[0].CostUSD, 1e-12, "sessions --json cost_usd")
	assert.Zero(t, rows[0].Unpriced)
	assert.Contains(t, runCLI("sessions"), "$0.008750", "the COST column of `runagain sessions`")

	var show struct {
		CostUSD float64 `json:"cost_usd"`
		Spans   []struct {
			CostUSD *float64 `json:"cost_usd"`
		} `json:"spans"`
	}
	require.NoError(t, json.Unmarshal([]byte(runCLI("show", "--json", traceID.String())), &show))
	require.Len(t, show.Spans, 1)
	require.NotNil(t, show.Spans[0].CostUSD, "show --json gives the LLM call's cost")
	assert.InDelta(t, want, *show.Spans[0].CostUSD, 1e-12)
	assert.InDelta(t, want, show.CostUSD, 1e-12)
	text := runCLI("show", traceID.String())
	assert.Contains(t, text, "model gpt-4.1  tokens in 1000 out 500  cost $0.008750", "the LLM step's line in `runagain show`:\n%s", text)

	// agent_guard's counter on Prometheus: the same figure.
	var line string
	deadline = time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && line == "" {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(promPort) + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "runagain_cost_USD_total{") && strings.Contains(l, `gen_ai_request_model="gpt-4.1"`) {
					line = l
				}
			}
		}
		if line == "" {
			time.Sleep(200 * time.Millisecond)
		}
	}
	require.NotEmpty(t, line, "no runagain_cost_USD_total series for gpt-4.1 on Prometheus")
	fields := strings.Fields(line)
	// OpenMetrics: `name{labels} value [# exemplar]`; the value follows the label set.
	var value float64
	for i, f := range fields {
		if strings.HasSuffix(f, "}") && i+1 < len(fields) {
			value, err = strconv.ParseFloat(fields[i+1], 64)
			require.NoError(t, err, line)
			break
		}
	}
	assert.InDelta(t, want, value, 1e-12, "Prometheus: %s", line)

	// The warm summary, written by the same extension, holds it too.
	deadline = time.Now().Add(30 * time.Second)
	var warmCost float64
	for time.Now().Before(deadline) {
		w, err := sqlitestore.OpenWarm(filepath.Join(dataDir, "warm.db"), sqlitestore.Options{ReadOnly: true})
		if err == nil {
			err = w.SQL().QueryRow(`SELECT COALESCE(SUM(cost_usd), 0) FROM span_summaries WHERE trace_id = ?`, traceID.String()).Scan(&warmCost)
			w.Close()
		}
		if err == nil && warmCost != 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	assert.InDelta(t, want, warmCost, 1e-12, "warm span_summaries.cost_usd")
	assert.False(t, math.IsNaN(warmCost))
}
