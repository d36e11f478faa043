// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestFrameworkAgentsJoinUnderProxyRecord: the Vercel AI SDK and LangGraph JS agents (real npm
// packages, test/clients/vercel-ai and test/clients/langgraph), whose @opentelemetry/sdk-node
// ignores TRACEPARENT, run once on their own and once under `runagain proxy --record`. Recorded,
// each is still ONE run: its two chat exchanges are placed under the framework's LLM call spans
// (Vercel's ai.generateText.doGenerate, LangGraph's ChatOpenAI) and the proxy's root under the
// agent's root, nothing orphaned. The two runs agree on everything the read model counts: the
// same LLM and tool calls, the same tokens and cost, and the same messages at every step, which
// are what the upstream logged receiving and returning.
func TestFrameworkAgentsJoinUnderProxyRecord(t *testing.T) {
	for _, tc := range []struct {
		client    string
		modules   func(t *testing.T) (node, modules string)
		responses []string
		spans     int  // the agent's own spans
		withIDs   bool // the instrumentation records tool_call_ids (assertStepsAreUpstreamLog)
	}{
		{"vercel-ai", vercelAIModules, vercelAIResponses, 5, true},
		{"langgraph", func(t *testing.T) (string, string) {
			return npmClientModules(t, "RUNAGAIN_LANGGRAPH_MODULES", "runagain-langgraph",
				"@langchain/langgraph", "@langchain/openai", "@arizeai/openinference-instrumentation-langchain")
		}, langGraphResponses, 11, false},
	} {
		t.Run(tc.client, func(t *testing.T) {
			node, modules := tc.modules(t)
			c := collectortest.Start(t, collectortest.Options{})

			alone := httptest.NewServer(&loggingOpenAI{responses: tc.responses})
			defer alone.Close()
			solo := runNodeAgent(t, node, modules, tc.client, alone.URL, c)
			waitShow(t, c, solo, tc.spans, 0)

			upstream := &loggingOpenAI{responses: tc.responses}
			srv := httptest.NewServer(upstream)
			defer srv.Close()
			env := []string{"NODE_PATH=" + modules, "OTEL_EXPORTER_OTLP_ENDPOINT=http://" + c.HTTP, "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none"}
			agent := filepath.Join(collectortest.RepoRoot(t), "test", "clients", tc.client, "agent.js")
			out, errOut, err := cliEnv(t, c, env, "proxy", "--record", "--endpoint", c.GRPC, "--listen", "127.0.0.1:0",
				"--route", "openai="+srv.URL, "--", node, agent)
			require.NoError(t, err, "%s\n%s", out, errOut)
			t.Logf("proxy --record stderr:\n%s", errOut)
			require.Len(t, upstream.received, 2)
			joined := strings.TrimSpace(out)
			require.Len(t, joined, 32, "the agent prints its trace id")
			assert.Regexp(t, regexp.MustCompile(`runagain proxy: joined the agent's trace `+joined+` \(by resource\): 2 exchanges placed under the calls they belong to \(inferred: time, model(, body)?\), 0 under the proxy's root`), errOut)
			assert.Contains(t, errOut, "run trace "+joined)

			// The agent's spans, 2 exchanges and the proxy's root, all in one run.
			waitShow(t, c, joined, tc.spans+3, 0)
			var rows []store.RunSummary
			require.NoError(t, json.Unmarshal([]byte(cli(t, c, "sessions", "--json")), &rows))
			require.Len(t, rows, 2, "two executions, two runs: %+v", rows)
			byTrace := map[string]store.RunSummary{}
			for _, r := range rows {
				byTrace[r.TraceID] = r
				assert.Zero(t, r.Orphans, "run %s", r.TraceID)
			}
			assert.Positive(t, byTrace[solo].InputTokens)
			assert.Equal(t, byTrace[solo].InputTokens, byTrace[joined].InputTokens)
			assert.Equal(t, byTrace[solo].OutputTokens, byTrace[joined].OutputTokens)
			assert.InDelta(t, byTrace[solo].CostUSD, byTrace[joined].CostUSD, 1e-12)
			assertWarmIndexAsHot(t, c.DataDir, byTrace[joined])

			soloSteps, soloLLM, _ := readModelSteps(t, c, solo)
			steps, llm, covered := readModelSteps(t, c, joined)
			assert.Equal(t, 2, soloLLM)
			assert.Equal(t, soloLLM, llm, "LLM calls, counted once")
			assert.Equal(t, soloSteps, steps, "steps")
			assert.Equal(t, 2, covered, "each exchange is covered by the framework's LLM call span")
			assertStepsAreUpstreamLog(t, c, joined, upstream, tc.withIDs)

			// Rerun with the model changed: one run again, whose LLM steps are the edited
			// exchanges (the framework's spans name the model the agent thought it asked for),
			// priced at the model that answered.
			live := &loggingOpenAI{responses: tc.responses, echoModel: true}
			lsrv := httptest.NewServer(live)
			defer lsrv.Close()
			out, errOut, err = cliEnv(t, c, env, "rerun", joined, "--set", "model=gpt-4.1", "--listen", "127.0.0.1:0",
				"--route", "openai="+lsrv.URL, "--", node, agent)
			require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", out, errOut)
			t.Logf("rerun stderr:\n%s", errOut)
			require.Len(t, live.received, 2)
			rerun := strings.TrimSpace(out)
			require.Len(t, rerun, 32, "the agent prints its trace id")
			waitShow(t, c, rerun, tc.spans+3, 0)
			rows = nil
			require.NoError(t, json.Unmarshal([]byte(cli(t, c, "sessions", "--json")), &rows))
			require.Len(t, rows, 3, "record alone, record under the proxy, rerun: %+v", rows)
			var got store.RunSummary
			for _, r := range rows {
				if r.TraceID == rerun {
					got = r
				}
			}
			assert.Equal(t, byTrace[joined].InputTokens, got.InputTokens, "each call once")
			assert.Equal(t, byTrace[joined].OutputTokens, got.OutputTokens)
			want := 0.0
			for _, r := range live.returned {
				u := r["usage"].(map[string]any)
				a := pcommon.NewMap()
				a.PutStr("gen_ai.response.model", "gpt-4.1")
				cost := pricing.DefaultPrices().UsageCost(genai.Usage{Input: int64(u["prompt_tokens"].(float64)),
					Output: int64(u["completion_tokens"].(float64))}, a, pcommon.NewTimestampFromTime(time.Now()))
				require.False(t, cost.Unpriced)
				want += cost.USD
			}
			assert.InDelta(t, want, got.CostUSD, 1e-9, "priced at gpt-4.1, as the upstream answered")
			assert.Greater(t, got.CostUSD, byTrace[joined].CostUSD)
			assert.Contains(t, got.Models, "gpt-4.1")
			var shown struct {
				Spans []struct {
					LLMStep int    `json:"llm_step"`
					Model   string `json:"model"`
				} `json:"spans"`
			}
			require.NoError(t, json.Unmarshal([]byte(cli(t, c, "show", "--json", rerun)), &shown))
			var models []string
			for _, s := range shown.Spans {
				if s.LLMStep > 0 {
					models = append(models, s.Model)
				}
			}
			assert.Equal(t, []string{"gpt-4.1", "gpt-4.1"}, models, "the LLM steps are the calls as sent")
			d := cli(t, c, "diff", joined, rerun)
			assert.Contains(t, d, "b is a rerun of a with: model=gpt-4.1")
			assert.Regexp(t, `gpt-4o-mini\S* -> gpt-4\.1`, d, "the diff names the model asked on both sides")
		})
	}
}

