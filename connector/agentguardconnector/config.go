// SPDX-License-Identifier: Apache-2.0

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"

	"github.com/runagain/runagain/internal/confdur"
)

// Config is the agent_guard connector configuration. Every field has a default (README.md has
// the full table and the reasons for each default).
type Config struct {
	// Storage is the id of the runagain_storage extension whose prices and session keys are used
	// (empty: the only one, if the collector has one; without one, the embedded price table and
	// the default session keys, gen_ai.conversation.id then session.id).
	Storage component.ID `mapstructure:"storage"`
	// MaxSessions bounds the sessions tracked at once; the least recently active session is
	// dropped (and ends) when a new one arrives at the limit.
	MaxSessions int `mapstructure:"max_sessions"`
	// MaxSessionsMiB bounds the estimated heap bytes of all sessions' state (session.heapBytes:
	// identity strings, the loop detector's fingerprints, occurrences and run of spans), in MiB:
	// the least recently active sessions end (reason "evicted") while the total is above it.
	// The bound holds whatever the sessions' shape; max_sessions alone bounds a count.
	MaxSessionsMiB int `mapstructure:"max_sessions_mib"`
	// SessionIdleTimeout ends a session with no span for this long.
	SessionIdleTimeout time.Duration `mapstructure:"session_idle_timeout"`
	// MaxSeenSpans bounds the (trace id, span id) pairs remembered to count each span once: a
	// span delivered again (an OTLP client retrying after a lost acknowledgement) while its pair
	// is among the last MaxSeenSpans LLM and tool spans is not counted again (tokens, cost,
	// alerts). About 170 bytes each of Go heap (a 32-byte key in an LRU entry), measured at the
	// bound.
	MaxSeenSpans int `mapstructure:"max_seen_spans"`
	// ExpiryInterval is how often idle sessions are looked for.
	ExpiryInterval time.Duration `mapstructure:"expiry_interval"`
	// MetricsFlushInterval is how often the metric series changed since the last flush are sent
	// to the metrics pipeline (cumulative values, with the exemplars gathered since the last
	// flush), as the contrib span_metrics connector's metrics_flush_interval; the connector's
	// shutdown flushes once more. Alert log records are not delayed: they go out with the batch
	// that raised them.
	MetricsFlushInterval time.Duration `mapstructure:"metrics_flush_interval"`
	// MaxSeries bounds the metric series (attribute combinations) kept; further combinations
	// are recorded in one overflow series per metric with otel.metric.overflow=true.
	MaxSeries int `mapstructure:"max_series"`
	// Exemplars configures exemplars on the emitted data points.
	Exemplars ExemplarsConfig `mapstructure:"exemplars"`
	// MetricConventions selects the names of the LLM call metrics.
	MetricConventions MetricConventionsConfig `mapstructure:"metric_conventions"`
	// JoinWindow bounds what is remembered of recent traces so a run joined from an instrumented
	// agent's spans and the proxy's exchanges, arriving in separate batches, meters each LLM call
	// once (internal/runview/rule.Window).
	JoinWindow JoinWindowConfig `mapstructure:"join_window"`

	Loop            LoopConfig            `mapstructure:"loop"`
	CostSpike       CostSpikeConfig       `mapstructure:"cost_spike"`
	ToolErrors      ToolErrorsConfig      `mapstructure:"tool_errors"`
	ContextPressure ContextPressureConfig `mapstructure:"context_pressure"`
	// Patterns turns the run index's failure patterns into metrics and alerts (patterns.go).
	Patterns PatternsConfig `mapstructure:"patterns"`

	_ struct{}
}

