// SPDX-License-Identifier: Apache-2.0

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/runagainattr"
)

// Alert kinds of the pattern watcher (alert.kind on its alert records and runagain.alerts).
const (
	// AlertPatternNew: a failure pattern (internal/patterns) no run of the run index had before.
	AlertPatternNew = runagainattr.AlertKindPatternNew
	// AlertPatternRateJump: a pattern's runs in the last patterns.rate_jump.window are at least
	// patterns.rate_jump.factor times what its decayed baseline expects for one window.
	AlertPatternRateJump = runagainattr.AlertKindPatternRateJump
	// AttrPattern is the pattern id on runagain.pattern.runs and on the pattern alerts.
	AttrPattern = "pattern"
	// AttrPatternRuns (int) on a rate-jump alert: runs of the pattern in the window;
	// AttrPatternExpected (double): the runs its baseline expects in one window.
	AttrPatternRuns     = "runagain.alert.pattern.runs"
	AttrPatternExpected = "runagain.alert.pattern.expected_runs"
)

// patternRun is one failing run of the run index, as the watcher reads it.
type patternRun struct {
	trace   string // 32 hex digits
	session string
	pattern string // patterns.Signature.ID; "" for a passing run (not counted)
	agent   string
	start   time.Time
}

// patternSource streams the failing runs of the run index that started in [since, until), in
// any order, and the ids of every pattern the index holds (known: since is zero).
type patternSource func(ctx context.Context, since, until time.Time, yield func(patternRun) error) error

// patternWatcher turns the run index's failure patterns into metrics and alerts: every
// patterns.interval it reads the failing runs that started since its last read and are at least
// patterns.settle old (a run is counted once, with the pattern its row has then), counts each in
// runagain.pattern.runs{pattern}, and raises
//   - a pattern_new alert (and runagain.patterns.new) for a pattern no earlier run had: the
//     patterns the index held when the watcher started are read once at start, so a restart does
//     not call them new again;
//   - a pattern_rate_jump alert when the pattern's runs in the last rate_jump.window reach
//     rate_jump.min_runs and rate_jump.factor times its baseline (runs that left the window,
//     exponentially decayed with rate_jump.baseline_half_life, per window); at most one per
//     pattern per window; a pattern whose first run started less than two windows before has
//     no baseline and raises none.
//
// Runs are counted by their start time (event time), in start order, so the windows, the
// baseline and the alerts depend on the runs alone, not on when they were read. At start the
// watcher reads the index's history once (seed): the patterns it holds are known (not new), each
// pattern's first run dates it, and the runs of the last historyWindow are replayed through the
// windows and the baseline without raising anything. A watcher started again (a collector
// restart) therefore holds the state one that ran through holds, raises the rate jumps it would
// have raised, with the same record ids, and none for a window already alerted.
//
// Each alert record points at the run that raised it (its trace id; no span id) and has a
// deterministic runagain.record.id: the kind, the pattern, and the run (new) or the window's
// start (rate jump).
type patternWatcher struct {
	cfg     PatternsConfig
	source  patternSource
	known   *simplelru.LRU[string, *patternState]
	counted *simplelru.LRU[string, struct{}] // trace ids counted (a run is read by two scans at the edge)
	cursor  time.Time                        // runs that started before it were read
	seeded  bool
}

type patternState struct {
	first     time.Time // start of the pattern's first run in the index
	buckets   [nBuckets]bucket
	base      float64 // decayed runs that left the window
	lastFold  int64
	lastAlert int64 // window index of the last rate-jump alert (-1: none)
}

func newPatternWatcher(cfg PatternsConfig, source patternSource, now time.Time) (*patternWatcher, error) {
	known, err := simplelru.NewLRU[string, *patternState](cfg.MaxPatterns, nil)
	if err != nil {
		return nil, fmt.Errorf("patterns.max_patterns: %w", err)
	}
	counted, err := simplelru.NewLRU[string, struct{}](max(cfg.MaxPatterns, 1024), nil)
	if err != nil {
		return nil, err
	}
	return &patternWatcher{cfg: cfg, source: source, known: known, counted: counted, cursor: now.Add(-cfg.Settle)}, nil
}

func (w *patternWatcher) width() int64 { return max(int64(w.cfg.RateJump.Window)/nBuckets, 1) }