// readModelSteps counts what `show --json` says the read model made of a run: its steps, its LLM
// steps, and the spans covered by another (an exchange that is an instrumented call's fixture).
func readModelSteps(t *testing.T, c *collectortest.Collector, trace string) (steps, llm, covered int) {
	t.Helper()
	var tree struct {
		Spans []struct {
			Step      int    `json:"step"`
			LLMStep   int    `json:"llm_step"`
			CoveredBy string `json:"covered_by"`
		} `json:"spans"`
	}
	require.NoError(t, json.Unmarshal([]byte(cli(t, c, "show", "--json", trace)), &tree))
	for _, s := range tree.Spans {
		if s.Step > 0 {
			steps++
		}
		if s.LLMStep > 0 {
			llm++
		}
		if s.CoveredBy != "" {
			covered++
		}
	}
	return steps, llm, covered
}

// assertWarmIndexAsHot waits for the warm SQLite run index (written from the warm tier's
// persistent sending queue, config/default.yaml) to hold every span of hot's run, then checks it
// counts the run's tokens and cost as the hot tier does: a derived exchange covered by an
// instrumented call counts once there too.
func assertWarmIndexAsHot(t *testing.T, dataDir string, hot store.RunSummary) {
	t.Helper()
	var warm store.RunSummary
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		w, err := sqlitestore.OpenWarm(filepath.Join(dataDir, "warm.db"), sqlitestore.Options{ReadOnly: true})
		if err == nil {
			var rows []store.RunSummary
			rows, err = w.Runs(context.Background(), store.RunFilter{SessionID: hot.SessionID})
			w.Close()
			for _, r := range rows {
				if r.TraceID == hot.TraceID {
					warm = r
				}
			}
		}
		if err == nil && warm.Spans == hot.Spans {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Equal(t, hot.Spans, warm.Spans, "the warm run index holds the run's every span")
	assert.Equal(t, hot.InputTokens, warm.InputTokens, "warm input tokens")
	assert.Equal(t, hot.OutputTokens, warm.OutputTokens, "warm output tokens")
	assert.InDelta(t, hot.CostUSD, warm.CostUSD, 1e-12, "warm cost")
}
