// SPDX-License-Identifier: Apache-2.0

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/runagain/runagain/connector/agentguardconnector/internal/metadata"
)

// Emitted metric names and units (OpenTelemetry GenAI semantic conventions where they exist).
// The LLM call metrics follow the release metric_conventions.release selects: semantic-
// conventions-genai v0.1.0 (the default) names an inference's duration and its token counters;
// core semconv up to v1.41.0 recorded both under gen_ai.client.operation.duration and the
// gen_ai.client.token.usage histogram.
const (
	MetricInferenceDuration = "gen_ai.client.inference.duration"            // histogram, s: LLM calls (genai-0.1)
	MetricInferenceInput    = "gen_ai.client.inference.usage.input_tokens"  // counter, {token} (genai-0.1)
	MetricInferenceOutput   = "gen_ai.client.inference.usage.output_tokens" // counter, {token} (genai-0.1)
	MetricTokenUsage        = "gen_ai.client.token.usage"                   // histogram, {token}, by gen_ai.token.type (semconv <= 1.41)
	MetricDuration          = "gen_ai.client.operation.duration"            // histogram, s: tool executions; LLM calls too in semconv <= 1.41
	MetricCost              = "runagain.cost"                               // counter, USD
	MetricUnpriced          = "runagain.cost.unpriced"                      // counter, {call}: LLM calls with usage but no known price
	MetricAlerts            = "runagain.alerts"                             // counter, {alert}, by alert.kind
	MetricPatternsNew       = "runagain.patterns.new"                       // counter, {pattern}: failure patterns first seen (patterns.go)
	MetricPatternRuns       = "runagain.pattern.runs"                       // counter, {run}, by pattern (at most patterns.max_series, then one overflow series)
)

type metricID int

const (
	mTokenUsage metricID = iota
	mDuration
	mCost
	mUnpriced
	mAlerts
	mInferenceDuration
	mInferenceInput
	mInferenceOutput
	mPatternsNew
	mPatternRuns
	numMetrics
)

var metricDefs = [numMetrics]struct {
	name, unit, desc string
	histogram        bool
	isInt            bool
	bounds           []float64
}{
	mTokenUsage: {MetricTokenUsage, "{token}", "Number of input and output tokens used.", true, false,
		// Semconv advisory bucket boundaries for gen_ai.client.token.usage.
		[]float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}},
	mDuration: {MetricDuration, "s", "GenAI operation duration (LLM calls and tool executions).", true, false,
		// Semconv advisory bucket boundaries for gen_ai.client.operation.duration.
		[]float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}},
	mCost:     {MetricCost, "USD", "Cost of LLM calls in US dollars, from the genai-prices table and configured overrides.", false, false, nil},
	mUnpriced: {MetricUnpriced, "{call}", "LLM calls with token usage whose model has no known price; their cost is not in runagain.cost.", false, true, nil},
	mAlerts:   {MetricAlerts, "{alert}", "Alerts raised by agent_guard (one log record each), by alert.kind.", false, true, nil},
	mInferenceDuration: {MetricInferenceDuration, "s", "Duration of GenAI inference operations (LLM calls).", true, false,
		[]float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}},
	mInferenceInput:  {MetricInferenceInput, "{token}", "Input tokens used by GenAI inference operations.", false, true, nil},
	mInferenceOutput: {MetricInferenceOutput, "{token}", "Output tokens used by GenAI inference operations.", false, true, nil},
	mPatternsNew:     {MetricPatternsNew, "{pattern}", "Failure patterns seen for the first time in the run index (one pattern_new alert each).", false, true, nil},
	mPatternRuns:     {MetricPatternRuns, "{run}", "Failing runs by failure pattern, counted once each when the run index has their pattern.", false, true, nil},
}

type exemplar struct {
	trace pcommon.TraceID
	span  pcommon.SpanID
	ts    pcommon.Timestamp
	value float64
}

// series is the cumulative state of one data point stream.
type series struct {
	metric  metricID
	service string
	attrs   []kv
	start   pcommon.Timestamp

	sum      float64
	count    uint64
	buckets  []uint64
	min, max float64

	touched   bool
	exemplars []exemplar
}

type kv struct{ k, v string }

// aggregator keeps cumulative series, bounded by max_series (excess goes to one overflow
// series per metric).
type aggregator struct {
	max          int
	maxExemplars int
	names        metricNames // which releases' LLM call metrics are recorded
	series       map[string]*series
	touched      []*series
	// patternSeries counts the runagain.pattern.runs series with a pattern of their own
	// (patterns.max_series bounds it: patternRuns).
	patternSeries int
	keyBuf        []byte
}

func newAggregator(maxSeries, maxExemplars int, names metricNames) *aggregator {
	return &aggregator{max: maxSeries, maxExemplars: maxExemplars, names: names, series: map[string]*series{}}
}

// metricNames tells which naming of the LLM call metrics is recorded: the semantic-conventions-
// genai release's (inference), core semconv <= 1.41's (legacy), or both during a migration.
type metricNames struct{ inference, legacy bool }

func (a *aggregator) get(m metricID, service string, attrs []kv, now pcommon.Timestamp) *series {
	b := append(a.keyBuf[:0], byte('0'+m), 0)
	b = append(b, service...)
	for _, p := range attrs {
		if p.v == "" {
			continue
		}
		b = append(b, 0)
		b = append(b, p.k...)
		b = append(b, '=')
		b = append(b, p.v...)
	}
	a.keyBuf = b
	s, ok := a.series[string(b)] // no allocation on lookup
	if !ok {
		if len(a.series) >= a.max {
			return a.overflow(m, now)
		}
		s = a.newSeries(m, service, attrs, now)
		a.series[string(b)] = s
	}
	return s
}