// historyWindow is how far back the seed replays runs into the windows and baselines: the
// window and ten baseline half-lives, past which a run weighs less than 2^-10 of its weight in
// the baseline (with the defaults, 10 days and an hour).
func (w *patternWatcher) historyWindow() time.Duration {
	return w.cfg.RateJump.Window + 10*w.cfg.RateJump.BaselineHalfLife
}

// seed reads the patterns the index already holds (they are not new), the start of each one's
// first run, and replays the runs of the last historyWindow before the cursor into their
// windows and baselines, oldest first, raising nothing: what a watcher that ran through counted.
// The read is one pass over the index's history; it keeps a pattern id and start per run of the
// history window.
func (w *patternWatcher) seed(ctx context.Context) error {
	first := map[string]time.Time{}
	var replay []patternRun
	from := w.cursor.Add(-w.historyWindow())
	err := w.source(ctx, time.Time{}, w.cursor, func(r patternRun) error {
		if r.pattern == "" {
			return nil
		}
		if f, ok := first[r.pattern]; !ok || r.start.Before(f) {
			first[r.pattern] = r.start
		}
		if !r.start.Before(from) {
			replay = append(replay, patternRun{trace: r.trace, pattern: r.pattern, start: r.start})
		}
		return nil
	})
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(first))
	for id := range first {
		ids = append(ids, id)
	}
	// Oldest first, so the LRU keeps the most recent patterns when there are more than it holds.
	slices.SortFunc(ids, func(a, b string) int { return first[a].Compare(first[b]) })
	for _, id := range ids {
		if _, ok := w.known.Get(id); !ok {
			w.known.Add(id, w.newState(first[id]))
		}
	}
	sortRuns(replay)
	for _, r := range replay {
		if ps, ok := w.known.Get(r.pattern); ok {
			w.add(ps, r.start)
		}
	}
	w.seeded = true
	return nil
}

func (w *patternWatcher) newState(first time.Time) *patternState {
	ps := &patternState{first: first, lastFold: -1, lastAlert: -1}
	for i := range ps.buckets {
		ps.buckets[i].idx = -1
	}
	return ps
}

