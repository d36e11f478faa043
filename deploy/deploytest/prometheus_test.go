// SPDX-License-Identifier: Apache-2.0

package deploytest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"gopkg.in/yaml.v3"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

const (
	rulesFile     = "deploy/prometheus/runagain-rules.yaml"
	dashboardFile = "deploy/grafana/runagain-dashboard.json"
)

var promParser = parser.NewParser(parser.Options{})

// query is one PromQL expression shipped in the rules or the dashboard.
type query struct {
	where string // file and rule/panel
	expr  string
}

func ruleQueries(t *testing.T) []query {
	t.Helper()
	groups, errs := rulefmt.ParseFile(filepath.Join(repoRoot(t), rulesFile), false, model.UTF8Validation, promParser, slog.New(slog.DiscardHandler))
	require.Empty(t, errs, "%s does not parse", rulesFile)
	var out []query
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			out = append(out, query{where: fmt.Sprintf("%s group %s rule %s", rulesFile, g.Name, name), expr: r.Expr})
		}
	}
	return out
}

// grafanaVars are the dashboard's interval variables, replaced by durations before parsing.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

func dashboardQueries(t *testing.T) []query {
	t.Helper()
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(readFile(t, dashboardFile), &dash))
	var out []query
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			out = append(out, query{where: fmt.Sprintf("%s panel %q", dashboardFile, p.Title), expr: grafanaVars.Replace(tg.Expr)})
		}
	}
	return out
}

// TestAlertRulesParse: the rule file passes Prometheus's own rule-file parser (unknown fields
// rejected, every expression and template checked), holds the alerts the issue asks for, and
// every dashboard query is valid PromQL.
func TestAlertRulesParse(t *testing.T) {
	rules := ruleQueries(t)
	require.NotEmpty(t, rules)
	all := ""
	for _, q := range rules {
		all += q.expr + "\n"
	}
	assert.Contains(t, all, "runagain_alerts_total", "an alert on runagain.alerts")
	assert.Contains(t, all, "runagain_cost_USD_total", "an alert on cost")
	assert.Contains(t, all, "otelcol_exporter_send_failed_spans_total", "an alert on pipeline health")

	// The parser really rejects a broken rule file (so the check above means something).
	broken := strings.Replace(string(readFile(t, rulesFile)), "expr: sum(rate(runagain_cost_USD_total[1h])) * 86400 > 500", "expr: sum(rate(runagain_cost_USD_total[1h]) * 86400 > 500", 1)
	require.NotEqual(t, string(readFile(t, rulesFile)), broken)
	_, errs := rulefmt.Parse([]byte(broken), false, model.UTF8Validation, promParser, slog.New(slog.DiscardHandler))
	assert.NotEmpty(t, errs, "an unbalanced parenthesis must not parse")

	dq := dashboardQueries(t)
	require.NotEmpty(t, dq)
	for _, q := range dq {
		_, err := promParser.ParseExpr(q.expr)
		assert.NoError(t, err, q.where)
	}
}

// selectorUse is what one query needs from the exposed metrics.
type selectorUse struct {
	metrics []string            // metric names selected
	labels  map[string][]string // label name -> metrics it must appear on (matchers and by/without groupings)
}

// promTargetLabels are added by the Prometheus server to every scraped series, not by the target.
var promTargetLabels = map[string]bool{"job": true, "instance": true}

