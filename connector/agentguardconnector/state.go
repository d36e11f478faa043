// SPDX-License-Identifier: Apache-2.0

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"fmt"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/runview/rule"
)

// state is the analysis state of one guard: the sessions (session.go), the spans already
// counted, the metric series (metrics.go, callmetrics.go) and the enabled detectors, one per
// alert kind (detect_*.go). The guard's mutex guards all of it (simplelru has no locking).
type state struct {
	cfg       *Config
	sessions  *simplelru.LRU[string, *session]
	seen      *simplelru.LRU[spanRef, struct{}] // spans counted, so a redelivered span counts once
	join      *rule.Window                      // the counting rule across batches (nil: per batch)
	agg       *aggregator
	detectors []detector     // in alert order: cost spike, tool errors, context pressure, loop
	enders    []sessionEnder // detectors told of ended sessions
	onEnd     func(*session, bool)
	expiring  bool
	// bytes is the sum of the sessions' heapBytes when last accounted, limit its bound in
	// bytes (max_sessions_mib).
	bytes, limit int64
	call         call // the call being processed (reused: no allocation per span)
}

func newState(cfg *Config, onEnd func(*session, bool)) (*state, error) {
	st := &state{cfg: cfg, onEnd: onEnd, limit: int64(cfg.MaxSessionsMiB) << 20, agg: newAggregator(cfg.MaxSeries, cfg.Exemplars.MaxPerDataPoint, cfg.MetricConventions.names())}
	var err error
	if st.sessions, err = simplelru.NewLRU(cfg.MaxSessions, st.endSession); err != nil {
		return nil, fmt.Errorf("max_sessions: %w", err)
	}
	if st.seen, err = simplelru.NewLRU[spanRef, struct{}](max(cfg.MaxSeenSpans, 1), nil); err != nil {
		return nil, fmt.Errorf("max_seen_spans: %w", err)
	}
	st.join = rule.NewWindow(cfg.JoinWindow.MaxSpans, cfg.JoinWindow.IdleTimeout)
	if cfg.CostSpike.Enabled {
		d, err := newCostSpikeDetector(cfg.CostSpike)
		if err != nil {
			return nil, err
		}
		st.detectors = append(st.detectors, d)
		st.enders = append(st.enders, d)
	}
	if cfg.ToolErrors.Enabled {
		d, err := newToolErrorDetector(cfg.ToolErrors)
		if err != nil {
			return nil, err
		}
		st.detectors = append(st.detectors, d)
	}
	if cfg.ContextPressure.Enabled {
		d, err := newContextPressureDetector(cfg.ContextPressure)
		if err != nil {
			return nil, err
		}
		st.detectors = append(st.detectors, d)
	}
	if cfg.Loop.Enabled {
		st.detectors = append(st.detectors, newLoopDetector(cfg.Loop))
	}
	return st, nil
}

// process analyses one span: it records the call's metrics, adds its cost to the session,
// and runs the detectors, raising their alerts into b. It returns false for an LLM span with
// usage but no known price.
func (st *state) process(e *event, prices *pricing.Prices, b *batch) bool {
	c := st.newCall(e, b.now)
	defer func() { st.call = call{} }() // drop references to the batch
	if b.uncounted[rule.SpanKey{Trace: e.span.TraceID(), Span: e.span.SpanID()}] {
		c.usage = genai.Usage{} // counted on another span of the batch
	}
	b.cur = pcommon.Timestamp(c.end)
	priced := true
	if c.kind == genai.KindLLM && hasUsage(c.usage) {
		// An LLM call's RunUsage is its TokenUsage (c.usage): priced without reading it again.
		if cost := prices.UsageCost(c.usage, c.attrs, c.start); !cost.Unpriced {
			c.cost, c.costed = cost.USD, true
			c.s.cost += cost.USD
			c.s.priced++
		} else {
			priced = false
		}
	}
	st.agg.recordCall(c, b.ts)
	for _, d := range st.detectors {
		if a := d.observe(c); a != nil {
			b.raise(a)
		}
	}
	st.account(c.s)
	return priced
}

// account brings st.bytes up to date with s's state after a span changed it, then ends the
// least recently active other sessions while the total is above the limit (s, just seen, is
// the most recent: it stays even alone above the limit, and is bounded by loop.max_fingerprints).
func (st *state) account(s *session) {
	n := s.heapBytes()
	st.bytes += n - s.bytes
	s.bytes = n
	for st.limit > 0 && st.bytes > st.limit && st.sessions.Len() > 1 {
		st.sessions.RemoveOldest()
	}
}

// newCall reads e's span into st.call.
func (st *state) newCall(e *event, now time.Time) *call {
	sp := e.span
	attrs := sp.Attributes()
	s := st.session(e, now)
	c := &st.call
	*c = call{s: s, kind: e.kind, attrs: attrs, service: e.service, agent: e.agent,
		ref: spanRef{sp.TraceID(), sp.SpanID()}, start: sp.StartTimestamp()}
	if c.agent == "" {
		c.agent = s.agent
	}
	c.end = int64(max(sp.EndTimestamp(), c.start))
	if v, ok := attrs.Get(genai.AttrOperationName); ok {
		c.op = v.AsString()
	}
	if v, ok := attrs.Get(genai.AttrErrorType); ok {
		c.errType = v.AsString()
	} else if sp.Status().Code() == ptrace.StatusCodeError {
		c.errType = "_OTHER"
	}
	switch e.kind {
	case genai.KindLLM:
		if c.op == "" {
			c.op = "chat"
		}
		c.provider = genai.Provider(attrs)
		c.reqModel = genai.RequestModel(attrs)
		if v, ok := attrs.Get(genai.AttrResponseModel); ok {
			c.respModel = v.AsString()
		}
		c.usage = genai.TokenUsage(attrs)
	case genai.KindTool:
		if c.op == "" {
			c.op = "execute_tool"
		}
		c.tool = genai.ToolName(attrs)
	}
	return c
}