func (a *aggregator) newSeries(m metricID, service string, attrs []kv, now pcommon.Timestamp) *series {
	kept := make([]kv, 0, len(attrs))
	for _, p := range attrs {
		if p.v != "" {
			kept = append(kept, p)
		}
	}
	s := &series{metric: m, service: service, attrs: kept, start: now}
	if metricDefs[m].histogram {
		s.buckets = make([]uint64, len(metricDefs[m].bounds)+1)
	}
	return s
}

// overflow returns the one series of metric m that takes every attribute combination (and
// service) beyond max_series; it has no service.name and otel.metric.overflow=true.
func (a *aggregator) overflow(m metricID, now pcommon.Timestamp) *series {
	key := "overflow\x00" + string(rune('0'+m))
	s, ok := a.series[key]
	if !ok {
		s = a.newSeries(m, "", []kv{{"otel.metric.overflow", "true"}}, now)
		a.series[key] = s
	}
	return s
}

// touch marks s to be emitted at the next flush with its value unchanged (a counter created at 0).
func (a *aggregator) touch(s *series) {
	if !s.touched {
		s.touched = true
		a.touched = append(a.touched, s)
	}
}

// record adds one observation; ex is the span it came from.
func (a *aggregator) record(s *series, v float64, ex exemplar) {
	def := &metricDefs[s.metric]
	if def.histogram {
		if s.count == 0 || v < s.min {
			s.min = v
		}
		if s.count == 0 || v > s.max {
			s.max = v
		}
		s.count++
		s.buckets[sort.SearchFloat64s(def.bounds, v)]++
	}
	s.sum += v
	if !s.touched {
		s.touched = true
		a.touched = append(a.touched, s)
	}
	if len(s.exemplars) < a.maxExemplars {
		ex.value = v
		s.exemplars = append(s.exemplars, ex)
	}
}

// emit writes the series touched since the last emit (cumulative values at now, the exemplars
// recorded since the last emit) into md, grouped by service.name, and resets the touched marks.
func (a *aggregator) emit(md pmetric.Metrics, now pcommon.Timestamp) {
	if len(a.touched) == 0 {
		return
	}
	sort.Slice(a.touched, func(i, j int) bool { return less(a.touched[i], a.touched[j]) })
	var (
		curService string
		sm         pmetric.ScopeMetrics
		metrics    [numMetrics]pmetric.Metric
		have       [numMetrics]bool
	)
	for i, s := range a.touched {
		if i == 0 || s.service != curService {
			curService = s.service
			rm := md.ResourceMetrics().AppendEmpty()
			if s.service != "" {
				rm.Resource().Attributes().PutStr("service.name", s.service)
			}
			sm = rm.ScopeMetrics().AppendEmpty()
			sm.Scope().SetName(metadata.ScopeName)
			have = [numMetrics]bool{}
		}
		def := &metricDefs[s.metric]
		if !have[s.metric] {
			m := sm.Metrics().AppendEmpty()
			m.SetName(def.name)
			m.SetUnit(def.unit)
			m.SetDescription(def.desc)
			if def.histogram {
				m.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			} else {
				sum := m.SetEmptySum()
				sum.SetIsMonotonic(true)
				sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			}
			metrics[s.metric] = m
			have[s.metric] = true
		}
		m := metrics[s.metric]
		var attrs pcommon.Map
		var exs pmetric.ExemplarSlice
		if def.histogram {
			dp := m.Histogram().DataPoints().AppendEmpty()
			dp.SetStartTimestamp(s.start)
			dp.SetTimestamp(now)
			dp.SetCount(s.count)
			dp.SetSum(s.sum)
			dp.SetMin(s.min)
			dp.SetMax(s.max)
			dp.ExplicitBounds().FromRaw(def.bounds)
			dp.BucketCounts().FromRaw(s.buckets)
			attrs, exs = dp.Attributes(), dp.Exemplars()
		} else {
			dp := m.Sum().DataPoints().AppendEmpty()
			dp.SetStartTimestamp(s.start)
			dp.SetTimestamp(now)
			if def.isInt {
				dp.SetIntValue(int64(s.sum))
			} else {
				dp.SetDoubleValue(s.sum)
			}
			attrs, exs = dp.Attributes(), dp.Exemplars()
		}
		for _, p := range s.attrs {
			attrs.PutStr(p.k, p.v)
		}
		for _, e := range s.exemplars {
			ex := exs.AppendEmpty()
			ex.SetTraceID(e.trace)
			ex.SetSpanID(e.span)
			ex.SetTimestamp(e.ts)
			if def.isInt {
				ex.SetIntValue(int64(e.value))
			} else {
				ex.SetDoubleValue(e.value)
			}
		}
		s.touched = false
		s.exemplars = s.exemplars[:0]
	}
	a.touched = a.touched[:0]
}

func less(a, b *series) bool {
	if a.service != b.service {
		return a.service < b.service
	}
	if a.metric != b.metric {
		return a.metric < b.metric
	}
	for i := 0; i < len(a.attrs) && i < len(b.attrs); i++ {
		if a.attrs[i] != b.attrs[i] {
			if a.attrs[i].k != b.attrs[i].k {
				return a.attrs[i].k < b.attrs[i].k
			}
			return a.attrs[i].v < b.attrs[i].v
		}
	}
	return len(a.attrs) < len(b.attrs)
}