func analyse(t *testing.T, q query) selectorUse {
	t.Helper()
	expr, err := promParser.ParseExpr(q.expr)
	require.NoError(t, err, q.where)
	use := selectorUse{labels: map[string][]string{}}
	selected := func(n parser.Node) []string {
		var names []string
		parser.Inspect(n, func(c parser.Node, _ []parser.Node) error {
			if vs, ok := c.(*parser.VectorSelector); ok && vs.Name != "" {
				names = append(names, vs.Name)
			}
			return nil
		})
		return names
	}
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		switch v := n.(type) {
		case *parser.VectorSelector:
			require.NotEmpty(t, v.Name, "%s: selector without a metric name: %s", q.where, v)
			use.metrics = append(use.metrics, v.Name)
			for _, m := range v.LabelMatchers {
				if m.Name != model.MetricNameLabel && !promTargetLabels[m.Name] {
					use.labels[m.Name] = append(use.labels[m.Name], v.Name)
				}
			}
		case *parser.AggregateExpr:
			for _, l := range v.Grouping {
				if !promTargetLabels[l] {
					use.labels[l] = append(use.labels[l], selected(v.Expr)...)
				}
			}
		}
		return nil
	})
	return use
}

// exposed is what a running collector exposes: metric name -> label names seen on it.
type exposed map[string]map[string]bool

