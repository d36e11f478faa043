// SPDX-License-Identifier: Apache-2.0

package deploytest

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ruleCase is one scenario for one alert: series loaded into a Prometheus test storage (promqltest
// "load" syntax), the time the alert's expression is evaluated at, and whether it must fire.
type ruleCase struct {
	alert string
	name  string
	load  string
	at    time.Duration
	fires bool
}

var ruleCases = []ruleCase{
	{"RunagainAgentAlert", "a loop alert was raised", `load 1m
  runagain_alerts_total{alert_kind="loop",gen_ai_agent_name="support-bot"} 0 0 0 0 0 0 0 0 1 1 1`, 10 * time.Minute, true},
	// agent_guard creates a series on its first alert, with value 1: increase() alone misses it.
	{"RunagainAgentAlert", "first alert of a new series", `load 1m
  runagain_alerts_total{alert_kind="cost_spike",gen_ai_agent_name="support-bot"} _ _ _ _ _ _ _ _ _ 1 1`, 10 * time.Minute, true},
	{"RunagainAgentAlert", "the last alert was 5 minutes ago", `load 1m
  runagain_alerts_total{alert_kind="loop",gen_ai_agent_name="support-bot"} 0 0 0 0 0 1 1 1 1 1 1`, 10 * time.Minute, false},
	{"RunagainAgentAlert", "no new alert in 5 minutes", `load 1m
  runagain_alerts_total{alert_kind="loop",gen_ai_agent_name="support-bot"} 3 3 3 3 3 3 3 3 3 3 3`, 10 * time.Minute, false},
	{"RunagainAgentAlertStorm", "40 loop alerts in 15 minutes", `load 1m
  runagain_alerts_total{alert_kind="loop"} 0+3x20`, 20 * time.Minute, true},
	{"RunagainAgentAlertStorm", "a new series already at 25", `load 1m
  runagain_alerts_total{alert_kind="tool_error_spike"} _x15 25 25 25 25 25 25`, 20 * time.Minute, true},
	{"RunagainAgentAlertStorm", "a few alerts", `load 1m
  runagain_alerts_total{alert_kind="loop"} 0 0 0 0 0 0 0 0 1 1 2 2 2 2 2 2 3 3 3 3 3`, 20 * time.Minute, false},
	{"RunagainCostBudget", "1 USD a minute (1440 USD/day)", `load 1m
  runagain_cost_USD_total{gen_ai_request_model="gpt-4o"} 0+1x90`, 90 * time.Minute, true},
	{"RunagainCostBudget", "0.1 USD a minute (144 USD/day)", `load 1m
  runagain_cost_USD_total{gen_ai_request_model="gpt-4o"} 0+0.1x90`, 90 * time.Minute, false},
	// 26 hours at 5-minute resolution: 1 USD per 5 minutes (12 USD/hour) all along, and in the last
	// hour 5 USD per 5 minutes (60 USD/hour).
	{"RunagainCostSpike", "this hour 5x the same hour yesterday", `load 5m
  runagain_cost_USD_total 0+1x300 305+5x12`, 26 * time.Hour, true},
	{"RunagainCostSpike", "same spend as yesterday", `load 5m
  runagain_cost_USD_total 0+1x312`, 26 * time.Hour, false},
	{"RunagainCostSpike", "tripled but tiny (under 5 USD)", `load 5m
  runagain_cost_USD_total 0+0.01x300 3.05+0.05x12`, 26 * time.Hour, false},
	{"RunagainRefusingSpans", "memory_limiter refusing", `load 1m
  otelcol_receiver_refused_spans_total{receiver="otlp",transport="grpc"} 0+50x20`, 20 * time.Minute, true},
	{"RunagainRefusingSpans", "nothing refused", `load 1m
  otelcol_receiver_refused_spans_total{receiver="otlp",transport="grpc"} 0x20`, 20 * time.Minute, false},
	{"RunagainExportFailing", "a tier fails", `load 1m
  otelcol_exporter_send_failed_spans_total{exporter="tiered"} 0+100x20`, 20 * time.Minute, true},
	{"RunagainExportFailing", "no failures", `load 1m
  otelcol_exporter_send_failed_spans_total{exporter="tiered"} 7x20`, 20 * time.Minute, false},
	{"RunagainQueueFilling", "queue 90% full", `load 1m
  otelcol_exporter_queue_size{exporter="tiered",data_type="traces"} 900x10
  otelcol_exporter_queue_capacity{exporter="tiered",data_type="traces"} 1000x10`, 10 * time.Minute, true},
	{"RunagainQueueFilling", "queue 10% full", `load 1m
  otelcol_exporter_queue_size{exporter="tiered",data_type="traces"} 100x10
  otelcol_exporter_queue_capacity{exporter="tiered",data_type="traces"} 1000x10`, 10 * time.Minute, false},
	{"RunagainNoSpans", "nothing accepted", `load 1m
  otelcol_receiver_accepted_spans_total{receiver="otlp",transport="grpc"} 500x40`, 40 * time.Minute, true},
	{"RunagainNoSpans", "spans flowing", `load 1m
  otelcol_receiver_accepted_spans_total{receiver="otlp",transport="grpc"} 0+100x40`, 40 * time.Minute, false},
	{"RunagainPayloadOffloadFailing", "object store down", `load 1m
  otelcol_processor_payload_offload_failures_total 0+4x20`, 20 * time.Minute, true},
	{"RunagainPayloadOffloadFailing", "object store fine", `load 1m
  otelcol_processor_payload_offload_failures_total 2x20`, 20 * time.Minute, false},
	// The pattern alert kinds page through the runagain-patterns group, not as agent alerts.
	{"RunagainAgentAlert", "a pattern_new alert", `load 1m
  runagain_alerts_total{alert_kind="pattern_new",gen_ai_agent_name="support-bot"} 0 0 0 0 0 0 0 0 1 1 1`, 10 * time.Minute, false},
	{"RunagainNewFailurePattern", "a new pattern 2 minutes ago", `load 1m
  runagain_patterns_new_total 0 0 0 0 0 0 0 0 1 1 1`, 10 * time.Minute, true},
	// The watcher's counter appears at 0 at start; a restart after new patterns starts it again.
	{"RunagainNewFailurePattern", "first sample already 1 after a restart", `load 1m
  runagain_patterns_new_total _ _ _ _ _ _ _ _ _ 1 1`, 10 * time.Minute, true},
	{"RunagainNewFailurePattern", "no new pattern for 10 minutes", `load 1m
  runagain_patterns_new_total 4x20`, 20 * time.Minute, false},
	{"RunagainPatternRateJump", "a rate jump alert", `load 1m
  runagain_alerts_total{alert_kind="pattern_rate_jump"} 0 0 0 0 0 0 0 0 1 1 1`, 10 * time.Minute, true},
	{"RunagainPatternRateJump", "only pattern_new alerts", `load 1m
  runagain_alerts_total{alert_kind="pattern_new"} 0 0 0 0 0 0 0 0 1 1 1
  runagain_alerts_total{alert_kind="pattern_rate_jump"} 2x10`, 10 * time.Minute, false},
	{"RunagainPatternDominates", "one pattern has 60 of 80 failing runs an hour", `load 1m
  runagain_pattern_runs_total{pattern="p1"} 0+1x120
  runagain_pattern_runs_total{pattern="p2"} 0+0.33333x120`, 2 * time.Hour, true},
	{"RunagainPatternDominates", "two patterns share evenly", `load 1m
  runagain_pattern_runs_total{pattern="p1"} 0+1x120
  runagain_pattern_runs_total{pattern="p2"} 0+1x120`, 2 * time.Hour, false},
	{"RunagainPatternDominates", "over half but only 10 runs an hour", `load 1m
  runagain_pattern_runs_total{pattern="p1"} 0+0.16667x120
  runagain_pattern_runs_total{pattern="p2"} 0+0.03333x120`, 2 * time.Hour, false},
	{"RunagainPatternSeriesOverflow", "runs in the overflow series for 2 hours", `load 5m
  runagain_pattern_runs_total{pattern="p1"} 0+1x40
  runagain_pattern_runs_total{otel_metric_overflow="true"} 0+2x40`, 3 * time.Hour, true},
	{"RunagainPatternSeriesOverflow", "no overflow", `load 5m
  runagain_pattern_runs_total{pattern="p1"} 0+1x40`, 3 * time.Hour, false},
}

// TestAlertRulesFire evaluates every alert's expression with Prometheus's own PromQL engine over
// test series: each alert fires in a scenario where it should and stays quiet in one where it
// should not. Every alert of the rule file must have both kinds of scenario here.
func TestAlertRulesFire(t *testing.T) {
	groups, errs := rulefmt.ParseFile(filepath.Join(repoRoot(t), rulesFile), false, model.UTF8Validation, promParser, slog.New(slog.DiscardHandler))
	require.Empty(t, errs)
	exprs := map[string]string{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				exprs[r.Alert] = r.Expr
			}
		}
	}
	covered := map[string]map[bool]bool{}
	engine := promqltest.NewTestEngine(t, false, 5*time.Minute, promqltest.DefaultMaxSamplesPerQuery)
	for _, c := range ruleCases {
		t.Run(c.alert+"/"+c.name, func(t *testing.T) {
			expr, ok := exprs[c.alert]
			require.True(t, ok, "no alert %s in %s", c.alert, rulesFile)
			if covered[c.alert] == nil {
				covered[c.alert] = map[bool]bool{}
			}
			covered[c.alert][c.fires] = true
			storage := promqltest.LoadedStorage(t, c.load)
			q, err := engine.NewInstantQuery(context.Background(), storage, nil, expr, time.Unix(0, 0).Add(c.at))
			require.NoError(t, err)
			defer q.Close()
			res := q.Exec(context.Background())
			require.NoError(t, res.Err)
			vec, err := res.Vector()
			require.NoError(t, err)
			if c.fires {
				assert.NotEmpty(t, vec, "%s should fire: %s", c.alert, expr)
			} else {
				assert.Empty(t, vec, "%s should not fire: %s = %v", c.alert, expr, vec)
			}
		})
	}
	for alert := range exprs {
		assert.True(t, covered[alert][true] && covered[alert][false], "alert %s needs a firing and a quiet scenario in ruleCases", alert)
	}
}