// collect reads the runs that started in [cursor, now-settle) and are not counted yet (I/O
// only: the watcher's own state, no guard state), oldest first.
func (w *patternWatcher) collect(ctx context.Context, now time.Time) ([]patternRun, error) {
	if !w.seeded {
		if err := w.seed(ctx); err != nil {
			return nil, fmt.Errorf("reading the run index's patterns: %w", err)
		}
	}
	until := now.Add(-w.cfg.Settle)
	if !until.After(w.cursor) {
		return nil, nil
	}
	var runs []patternRun
	err := w.source(ctx, w.cursor, until, func(r patternRun) error {
		if r.pattern != "" && !w.counted.Contains(r.trace) {
			runs = append(runs, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the run index's patterns: %w", err)
	}
	w.cursor = until
	// Oldest first, so the first run of a new pattern is the one its alert points at.
	sortRuns(runs)
	return runs, nil
}

// apply counts runs (from collect) and raises what they call for into b (under the guard's lock).
func (w *patternWatcher) apply(runs []patternRun, now time.Time, b *batch) {
	ts := pcommon.NewTimestampFromTime(now)
	b.cur = ts
	for _, r := range runs {
		if w.counted.Contains(r.trace) {
			continue
		}
		w.counted.Add(r.trace, struct{}{})
		trace := parseTraceID(r.trace)
		ref := spanRef{trace: trace}
		s := b.st.agg.patternRuns(r.pattern, w.cfg.MaxSeries, ts)
		b.st.agg.record(s, 1, exemplar{trace: trace, ts: ts})
		ps, ok := w.known.Get(r.pattern)
		if !ok {
			ps = w.newState(r.start)
			w.known.Add(r.pattern, ps)
			b.st.agg.record(b.st.agg.get(mPatternsNew, "", nil, ts), 1, exemplar{trace: trace, ts: ts})
			b.raisePattern(&alert{kind: AlertPatternNew, agent: r.agent, session: r.session, at: ref, subject: kv{AttrPattern, r.pattern},
				message: fmt.Sprintf("new failure pattern %s: first seen in run %s (runagain patterns show %s)", r.pattern, r.trace, r.pattern)},
				r.pattern, r.trace)
		}
		n, expected, jump := w.add(ps, r.start)
		if jump {
			win := w.windowIndex(r.start)
			b.raisePattern(&alert{kind: AlertPatternRateJump, agent: r.agent, session: r.session, at: ref, subject: kv{AttrPattern, r.pattern},
				evidence: []evidence{{AttrPatternRuns, int64(n)}, {AttrPatternExpected, expected}},
				message:  fmt.Sprintf("failure pattern %s: %d runs in %s, its baseline expects %.1f (runagain patterns show %s)", r.pattern, n, w.cfg.RateJump.Window, expected, r.pattern)},
				r.pattern, time.Unix(0, win*int64(w.cfg.RateJump.Window)).UTC().Format(time.RFC3339))
		}
	}
}

func (w *patternWatcher) windowIndex(now time.Time) int64 {
	return now.UnixNano() / max(int64(w.cfg.RateJump.Window), 1)
}

// add counts one run of ps that started at now (event time: runs are added in start order) and
// tells whether the window's count jumped. The expected runs per window are the baseline's
// decayed count over the decayed time it covers: with T the time between the pattern's first
// run and the window's start, the count of a steady rate r decays to r*h/ln2*(1-2^(-T/h)) for
// half-life h. No jump before one whole window of baseline (T >= window).
func (w *patternWatcher) add(ps *patternState, now time.Time) (n int, expected float64, jump bool) {
	width := w.width()
	idx := now.UnixNano() / width
	for i := range ps.buckets {
		if bk := &ps.buckets[i]; bk.idx >= 0 && bk.idx <= idx-nBuckets {
			w.fold(ps, bk)
		}
	}
	bk := &ps.buckets[idx%nBuckets]
	if bk.idx != idx {
		w.fold(ps, bk)
		bk.idx = idx
	}
	bk.total++
	for _, x := range ps.buckets {
		if x.idx >= 0 {
			n += x.total
		}
	}
	rj := w.cfg.RateJump
	base := now.Sub(ps.first) - rj.Window
	if !rj.Enabled || base < rj.Window {
		return n, 0, false
	}
	hl := float64(rj.BaselineHalfLife)
	covered := hl / math.Ln2 * (1 - math.Exp2(-float64(base)/hl))
	expected = ps.base * float64(rj.Window) / covered
	win := w.windowIndex(now)
	if n >= rj.MinRuns && float64(n) >= rj.Factor*expected && ps.lastAlert != win {
		ps.lastAlert = win
		return n, expected, true
	}
	return n, expected, false
}

func (w *patternWatcher) fold(ps *patternState, bk *bucket) {
	if bk.total > 0 {
		decay := 1.0
		if ps.lastFold >= 0 && bk.idx > ps.lastFold {
			decay = math.Exp2(-float64((bk.idx-ps.lastFold)*w.width()) / float64(w.cfg.RateJump.BaselineHalfLife))
		}
		ps.base = ps.base*decay + float64(bk.total)
		if bk.idx > ps.lastFold {
			ps.lastFold = bk.idx
		}
	}
	*bk = bucket{idx: -1}
}

// raisePattern raises a pattern alert: counted in runagain.alerts like every alert, with its
// record id made of the kind, the pattern and key.
func (b *batch) raisePattern(a *alert, pattern, key string) {
	a.recordID = runagainattr.RecordIDOf(AlertEventName, a.kind, pattern, key)
	b.raise(a)
}

// patternRuns is the runagain.pattern.runs series of pattern: at most maxSeries patterns get a
// series of their own; runs of any further pattern are counted in one overflow series with
// otel.metric.overflow=true and no pattern (as the contrib span_metrics connector's
// aggregation_cardinality_limit does).
func (a *aggregator) patternRuns(pattern string, maxSeries int, now pcommon.Timestamp) *series {
	key := "p\x00" + pattern
	if s, ok := a.series[key]; ok {
		return s
	}
	if a.patternSeries >= maxSeries || len(a.series) >= a.max {
		return a.overflow(mPatternRuns, now)
	}
	a.patternSeries++
	s := a.newSeries(mPatternRuns, "", []kv{{AttrPattern, pattern}}, now)
	a.series[key] = s
	return s
}

func sortRuns(runs []patternRun) {
	slices.SortFunc(runs, func(a, b patternRun) int {
		if c := a.start.Compare(b.start); c != 0 {
			return c
		}
		return cmp.Compare(a.trace, b.trace)
	})
}

func parseTraceID(s string) pcommon.TraceID {
	var id pcommon.TraceID
	if b, err := hex.DecodeString(s); err == nil && len(b) == len(id) {
		copy(id[:], b)
	}
	return id
}