func scrape(t *testing.T, url string, into exposed) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, url)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err, "%s exposition:\n%s", url, body)
	for name, f := range fams {
		names := []string{name}
		switch f.GetType().String() {
		case "HISTOGRAM":
			names = []string{name + "_bucket", name + "_sum", name + "_count"}
		case "SUMMARY":
			names = append(names, name+"_sum", name+"_count")
		}
		for _, n := range names {
			if into[n] == nil {
				into[n] = map[string]bool{}
			}
			for _, m := range f.Metric {
				for _, l := range m.Label {
					into[n][l.GetName()] = true
				}
			}
			if strings.HasSuffix(n, "_bucket") {
				into[n]["le"] = true
			}
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (e exposed) names() []string {
	var out []string
	for n := range e {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// missing lists what the queries need that e lacks.
func (e exposed) missing(t *testing.T, qs []query) []string {
	var out []string
	for _, q := range qs {
		use := analyse(t, q)
		for _, m := range use.metrics {
			if e[m] == nil {
				out = append(out, fmt.Sprintf("%s: metric %s", q.where, m))
			}
		}
		for l, ms := range use.labels {
			found := false
			for _, m := range ms {
				found = found || e[m][l]
			}
			if !found {
				out = append(out, fmt.Sprintf("%s: label %s on %v", q.where, l, ms))
			}
		}
	}
	sort.Strings(out)
	return out
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			v2 := v
			return v2
		}
	}
	return ""
}

// gatewayPrometheusExporter is gateway.yaml's prometheus exporter block, so the test translates
// metric names with exactly the gateway's settings.
func gatewayPrometheusExporter(t *testing.T) map[string]any {
	t.Helper()
	var gw struct {
		Exporters map[string]map[string]any `yaml:"exporters"`
	}
	require.NoError(t, yaml.Unmarshal(readFile(t, "config/gateway.yaml"), &gw))
	p, ok := gw.Exporters["prometheus"]
	require.True(t, ok, "gateway.yaml has no prometheus exporter")
	out := map[string]any{}
	for k, v := range p {
		out[k] = v
	}
	out["endpoint"] = "${env:RUNAGAIN_PROMETHEUS_ENDPOINT}"
	return out
}

// gatewayTelemetryMetrics is gateway.yaml's service::telemetry::metrics block (level and the
// Prometheus pull reader with its naming options), with the reader moved to 127.0.0.1 and
// ${env:RUNAGAIN_TELEMETRY_PORT}.
func gatewayTelemetryMetrics(t *testing.T) map[string]any {
	t.Helper()
	var gw struct {
		Service struct {
			Telemetry struct {
				Metrics map[string]any `yaml:"metrics"`
			} `yaml:"telemetry"`
		} `yaml:"service"`
	}
	require.NoError(t, yaml.Unmarshal(readFile(t, "config/gateway.yaml"), &gw))
	m := gw.Service.Telemetry.Metrics
	readers, _ := m["readers"].([]any)
	require.Len(t, readers, 1, "gateway.yaml: one telemetry metrics reader")
	prom, ok := readers[0].(map[string]any)["pull"].(map[string]any)["exporter"].(map[string]any)["prometheus"].(map[string]any)
	require.True(t, ok, "gateway.yaml: the telemetry reader is a Prometheus pull exporter")
	prom["host"] = "127.0.0.1"
	prom["port"] = "${env:RUNAGAIN_TELEMETRY_PORT}"
	return m
}

// runawaySession is one agent run that loops: the same tool with the same arguments 20 times,
// each after an LLM call that stops at the token limit, all in one session; the last LLM call uses
// a model no price table knows.
func runawaySession() ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "deploytest-agent")
	ss := rs.ScopeSpans().AppendEmpty()
	traceID := pcommon.TraceID([16]byte{0xde, 0xb1, 0x0e, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13})
	start := time.Now().Add(-time.Minute)
	root := ss.Spans().AppendEmpty()
	root.SetTraceID(traceID)
	root.SetSpanID(pcommon.SpanID([8]byte{1}))
	root.SetName("invoke_agent support-bot")
	root.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	root.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(50 * time.Second)))
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	root.Attributes().PutStr("gen_ai.agent.name", "support-bot")
	root.Attributes().PutStr("session.id", "deploytest-session")
	for i := 0; i < 20; i++ {
		at := start.Add(time.Duration(i*2) * time.Second)
		model := "gpt-4o"
		if i == 19 {
			model = "in-house-llm-7b" // not in any price table: counted as unpriced
		}
		llm := ss.Spans().AppendEmpty()
		llm.SetTraceID(traceID)
		llm.SetSpanID(pcommon.SpanID([8]byte{2, byte(i)}))
		llm.SetParentSpanID(root.SpanID())
		llm.SetName("chat " + model)
		llm.SetStartTimestamp(pcommon.NewTimestampFromTime(at))
		llm.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(time.Second)))
		a := llm.Attributes()
		a.PutStr("gen_ai.operation.name", "chat")
		a.PutStr("gen_ai.provider.name", "openai")
		a.PutStr("gen_ai.request.model", model)
		a.PutStr("gen_ai.response.model", model)
		a.PutStr("gen_ai.agent.name", "support-bot")
		a.PutStr("session.id", "deploytest-session")
		a.PutInt("gen_ai.usage.input_tokens", 1200)
		a.PutInt("gen_ai.usage.output_tokens", 300)
		a.PutEmptySlice("gen_ai.response.finish_reasons").AppendEmpty().SetStr("length")
		// A conversation large enough to be offloaded (>= 4 KiB), holding an e-mail address to redact.
		a.PutStr("gen_ai.input.messages", fmt.Sprintf(`[{"role":"user","parts":[{"type":"text","content":"Turn %d. I am jane.doe@example.com and want a refund. %s"}]}]`,
			i, strings.Repeat("Please check the refund policy again. ", 150)))

		tool := ss.Spans().AppendEmpty()
		tool.SetTraceID(traceID)
		tool.SetSpanID(pcommon.SpanID([8]byte{3, byte(i)}))
		tool.SetParentSpanID(root.SpanID())
		tool.SetName("execute_tool search")
		tool.SetStartTimestamp(pcommon.NewTimestampFromTime(at.Add(time.Second)))
		tool.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(1500 * time.Millisecond)))
		ta := tool.Attributes()
		ta.PutStr("gen_ai.operation.name", "execute_tool")
		ta.PutStr("gen_ai.tool.name", "search")
		ta.PutStr("gen_ai.tool.call.arguments", `{"query":"refund policy"}`)
		ta.PutStr("gen_ai.agent.name", "support-bot")
		ta.PutStr("session.id", "deploytest-session")
	}
	return td
}

