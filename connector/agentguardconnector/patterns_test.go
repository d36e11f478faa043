// SPDX-License-Identifier: Apache-2.0

package agentguardconnector

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/runagain/runagain/internal/runagainattr"
)

// fakeIndex is a run index in memory: failing runs with their pattern and start.
type fakeIndex struct {
	mu   sync.Mutex
	runs []patternRun
	n    int
}

func (x *fakeIndex) add(pattern string, start time.Time) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.n++
	tr := fmt.Sprintf("%032x", 0xfa000000+x.n)
	x.runs = append(x.runs, patternRun{trace: tr, session: "s" + tr[28:], pattern: pattern, agent: "support", start: start})
	return tr
}

func (x *fakeIndex) source(_ context.Context, since, until time.Time, yield func(patternRun) error) error {
	x.mu.Lock()
	runs := append([]patternRun(nil), x.runs...)
	x.mu.Unlock()
	// newest first, as the run index streams
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		if (!since.IsZero() && r.start.Before(since)) || !r.start.Before(until) {
			continue
		}
		if err := yield(r); err != nil {
			return err
		}
	}
	return nil
}

// patternHarness is a guard whose pattern watcher reads idx, started after after on the clock.
func patternHarness(t *testing.T, cfg *Config, idx *fakeIndex, after time.Duration) *harness {
	t.Helper()
	return patternHarnessOn(t, cfg, idx.source, after)
}

// patternHarnessOn is patternHarness over any source (a real run index).
func patternHarnessOn(t *testing.T, cfg *Config, src patternSource, after time.Duration) *harness {
	t.Helper()
	h := newHarness(t, cfg)
	h.clock.Advance(after)
	require.NoError(t, h.g.watchPatterns(src))
	return h
}

// pass advances the clock by d and runs one watcher pass and one flush, as the tickers do; it
// returns what they produced. What is produced is counted from before the clock moves: Advance
// also fires the guard's own tickers, whose flush may run before this one and leave it nothing
// new to send.
func (h *harness) pass(d time.Duration) (pmetric.Metrics, plog.Logs) {
	h.t.Helper()
	nm, nl := len(h.ms.AllMetrics()), len(h.ls.AllLogs())
	h.clock.Advance(d)
	h.g.readPatterns(context.Background())
	h.g.flush(context.Background())
	md, ld := pmetric.NewMetrics(), plog.NewLogs()
	for _, m := range h.ms.AllMetrics()[nm:] {
		m.ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())
	}
	for _, l := range h.ls.AllLogs()[nl:] {
		l.ResourceLogs().MoveAndAppendTo(ld.ResourceLogs())
	}
	return md, ld
}

// counts returns the cumulative value of the named metric per value of the attribute key
// (the overflow series under "overflow").
func counts(md pmetric.Metrics, name, key string) map[string]int64 {
	out := map[string]int64{}
	sumPoints(md, name, func(_ pcommon.Map, dp pmetric.NumberDataPoint) {
		k := attrStr(dp.Attributes(), key)
		if attrStr(dp.Attributes(), "otel.metric.overflow") == "true" {
			k = "overflow"
		}
		out[k] = dp.IntValue()
	})
	return out
}

// A pattern no run had before raises one pattern_new alert pointing at its first run and
// counts in runagain.patterns.new; every failing run counts once in runagain.pattern.runs by
// pattern; a pattern the index held at start is not new; a watcher started again over the same
// index (a collector restart) calls nothing new, and the alert's record id is the same.
func TestPatternNewAlertAndRunCounts(t *testing.T) {
	idx := &fakeIndex{}
	start := t0.Add(time.Hour) // the harness clock
	idx.add("old", start.Add(-48*time.Hour))
	cfg := createDefaultConfig()
	h := patternHarness(t, cfg, idx, 0)
	settle := cfg.Patterns.Settle

	idx.add("old", start.Add(time.Second))
	firstNew := idx.add("p-new", start.Add(2*time.Second))
	idx.add("p-new", start.Add(3*time.Second))
	idx.add("", start.Add(4*time.Second)) // a passing run
	// Before the runs are settle old, nothing is read; runagain.patterns.new exists at 0.
	md, ld := h.pass(settle / 2)
	assert.Zero(t, ld.LogRecordCount())
	assert.Empty(t, counts(md, MetricPatternRuns, AttrPattern))
	assert.Equal(t, map[string]int64{"": 0}, counts(md, MetricPatternsNew, ""))

	md, ld = h.pass(settle)
	alerts := alertsOf(ld)
	require.Len(t, alerts, 1, "one new pattern")
	a := alerts[0]
	assert.Equal(t, AlertEventName, a.EventName())
	assert.Equal(t, AlertPatternNew, attrStr(a.Attributes(), AttrAlertKind))
	assert.Equal(t, "p-new", attrStr(a.Attributes(), AttrPattern))
	assert.Equal(t, "support", attrStr(a.Attributes(), "gen_ai.agent.name"))
	assert.Equal(t, firstNew, a.TraceID().String(), "the alert points at the pattern's first run")
	assert.Contains(t, a.Body().Str(), "runagain patterns show p-new")
	id := attrStr(a.Attributes(), runagainattr.RecordID)
	assert.Equal(t, runagainattr.RecordIDOf(AlertEventName, AlertPatternNew, "p-new", firstNew), id)
	assert.Equal(t, map[string]int64{"old": 1, "p-new": 2}, counts(md, MetricPatternRuns, AttrPattern))
	assert.Equal(t, map[string]int64{"": 1}, counts(md, MetricPatternsNew, ""))
	assert.Equal(t, map[string]int64{AlertPatternNew: 1}, counts(md, MetricAlerts, AttrAlertKind))

	// Read again: nothing counted twice, no second alert.
	idx.add("p-new", start.Add(settle+time.Second))
	md, ld = h.pass(settle)
	assert.Zero(t, ld.LogRecordCount())
	assert.Equal(t, map[string]int64{"p-new": 3}, counts(md, MetricPatternRuns, AttrPattern))

	// A restart: a new watcher over the same index knows both patterns.
	h2 := patternHarness(t, cfg, idx, h.clock.Since(start))
	idx.add("p-new", h2.clock.Now().Add(time.Second))
	_, ld = h2.pass(settle + 2*time.Second)
	assert.Zero(t, ld.LogRecordCount(), "a pattern the index already held is not new after a restart")
}

