// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestRunawaySessionAlertVisible imports a generated runaway session (the same tool with the
// same arguments 20 times) into the collector on config/default.yaml: the loop alert shows on the
// Prometheus endpoint, and `runagain show` lists the alert record beside the run.
func TestRunawaySessionAlertVisible(t *testing.T) {
	promPort := collectortest.FreePort(t)
	c := collectortest.Start(t, collectortest.Options{Env: []string{"RUNAGAIN_PROMETHEUS_ENDPOINT=127.0.0.1:" + itoa(promPort)}})
	session := filepath.Join(collectortest.RepoRoot(t), "connector", "agentguardconnector", "testdata", "runaway_session.json")
	cli(t, c, "import", "--endpoint", c.GRPC, session)
	rows := waitForSpans(t, c, 41)
	require.Len(t, rows, 1)

	var metrics string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://127.0.0.1:" + itoa(promPort) + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			metrics = string(b)
			if strings.Contains(metrics, `runagain_alerts_total{alert_kind="loop"`) {
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	var alertLine string
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, `runagain_alerts_total{alert_kind="loop"`) {
			alertLine = l
		}
	}
	require.NotEmpty(t, alertLine, "no loop alert on the Prometheus endpoint:\n%s", metrics)
	assert.True(t, strings.HasSuffix(alertLine, " 1"), "exactly one loop alert: %s", alertLine)
	assert.Contains(t, metrics, "runagain_cost_USD_total")
	// agent_guard's default metric_conventions (genai-0.1) names LLM token counters this way.
	assert.Contains(t, metrics, "gen_ai_client_inference_usage_input_tokens_total")

	var show struct {
		Logs []struct {
			EventName  string         `json:"event_name"`
			SpanID     string         `json:"span_id"`
			Attributes map[string]any `json:"attributes"`
		} `json:"logs"`
	}
	deadline = time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		require.NoError(t, json.Unmarshal([]byte(cli(t, c, "show", "--json", rows[0].TraceID)), &show))
		if len(show.Logs) > 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Len(t, show.Logs, 1, "one alert record beside the run")
	assert.Equal(t, "runagain.alert", show.Logs[0].EventName)
	assert.Equal(t, "loop", show.Logs[0].Attributes["alert.kind"])
	assert.NotEmpty(t, show.Logs[0].SpanID)
	assert.Contains(t, cli(t, c, "show", rows[0].TraceID), "records pointing at this run (1)")
}

func itoa(i int) string { return strconv.Itoa(i) }