// specMetrics are agent_guard's metrics as issue 5 and connector/agentguardconnector/metrics.go
// define them (name, unit, kind, attributes). They are sent through the real binary's prometheus
// exporter only while the agent_guard connector is not in the binary, to learn the exposed names.
func specMetrics() pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "deploytest-agent")
	sm := rm.ScopeMetrics().AppendEmpty()
	now := pcommon.NewTimestampFromTime(time.Now())
	startTS := pcommon.NewTimestampFromTime(time.Now().Add(-time.Minute))
	sum := func(name, unit string, v float64, attrs map[string]string) {
		m := sm.Metrics().AppendEmpty()
		m.SetName(name)
		m.SetUnit(unit)
		s := m.SetEmptySum()
		s.SetIsMonotonic(true)
		s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		dp := s.DataPoints().AppendEmpty()
		dp.SetStartTimestamp(startTS)
		dp.SetTimestamp(now)
		dp.SetDoubleValue(v)
		for k, val := range attrs {
			dp.Attributes().PutStr(k, val)
		}
	}
	hist := func(name, unit string, attrs map[string]string) {
		m := sm.Metrics().AppendEmpty()
		m.SetName(name)
		m.SetUnit(unit)
		h := m.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		dp := h.DataPoints().AppendEmpty()
		dp.SetStartTimestamp(startTS)
		dp.SetTimestamp(now)
		dp.SetCount(2)
		dp.SetSum(3)
		dp.ExplicitBounds().FromRaw([]float64{1, 10})
		dp.BucketCounts().FromRaw([]uint64{1, 1, 0})
		for k, val := range attrs {
			dp.Attributes().PutStr(k, val)
		}
	}
	model := map[string]string{"gen_ai.agent.name": "support-bot", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o"}
	sum("runagain.cost", "USD", 0.42, model)
	sum("runagain.cost.unpriced", "{call}", 1, model)
	sum("runagain.alerts", "{alert}", 1, map[string]string{"alert.kind": "loop", "gen_ai.agent.name": "support-bot"})
	// LLM calls under agent_guard's default metric_conventions (semantic-conventions-genai v0.1.0);
	// tool calls keep gen_ai.client.operation.duration.
	llm := map[string]string{"gen_ai.agent.name": "support-bot", "gen_ai.operation.name": "chat",
		"gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o"}
	sum("gen_ai.client.inference.usage.input_tokens", "{token}", 120, llm)
	sum("gen_ai.client.inference.usage.output_tokens", "{token}", 30, llm)
	hist("gen_ai.client.inference.duration", "s", llm)
	hist("gen_ai.client.operation.duration", "s", map[string]string{"gen_ai.agent.name": "support-bot",
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"})
	return md
}

// TestRulesAndDashboardNameEmittedMetrics runs the real otelcol-runagain with the gateway's
// prometheus exporter settings, the tiered exporter on a persistent queue and an exporter whose
// backend is down (so failure and queue metrics exist), feeds it a runaway agent session, and
// checks that every metric and label the alert rules and the dashboard use is exposed, either on
// the agent_guard Prometheus endpoint or on the collector's own telemetry endpoint.
//
// With the agent_guard connector in the binary, its metrics come from the session itself. Without
// it, agent_guard's metrics as specified (name, unit, attributes) are sent over OTLP to the same
// exporter, which still checks the name translation (e.g. runagain.cost in USD ->
// runagain_cost_USD_total) against the real binary; the test logs which way it ran.
func TestRulesAndDashboardNameEmittedMetrics(t *testing.T) {
	bin := collectorBin(t)
	have := distributionComponents(t, bin)
	withGuard := have["connectors"]["agent_guard"]

	cfg := map[string]any{
		"extensions": map[string]any{
			"health_check":       map[string]any{"endpoint": "${env:RUNAGAIN_HEALTH_ENDPOINT}"},
			"file_storage/queue": map[string]any{"directory": "${env:RUNAGAIN_DATA_DIR}/queue", "create_directory": true},
			"runagain_storage": map[string]any{
				"hot": map[string]any{"sqlite": map[string]any{"path": "${env:RUNAGAIN_DATA_DIR}/hot.db"}},
				"payloads": map[string]any{"dir": filepath.Join(t.TempDir(), "staging"),
					"url": "file://" + filepath.Join(t.TempDir(), "payloads") + "?create_dir=true"}},
		},
		"receivers": map[string]any{"otlp": map[string]any{"protocols": map[string]any{
			"grpc": map[string]any{"endpoint": "${env:RUNAGAIN_OTLP_GRPC_ENDPOINT}"}}}},
		"processors": map[string]any{"memory_limiter": map[string]any{"check_interval": "1s", "limit_percentage": 80, "spike_limit_percentage": 20}},
		"exporters": map[string]any{
			"tiered": map[string]any{"storage": "runagain_storage", "hot": map[string]any{
				"sending_queue": map[string]any{"storage": "file_storage/queue"}}},
			// A backend that is down: retries off, so each batch counts as failed at once.
			"otlp_grpc/down": map[string]any{
				"endpoint": fmt.Sprintf("127.0.0.1:%d", collectortest.FreePort(t)), "tls": map[string]any{"insecure": true},
				"timeout": "1s", "retry_on_failure": map[string]any{"enabled": false},
				"sending_queue": map[string]any{"enabled": true, "queue_size": 100}},
			"prometheus": gatewayPrometheusExporter(t),
		},
		"service": map[string]any{
			"extensions": []string{"runagain_storage", "health_check", "file_storage/queue"},
			"pipelines": map[string]any{
				"traces": map[string]any{"receivers": []string{"otlp"}, "processors": []string{"memory_limiter"},
					"exporters": []string{"tiered", "otlp_grpc/down"}},
			},
			"telemetry": map[string]any{"metrics": gatewayTelemetryMetrics(t)},
		},
	}
	pipelines := cfg["service"].(map[string]any)["pipelines"].(map[string]any)
	processors := cfg["processors"].(map[string]any)
	exporters := cfg["exporters"].(map[string]any)
	traces := pipelines["traces"].(map[string]any)
	if have["processors"]["agent_redaction"] {
		processors["agent_redaction"] = map[string]any{}
		traces["processors"] = append(traces["processors"].([]string), "agent_redaction")
	}
	if have["processors"]["payload_offload"] {
		// One offload to a working file:// bucket, and one (in a second pipeline fed by the same
		// receiver) to an S3 endpoint where nothing listens, so both success and failure counters exist.
		// Each bucket is a runagain_storage extension's payloads::url.
		extensions := cfg["extensions"].(map[string]any)
		extensions["runagain_storage/down"] = map[string]any{"payloads": map[string]any{
			// No staging dir: the layout without packs writes each value in the request, so the
			// down endpoint fails the offload (with packs, uploads are retried in the background).
			"dir": "",
			"url": fmt.Sprintf("s3://deploytest?region=us-east-1&use_path_style=true&disable_https=true&endpoint=http://127.0.0.1:%d",
				collectortest.FreePort(t))}}
		svc := cfg["service"].(map[string]any)
		svc["extensions"] = append(svc["extensions"].([]string), "runagain_storage/down")
		processors["payload_offload"] = map[string]any{"storage": map[string]any{"extension": "runagain_storage"}}
		traces["processors"] = append(traces["processors"].([]string), "payload_offload")
		processors["payload_offload/down"] = map[string]any{
			"storage":          map[string]any{"timeout": "1s", "extension": "runagain_storage/down"},
			"retry_on_failure": map[string]any{"enabled": true, "initial_interval": "10ms", "max_interval": "50ms", "max_elapsed_time": "300ms"}}
		exporters["nop"] = map[string]any{}
		pipelines["traces/offload_down"] = map[string]any{"receivers": []string{"otlp"}, "processors": []string{"payload_offload/down"}, "exporters": []string{"nop"}}
	}
	if withGuard {
		// The pattern watcher reads at once and keeps one pattern series, so two runs failing in
		// two tools, started after the collector (the watcher counts runs from its start on), give
		// runagain_patterns_new_total, one pattern series and the overflow one.
		cfg["connectors"] = map[string]any{"agent_guard": map[string]any{"storage": "runagain_storage",
			"patterns": map[string]any{"interval": "500ms", "settle": "0s", "max_series": 1}}}
		pipelines["traces"].(map[string]any)["exporters"] = []string{"tiered", "otlp_grpc/down", "agent_guard"}
		pipelines["metrics/agent_guard"] = map[string]any{"receivers": []string{"agent_guard"}, "exporters": []string{"prometheus"}}
		t.Log("agent_guard is in the binary: its metrics come from a generated runaway session")
	} else {
		pipelines["metrics"] = map[string]any{"receivers": []string{"otlp"}, "exporters": []string{"prometheus"}}
		t.Log("agent_guard connector is NOT in the binary: its metrics are sent as specified over OTLP, " +
			"to check the name translation; rebuild with agent_guard for the full check")
	}
	body, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "metrics.yaml")
	require.NoError(t, os.WriteFile(path, body, 0o600))

	c := collectortest.Start(t, collectortest.Options{Config: path})
	promURL := "http://" + envValue(c.Env, "RUNAGAIN_PROMETHEUS_ENDPOINT") + "/metrics"
	telURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", c.TelemetryPort)

	conn, err := grpc.NewClient(c.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = ptraceotlp.NewGRPCClient(conn).Export(ctx, ptraceotlp.NewExportRequestFromTraces(runawaySession()))
	require.NoError(t, err)
	for i, tool := range []string{"refund", "lookup_order"} {
		_, err = ptraceotlp.NewGRPCClient(conn).Export(ctx, ptraceotlp.NewExportRequestFromTraces(failingToolRun(byte(i), tool)))
		require.NoError(t, err)
	}
	if !withGuard {
		_, err = pmetricotlp.NewGRPCClient(conn).Export(ctx, pmetricotlp.NewExportRequestFromMetrics(specMetrics()))
		require.NoError(t, err)
	}

	queries := append(ruleQueries(t), dashboardQueries(t)...)
	var got exposed
	var miss []string
	deadline := time.Now().Add(45 * time.Second)
	for {
		got = exposed{}
		scrape(t, promURL, got)
		scrape(t, telURL, got)
		miss = got.missing(t, queries)
		if len(miss) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	var ours []string
	for _, n := range got.names() {
		if strings.HasPrefix(n, "runagain_") || strings.HasPrefix(n, "gen_ai_") || strings.HasPrefix(n, "otelcol_processor_") || strings.HasPrefix(n, "otelcol_exporter_") {
			ours = append(ours, fmt.Sprintf("%s%v", n, sortedKeys(got[n])))
		}
	}
	t.Logf("exposed:\n%s", strings.Join(ours, "\n"))
	assert.Empty(t, miss, "rules/dashboard use metrics or labels the binary does not expose; exposed:\n%s", strings.Join(got.names(), "\n"))
	// The names the rules are built on, as the binary translates them.
	for _, n := range []string{"runagain_alerts_total", "runagain_cost_USD_total", "gen_ai_client_inference_usage_input_tokens_total", "gen_ai_client_inference_duration_seconds_bucket", "otelcol_exporter_sent_spans_total"} {
		assert.Contains(t, got, n)
	}
	assert.True(t, got["runagain_alerts_total"]["alert_kind"], "runagain_alerts_total carries alert_kind")
	if withGuard {
		assert.Contains(t, got, "runagain_patterns_new_total")
		assert.True(t, got["runagain_pattern_runs_total"]["pattern"], "runagain_pattern_runs_total carries pattern")
		assert.True(t, got["runagain_pattern_runs_total"]["otel_metric_overflow"], "the second pattern is in the overflow series")
	}
}

// failingToolRun is one finished run, started now, whose only tool call (tool) failed: a
// failure pattern of its own per tool.
func failingToolRun(n byte, tool string) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "deploytest-agent")
	ss := rs.ScopeSpans().AppendEmpty()
	traceID := pcommon.TraceID([16]byte{0xde, 0xb1, 0x0e, 2, n, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13})
	start := time.Now()
	root := ss.Spans().AppendEmpty()
	root.SetTraceID(traceID)
	root.SetSpanID(pcommon.SpanID([8]byte{9, 1}))
	root.SetName("invoke_agent support-bot")
	root.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	root.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(2 * time.Second)))
	root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
	root.Attributes().PutStr("gen_ai.agent.name", "support-bot")
	call := ss.Spans().AppendEmpty()
	call.SetTraceID(traceID)
	call.SetSpanID(pcommon.SpanID([8]byte{9, 2}))
	call.SetParentSpanID(root.SpanID())
	call.SetName("execute_tool " + tool)
	call.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Second)))
	call.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(1500 * time.Millisecond)))
	call.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
	call.Attributes().PutStr("gen_ai.tool.name", tool)
	call.Attributes().PutStr("error.type", "PaymentDeclined")
	call.Status().SetCode(ptrace.StatusCodeError)
	call.Status().SetMessage("card declined")
	return td
}