// runagain.pattern.runs has at most patterns.max_series series with a pattern; the runs of every
// further pattern go to one overflow series (otel.metric.overflow=true, no pattern), so the
// counts add up to every run.
func TestPatternRunsBoundedWithOverflow(t *testing.T) {
	idx := &fakeIndex{}
	cfg := createDefaultConfig()
	cfg.Patterns.MaxSeries = 2
	h := patternHarness(t, cfg, idx, 0)
	start := h.clock.Now()
	for i := 0; i < 5; i++ {
		for j := 0; j <= i; j++ {
			idx.add(fmt.Sprintf("p%d", i), start.Add(time.Duration(10*i+j)*time.Millisecond))
		}
	}
	md, ld := h.pass(cfg.Patterns.Settle + time.Second)
	got := counts(md, MetricPatternRuns, AttrPattern)
	assert.Equal(t, map[string]int64{"p0": 1, "p1": 2, "overflow": 3 + 4 + 5}, got)
	assert.Len(t, alertsOf(ld), 5, "every pattern is new, overflowed or not")
	assert.Equal(t, map[string]int64{"": 5}, counts(md, MetricPatternsNew, ""))
}

// A pattern whose runs in one window reach rate_jump.factor times what its baseline expects
// raises one pattern_rate_jump alert with the counts as evidence, once per window; the steady
// rate before it raises none.
func TestPatternRateJump(t *testing.T) {
	idx := &fakeIndex{}
	cfg := createDefaultConfig()
	cfg.Patterns.RateJump.Window = time.Hour
	cfg.Patterns.RateJump.Factor = 3
	cfg.Patterns.RateJump.MinRuns = 5
	h := patternHarness(t, cfg, idx, 0)
	step := cfg.Patterns.Interval * 4 // 2 minutes
	var jumps []plog.LogRecord
	// 10 hours of a steady 2 runs per hour (one run every 30 minutes).
	for i := 0; i < 300; i++ {
		if i%15 == 0 {
			idx.add("steady", h.clock.Now().Add(-cfg.Patterns.Settle+time.Second))
		}
		_, ld := h.pass(step)
		for _, a := range alertsOf(ld) {
			if attrStr(a.Attributes(), AttrAlertKind) == AlertPatternRateJump {
				jumps = append(jumps, a)
			}
		}
	}
	require.Empty(t, jumps, "a steady rate is no jump")
	// Then 12 runs within 24 minutes.
	for i := 0; i < 12; i++ {
		idx.add("steady", h.clock.Now().Add(-cfg.Patterns.Settle+time.Second))
		_, ld := h.pass(step)
		for _, a := range alertsOf(ld) {
			if attrStr(a.Attributes(), AttrAlertKind) == AlertPatternRateJump {
				jumps = append(jumps, a)
			}
		}
	}
	require.NotEmpty(t, jumps)
	a := jumps[0]
	assert.Equal(t, "steady", attrStr(a.Attributes(), AttrPattern))
	n := attrInt(a.Attributes(), AttrPatternRuns)
	v, _ := a.Attributes().Get(AttrPatternExpected)
	expected := v.Double()
	assert.GreaterOrEqual(t, n, int64(5))
	assert.InDelta(t, 2, expected, 1, "the baseline expects about 2 runs an hour")
	assert.GreaterOrEqual(t, float64(n), 3*expected)
	windows := map[int64]bool{}
	for _, j := range jumps {
		w := int64(j.Timestamp()) / int64(time.Hour)
		assert.False(t, windows[w], "two rate-jump alerts in one window")
		windows[w] = true
	}
}

// An index that cannot be read is read again at the next pass: the runs are counted then.
func TestPatternIndexErrorRetried(t *testing.T) {
	idx := &fakeIndex{}
	fail := true
	cfg := createDefaultConfig()
	h := newHarness(t, cfg)
	require.NoError(t, h.g.watchPatterns(func(ctx context.Context, since, until time.Time, yield func(patternRun) error) error {
		if fail {
			return fmt.Errorf("database is locked")
		}
		return idx.source(ctx, since, until, yield)
	}))
	idx.add("p", h.clock.Now())
	_, ld := h.pass(cfg.Patterns.Settle + time.Second)
	assert.Zero(t, ld.LogRecordCount())
	fail = false
	md, ld := h.pass(cfg.Patterns.Interval)
	assert.Len(t, alertsOf(ld), 1)
	assert.Equal(t, map[string]int64{"p": 1}, counts(md, MetricPatternRuns, AttrPattern))
}