// JoinWindowConfig configures the counting rule across batches (rule.Window): the spans of
// recently seen traces are remembered, so the second half of a joined run (the agent's LLM spans
// or the proxy's exchanges of the same calls) is not metered again.
type JoinWindowConfig struct {
	// MaxSpans bounds the spans remembered, in all traces (about 230 bytes each of Go heap,
	// measured at the bound; the least recently seen trace is forgotten first). 0 applies the
	// rule within each batch only.
	MaxSpans int `mapstructure:"max_spans"`
	// IdleTimeout forgets a trace with no span for this long: a half arriving later meters again.
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`
}

// PatternsConfig configures the pattern watcher: new failure patterns and rate jumps, read from
// the hot tier's run index, else the warm tier's (internal/patterns signatures, written when a
// run is indexed).
type PatternsConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// Interval is how often the run index is read for runs not read yet.
	Interval time.Duration `mapstructure:"interval"`
	// Settle is how long after its start a run is read: it is counted once, with the pattern its
	// index row has then, so a run still going should have ended by then.
	Settle time.Duration `mapstructure:"settle"`
	// MaxSeries bounds the runagain.pattern.runs series (one per pattern); the runs of further
	// patterns are counted in one overflow series with otel.metric.overflow=true and no pattern
	// label, as span_metrics' aggregation_cardinality_limit does.
	MaxSeries int `mapstructure:"max_series"`
	// MaxPatterns bounds the patterns remembered (their first sighting and rate baseline); the
	// least recently seen is forgotten beyond it, and would be called new if it came back.
	MaxPatterns int `mapstructure:"max_patterns"`
	// RateJump configures the pattern_rate_jump alert.
	RateJump PatternRateJumpConfig `mapstructure:"rate_jump"`
}

// PatternRateJumpConfig: a pattern's runs in Window reaching MinRuns and Factor times what its
// baseline expects for one window raise a pattern_rate_jump alert.
type PatternRateJumpConfig struct {
	Enabled bool          `mapstructure:"enabled"`
	Window  time.Duration `mapstructure:"window"`
	Factor  float64       `mapstructure:"factor"`
	MinRuns int           `mapstructure:"min_runs"`
	// BaselineHalfLife is the half-life of the decayed count of the runs that left the window.
	BaselineHalfLife time.Duration `mapstructure:"baseline_half_life"`
}

// ExemplarsConfig bounds exemplars.
type ExemplarsConfig struct {
	// MaxPerDataPoint is the most exemplars attached to one data point per flush (the first
	// ones recorded since the last flush); 0 disables exemplars.
	MaxPerDataPoint int `mapstructure:"max_per_data_point"`
}

// Metric convention releases accepted by metric_conventions.release.
const (
	// ConventionsGenAI01 is open-telemetry/semantic-conventions-genai v0.1.0: an LLM call's
	// duration is gen_ai.client.inference.duration, its tokens the counters
	// gen_ai.client.inference.usage.input_tokens / output_tokens.
	ConventionsGenAI01 = "genai-0.1"
	// ConventionsSemconv141 is core semconv v1.41.0 (the last with gen_ai.*):
	// gen_ai.client.operation.duration and the gen_ai.client.token.usage histogram.
	ConventionsSemconv141 = "semconv-1.41"
)

// MetricConventionsConfig names the conventions release whose metric names agent_guard emits.
type MetricConventionsConfig struct {
	// Release is ConventionsGenAI01 (default) or ConventionsSemconv141.
	Release string `mapstructure:"release"`
	// AlsoEmitPrevious emits, with the genai-0.1 names, the semconv-1.41 ones too, so dashboards
	// and alerts on the old names keep working during a migration.
	AlsoEmitPrevious bool `mapstructure:"also_emit_previous"`
}

func (m MetricConventionsConfig) names() metricNames {
	if m.Release == ConventionsSemconv141 {
		return metricNames{legacy: true}
	}
	return metricNames{inference: true, legacy: m.AlsoEmitPrevious}
}

// LoopConfig configures loop detection.
type LoopConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// Repeats is N: the same tool with the same arguments (or the same LLM request) this many
	// times in one session within Window raises a loop alert.
	Repeats int `mapstructure:"repeats"`
	// Window is the time span (of span end times) within which the repeats must fall.
	Window time.Duration `mapstructure:"window"`
	// ConsecutiveTool is M: the same tool this many times in a row in one session (any
	// arguments, no other tool in between) raises a loop alert. 0 disables the rule.
	ConsecutiveTool int `mapstructure:"consecutive_tool"`
	// MaxFingerprints bounds the distinct calls remembered per session.
	MaxFingerprints int `mapstructure:"max_fingerprints"`
}

// CostSpikeConfig configures cost spike detection.
type CostSpikeConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// Factor is k: a session costing more than k times the median of comparable ended
	// sessions (same agent and service) raises an alert.
	Factor float64 `mapstructure:"factor"`
	// MinSessions is how many ended sessions the group needs before its median is trusted.
	MinSessions int `mapstructure:"min_sessions"`
	// MinCost (USD) is the least session cost that can be a spike.
	MinCost float64 `mapstructure:"min_cost"`
	// BaselineSessions is the length of one baseline generation: the median is taken over the
	// current and the previous generation, so it rolls over roughly the last 1-2 x this many
	// ended sessions of the group.
	BaselineSessions int `mapstructure:"baseline_sessions"`
	// RelativeAccuracy of the DDSketch holding session costs.
	RelativeAccuracy float64 `mapstructure:"relative_accuracy"`
	// MaxGroups bounds the (agent, service) groups tracked.
	MaxGroups int `mapstructure:"max_groups"`
}

// ToolErrorsConfig configures tool-error spike detection.
type ToolErrorsConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// Window is the sliding window the error rate is taken over.
	Window time.Duration `mapstructure:"window"`
	// MinCalls is the least number of calls of the tool in the window.
	MinCalls int `mapstructure:"min_calls"`
	// Threshold is the error rate (0..1] the window must reach.
	Threshold float64 `mapstructure:"threshold"`
	// BaselineFactor: the window rate must also be at least this times the tool's own baseline
	// rate (calls that left the window, exponentially decayed).
	BaselineFactor float64 `mapstructure:"baseline_factor"`
	// BaselineHalfLife is the half-life of the exponentially decayed baseline counts.
	BaselineHalfLife time.Duration `mapstructure:"baseline_half_life"`
	// MaxTools bounds the (service, tool) pairs tracked.
	MaxTools int `mapstructure:"max_tools"`
}

// ContextPressureConfig configures context pressure detection.
type ContextPressureConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// Window is the sliding window the share is taken over.
	Window time.Duration `mapstructure:"window"`
	// MinResponses is the least number of LLM responses of the model in the window.
	MinResponses int `mapstructure:"min_responses"`
	// Threshold is the share (0..1] of responses cut by the token limit that raises an alert.
	Threshold float64 `mapstructure:"threshold"`
	// FinishReasons are the gen_ai.response.finish_reasons values that mean "cut by the token
	// limit" (OpenAI length, Anthropic max_tokens, Gemini MAX_TOKENS).
	FinishReasons []string `mapstructure:"finish_reasons"`
	// MaxModels bounds the models tracked.
	MaxModels int `mapstructure:"max_models"`
}

func createDefaultConfig() *Config {
	return &Config{
		MaxSessions:          50000,
		MaxSessionsMiB:       64,
		SessionIdleTimeout:   30 * time.Minute,
		MaxSeenSpans:         100000,
		ExpiryInterval:       time.Minute,
		MetricsFlushInterval: time.Second,
		MaxSeries:            5000,
		MetricConventions:    MetricConventionsConfig{Release: ConventionsGenAI01},
		JoinWindow:           JoinWindowConfig{MaxSpans: 100000, IdleTimeout: 5 * time.Minute},
		Exemplars:            ExemplarsConfig{MaxPerDataPoint: 5},
		Loop: LoopConfig{
			Enabled: true, Repeats: 5, Window: 10 * time.Minute, ConsecutiveTool: 10, MaxFingerprints: 256,
		},
		CostSpike: CostSpikeConfig{
			Enabled: true, Factor: 5, MinSessions: 20, MinCost: 0.05, BaselineSessions: 500,
			RelativeAccuracy: 0.01, MaxGroups: 1000,
		},
		ToolErrors: ToolErrorsConfig{
			Enabled: true, Window: 5 * time.Minute, MinCalls: 10, Threshold: 0.5, BaselineFactor: 2, BaselineHalfLife: time.Hour, MaxTools: 1000,
		},
		ContextPressure: ContextPressureConfig{
			Enabled: true, Window: 10 * time.Minute, MinResponses: 20, Threshold: 0.2,
			FinishReasons: []string{"length", "max_tokens", "MAX_TOKENS"}, MaxModels: 1000,
		},
		Patterns: PatternsConfig{
			Enabled: true, Interval: 30 * time.Second, Settle: 2 * time.Minute, MaxSeries: 1000, MaxPatterns: 100000,
			RateJump: PatternRateJumpConfig{Enabled: true, Window: time.Hour, Factor: 3, MinRuns: 5, BaselineHalfLife: 24 * time.Hour},
		},
	}
}

// Unmarshal decodes the section; a duration setting whose value is not a duration is an error
// naming its path, the value and what to write, and a key that names no setting is named by its
// path with the nearest setting (internal/confdur: the collector's decoder drops the value from
// its error and names a Go type for an unknown key).
func (c *Config) Unmarshal(conf *confmap.Conf) error { return confdur.Decode(conf, c) }

// Validate checks the configuration; each error names the field.
func (c *Config) Validate() error {
	var errs []error
	pos := func(name string, v int) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive, got %d", name, v))
		}
	}
	dur := func(name string, v time.Duration) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be a positive duration, got %s", name, v))
		}
	}
	share := func(name string, v float64) {
		if !(v > 0 && v <= 1) {
			errs = append(errs, fmt.Errorf("%s: must be in (0, 1], got %v", name, v))
		}
	}
	pos("max_sessions", c.MaxSessions)
	pos("max_sessions_mib", c.MaxSessionsMiB)
	pos("max_seen_spans", c.MaxSeenSpans)
	dur("session_idle_timeout", c.SessionIdleTimeout)
	dur("expiry_interval", c.ExpiryInterval)
	dur("metrics_flush_interval", c.MetricsFlushInterval)
	pos("max_series", c.MaxSeries)
	switch c.MetricConventions.Release {
	case ConventionsGenAI01, ConventionsSemconv141:
	default:
		errs = append(errs, fmt.Errorf("metric_conventions.release: must be %q or %q, got %q", ConventionsGenAI01, ConventionsSemconv141, c.MetricConventions.Release))
	}
	if c.MetricConventions.AlsoEmitPrevious && c.MetricConventions.Release == ConventionsSemconv141 {
		errs = append(errs, fmt.Errorf("metric_conventions.also_emit_previous: only with release %q (%q has no previous names)", ConventionsGenAI01, ConventionsSemconv141))
	}
	if c.JoinWindow.MaxSpans < 0 {
		errs = append(errs, fmt.Errorf("join_window.max_spans: must not be negative (0: within each batch only), got %d", c.JoinWindow.MaxSpans))
	}
	if c.JoinWindow.MaxSpans > 0 {
		dur("join_window.idle_timeout", c.JoinWindow.IdleTimeout)
	}
	if c.Exemplars.MaxPerDataPoint < 0 {
		errs = append(errs, fmt.Errorf("exemplars.max_per_data_point: must not be negative, got %d", c.Exemplars.MaxPerDataPoint))
	}
	if c.Loop.Enabled {
		if c.Loop.Repeats < 2 {
			errs = append(errs, fmt.Errorf("loop.repeats: must be at least 2, got %d", c.Loop.Repeats))
		}
		dur("loop.window", c.Loop.Window)
		if c.Loop.ConsecutiveTool == 1 || c.Loop.ConsecutiveTool < 0 {
			errs = append(errs, fmt.Errorf("loop.consecutive_tool: must be 0 (off) or at least 2, got %d", c.Loop.ConsecutiveTool))
		}
		pos("loop.max_fingerprints", c.Loop.MaxFingerprints)
	}
	if c.CostSpike.Enabled {
		if !(c.CostSpike.Factor > 1) {
			errs = append(errs, fmt.Errorf("cost_spike.factor: must be greater than 1, got %v", c.CostSpike.Factor))
		}
		pos("cost_spike.min_sessions", c.CostSpike.MinSessions)
		if c.CostSpike.MinCost < 0 {
			errs = append(errs, fmt.Errorf("cost_spike.min_cost: must not be negative, got %v", c.CostSpike.MinCost))
		}
		pos("cost_spike.baseline_sessions", c.CostSpike.BaselineSessions)
		if !(c.CostSpike.RelativeAccuracy > 0 && c.CostSpike.RelativeAccuracy < 1) {
			errs = append(errs, fmt.Errorf("cost_spike.relative_accuracy: must be in (0, 1), got %v", c.CostSpike.RelativeAccuracy))
		}
		pos("cost_spike.max_groups", c.CostSpike.MaxGroups)
	}
	if c.ToolErrors.Enabled {
		dur("tool_errors.window", c.ToolErrors.Window)
		pos("tool_errors.min_calls", c.ToolErrors.MinCalls)
		share("tool_errors.threshold", c.ToolErrors.Threshold)
		if c.ToolErrors.BaselineFactor < 1 {
			errs = append(errs, fmt.Errorf("tool_errors.baseline_factor: must be at least 1, got %v", c.ToolErrors.BaselineFactor))
		}
		dur("tool_errors.baseline_half_life", c.ToolErrors.BaselineHalfLife)
		pos("tool_errors.max_tools", c.ToolErrors.MaxTools)
	}
	if c.ContextPressure.Enabled {
		dur("context_pressure.window", c.ContextPressure.Window)
		pos("context_pressure.min_responses", c.ContextPressure.MinResponses)
		share("context_pressure.threshold", c.ContextPressure.Threshold)
		if len(c.ContextPressure.FinishReasons) == 0 {
			errs = append(errs, errors.New("context_pressure.finish_reasons: must list at least one finish reason"))
		}
		pos("context_pressure.max_models", c.ContextPressure.MaxModels)
	}
	if p := c.Patterns; p.Enabled {
		dur("patterns.interval", p.Interval)
		if p.Settle < 0 {
			errs = append(errs, fmt.Errorf("patterns.settle: must not be negative, got %s", p.Settle))
		}
		pos("patterns.max_series", p.MaxSeries)
		pos("patterns.max_patterns", p.MaxPatterns)
		if rj := p.RateJump; rj.Enabled {
			dur("patterns.rate_jump.window", rj.Window)
			if !(rj.Factor > 1) {
				errs = append(errs, fmt.Errorf("patterns.rate_jump.factor: must be greater than 1, got %v", rj.Factor))
			}
			pos("patterns.rate_jump.min_runs", rj.MinRuns)
			dur("patterns.rate_jump.baseline_half_life", rj.BaselineHalfLife)
		}
	}
	return errors.Join(errs...)
}