// TestDashboardStructure: the Grafana dashboard JSON is importable as is: unique panel ids, panels
// inside the 24-column grid without overlapping, every query on the dashboard's Prometheus
// data-source variable, and a unit on every time series.
func TestDashboardStructure(t *testing.T) {
	type gridPos struct{ H, W, X, Y int }
	var dash struct {
		UID        string `json:"uid"`
		Title      string `json:"title"`
		Templating struct {
			List []struct {
				Name, Type, Query string
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID         int     `json:"id"`
			Type       string  `json:"type"`
			Title      string  `json:"title"`
			GridPos    gridPos `json:"gridPos"`
			Datasource *struct {
				Type, UID string
			} `json:"datasource"`
			FieldConfig struct {
				Defaults struct {
					Unit string `json:"unit"`
				} `json:"defaults"`
			} `json:"fieldConfig"`
			Targets []struct {
				Expr       string `json:"expr"`
				Datasource *struct{ Type, UID string }
			} `json:"targets"`
		} `json:"panels"`
	}
	dec := json.NewDecoder(strings.NewReader(string(readFile(t, dashboardFile))))
	require.NoError(t, dec.Decode(&dash))
	require.NotEmpty(t, dash.UID)
	require.NotEmpty(t, dash.Title)
	dsVar := ""
	for _, v := range dash.Templating.List {
		if v.Type == "datasource" && v.Query == "prometheus" {
			dsVar = "${" + v.Name + "}"
		}
	}
	require.NotEmpty(t, dsVar, "a Prometheus data-source variable")
	ids := map[int]string{}
	type cell struct{ x, y int }
	used := map[cell]string{}
	for _, p := range dash.Panels {
		prev, dup := ids[p.ID]
		assert.False(t, dup, "panel id %d used by %q and %q", p.ID, prev, p.Title)
		ids[p.ID] = p.Title
		g := p.GridPos
		assert.True(t, g.W > 0 && g.H > 0 && g.X >= 0 && g.X+g.W <= 24, "panel %q gridPos %+v", p.Title, g)
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := used[cell{x, y}]; ok {
					t.Errorf("panels %q and %q overlap at %d,%d", other, p.Title, x, y)
				}
				used[cell{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		require.NotNil(t, p.Datasource, "panel %q has no datasource", p.Title)
		assert.Equal(t, dsVar, p.Datasource.UID, "panel %q", p.Title)
		assert.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		assert.NotEmpty(t, p.FieldConfig.Defaults.Unit, "panel %q has no unit", p.Title)
		for _, tg := range p.Targets {
			require.NotNil(t, tg.Datasource, "panel %q target", p.Title)
			assert.Equal(t, dsVar, tg.Datasource.UID)
		}
	}
}
