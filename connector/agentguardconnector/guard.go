// SPDX-License-Identifier: Apache-2.0

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"cmp"
	"context"
	"encoding/binary"
	"slices"
	"sync"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/runagain/runagain/connector/agentguardconnector/internal/metadata"
	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/sharedcomponent"
)

// guards holds one guard per connector id, shared by its traces->metrics and traces->logs
// instances (core's sharedcomponent pattern).
var guards = sharedcomponent.NewMap[component.ID, *guard]()

func acquire(set connector.Settings, cfg *Config, clock clockwork.Clock) (*sharedcomponent.Holder[*guard], error) {
	return guards.LoadOrStore(set.ID, func() (*guard, error) {
		return newGuard(set.TelemetrySettings, cfg, clock)
	})
}

// handle is one connector instance (one signal) of a guard.
type handle struct {
	*sharedcomponent.Holder[*guard]
	g       *guard
	primary func() bool
	metrics bool // the traces to metrics instance
}

func (h *handle) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// Shutdown releases this instance. The traces to metrics instance first flushes the metrics
// recorded since the last flush: the collector stops it before the metrics pipeline it feeds,
// while the guard itself stops with the last of its instances, which may come after that
// pipeline has stopped (the traces to logs instance is not ordered against it).
func (h *handle) Shutdown(ctx context.Context) error {
	if h.metrics {
		h.g.flush(ctx)
	}
	return h.Holder.Shutdown(ctx)
}

func (h *handle) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if !h.primary() {
		return nil
	}
	return h.g.consume(ctx, td)
}

// guard is the analysis state of one agent_guard connector.
type guard struct {
	cfg    *Config
	logger *zap.Logger
	tb     *metadata.TelemetryBuilder
	clock  clockwork.Clock
	prices *pricing.Prices
	keys   []string // session keys

	mu         sync.Mutex
	metricsOut consumer.Metrics
	logsOut    consumer.Logs
	state      *state
	events     []event
	order      []orderKey
	traceAgent map[pcommon.TraceID]string
	// patterns reads the run index's failure patterns (nil: disabled, or no run index with
	// patterns); only the patterns goroutine uses it.
	patterns *patternWatcher

	// flushMu serializes flushes from taking the touched series to handing them to the metrics
	// pipeline, so cumulative points of one series reach it in order.
	flushMu sync.Mutex

	startOnce sync.Once
	stopOnce  sync.Once
	done      chan struct{}
	wg        sync.WaitGroup
}

func newGuard(ts component.TelemetrySettings, cfg *Config, clock clockwork.Clock) (*guard, error) {
	tb, err := metadata.NewTelemetryBuilder(ts)
	if err != nil {
		return nil, err
	}
	g := &guard{cfg: cfg, logger: ts.Logger, tb: tb, clock: clock, prices: pricing.DefaultPrices(), keys: genai.DefaultSessionKeys,
		done: make(chan struct{}), traceAgent: map[pcommon.TraceID]string{}}
	g.state, err = newState(cfg, g.onSessionEnd)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// Start takes the prices and session keys of the runagain_storage extension when the collector
// has one (named by storage, or the only one), so agent_guard's runagain.cost is the cost the
// tiers record (without one: the embedded table and the default session keys). Then it starts
// the idle-session and metrics-flush tickers.
func (g *guard) Start(_ context.Context, host component.Host) error {
	st, err := runagainstorageextension.Find(host, g.cfg.Storage)
	if err != nil {
		return err
	}
	if st != nil {
		g.mu.Lock()
		g.prices, g.keys = st.Prices(), st.SessionKeys()
		g.mu.Unlock()
	}
	if g.cfg.Patterns.Enabled {
		src, why := patternSourceOf(st)
		if src == nil {
			g.logger.Info("agent_guard: no failure pattern alerts: "+why, zap.String("field", "patterns"))
		} else if err := g.watchPatterns(src); err != nil {
			return err
		}
	}
	g.start()
	return nil
}

// watchPatterns sets up the pattern watcher over src; start runs it every patterns.interval.
func (g *guard) watchPatterns(src patternSource) error {
	w, err := newPatternWatcher(g.cfg.Patterns, src, g.clock.Now())
	if err != nil {
		return err
	}
	g.patterns = w
	// runagain.patterns.new exists from the start at 0, so a rule's increase() sees the first
	// new pattern (a counter series that appears at 1 has no increase).
	g.mu.Lock()
	now := pcommon.NewTimestampFromTime(g.clock.Now())
	g.state.agg.touch(g.state.agg.get(mPatternsNew, "", nil, now))
	g.mu.Unlock()
	return nil
}

// readPatterns runs one pass of the pattern watcher: the runs read outside the guard's lock,
// counted and turned into alerts under it; the alert records go to the logs pipeline at once,
// the metrics with the next flush. A run index that cannot be read is logged and read again
// at the next pass (the cursor does not move).
func (g *guard) readPatterns(ctx context.Context) {
	w := g.patterns
	if w == nil {
		return
	}
	now := g.clock.Now()
	runs, err := w.collect(ctx, now)
	if err != nil {
		g.logger.Warn("agent_guard: patterns", zap.Error(err))
		return
	}
	if len(runs) == 0 {
		return
	}
	g.mu.Lock()
	b := g.state.newBatch(now)
	w.apply(runs, now, b)
	ld := b.build()
	logsOut := g.logsOut
	g.mu.Unlock()
	for _, a := range b.alerts {
		g.tb.ConnectorAgentGuardAlerts.Add(ctx, 1, metric.WithAttributes(attribute.String("alert.kind", a.kind)))
	}
	if logsOut != nil && ld.LogRecordCount() > 0 {
		if err := logsOut.ConsumeLogs(ctx, ld); err != nil {
			g.logger.Warn("agent_guard: logs pipeline refused alert records", zap.Error(err), zap.Int("records", ld.LogRecordCount()))
		}
	}
}

// Shutdown stops the tickers and the telemetry (the traces to metrics instance has flushed the
// metrics left: see handle.Shutdown).
func (g *guard) Shutdown(context.Context) error {
	g.stop()
	return nil
}

func (g *guard) start() {
	g.startOnce.Do(func() {
		expiry := g.clock.NewTicker(g.cfg.ExpiryInterval)
		flush := g.clock.NewTicker(g.cfg.MetricsFlushInterval)
		if g.patterns != nil {
			// Its own goroutine: a pass reads the run index, which must not hold up the flushes.
			tick := g.clock.NewTicker(g.cfg.Patterns.Interval)
			g.wg.Add(1)
			go func() {
				defer g.wg.Done()
				defer tick.Stop()
				for {
					select {
					case <-g.done:
						return
					case <-tick.Chan():
						g.readPatterns(context.Background())
					}
				}
			}()
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			defer expiry.Stop()
			defer flush.Stop()
			for {
				select {
				case <-g.done:
					return
				case <-expiry.Chan():
					g.expire()
				case <-flush.Chan():
					g.flush(context.Background())
				}
			}
		}()
	})
}

func (g *guard) stop() {
	g.stopOnce.Do(func() {
		close(g.done)
		g.wg.Wait()
		g.tb.Shutdown()
	})
}

// flush sends the metric series changed since the last flush to the metrics pipeline:
// cumulative values at the clock's now, each with the exemplars recorded since the last flush
// (at most exemplars.max_per_data_point). Nothing is sent when no series changed or no metrics
// pipeline uses the connector; a pipeline that refuses the metrics is logged at warn level.
func (g *guard) flush(ctx context.Context) {
	g.flushMu.Lock()
	defer g.flushMu.Unlock()
	g.mu.Lock()
	metricsOut := g.metricsOut
	md := pmetric.NewMetrics()
	if metricsOut != nil {
		g.state.agg.emit(md, pcommon.NewTimestampFromTime(g.clock.Now()))
	}
	g.mu.Unlock()
	if md.DataPointCount() == 0 {
		return
	}
	if err := metricsOut.ConsumeMetrics(ctx, md); err != nil {
		g.logger.Warn("agent_guard: metrics pipeline refused a batch", zap.Error(err))
	}
}

// expire ends the sessions idle for longer than session_idle_timeout.
func (g *guard) expire() {
	g.mu.Lock()
	n := g.state.expire(g.clock.Now().Add(-g.cfg.SessionIdleTimeout))
	g.mu.Unlock()
	if n > 0 {
		g.tb.ConnectorAgentGuardSessionsEnded.Add(context.Background(), int64(n), metric.WithAttributes(attribute.String("reason", "idle")))
	}
}

// onSessionEnd is called (under g.mu) when a session leaves the LRU.
func (g *guard) onSessionEnd(s *session, evicted bool) {
	if evicted {
		g.tb.ConnectorAgentGuardSessionsEnded.Add(context.Background(), 1, metric.WithAttributes(attribute.String("reason", "evicted")))
	}
}

// event is one span of interest, in run order.
type event struct {
	span    ptrace.Span
	res     pcommon.Map
	kind    genai.Kind
	service string
	session string
	agent   string
	start   pcommon.Timestamp
}

func (g *guard) consume(ctx context.Context, td ptrace.Traces) error {
	g.mu.Lock()
	// Agent names per trace, from any span that names one (agent spans usually end after
	// their children and so may come later in the batch). Buffers are reused between batches.
	traceAgent := g.traceAgent
	clear(traceAgent)
	events := g.events[:0]
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		res := rs.Resource().Attributes()
		service := ""
		if v, ok := res.Get(genai.AttrServiceName); ok {
			service = v.AsString()
		}
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				sp := spans.At(k)
				// The hot tier refuses spans without ids; an alert or exemplar must not
				// point at a span that cannot be found.
				if sp.TraceID().IsEmpty() || sp.SpanID().IsEmpty() {
					continue
				}
				attrs := sp.Attributes()
				agent := genai.AgentName(attrs, res)
				if agent != "" {
					if _, ok := traceAgent[sp.TraceID()]; !ok {
						traceAgent[sp.TraceID()] = agent
					}
				}
				kind := genai.Classify(attrs)
				if kind != genai.KindLLM && kind != genai.KindTool {
					continue
				}
				if !g.state.firstDelivery(spanRef{sp.TraceID(), sp.SpanID()}) {
					continue // delivered again (a retried export): counted once
				}
				sid, ok := genai.SessionID(attrs, res, g.keys)
				if !ok {
					sid = sp.TraceID().String()
				}
				events = append(events, event{span: sp, res: res, kind: kind, service: service, session: sid,
					agent: agent, start: sp.StartTimestamp()})
			}
		}
	}
	g.events = events
	if len(events) == 0 {
		g.mu.Unlock()
		return nil
	}
	// Run order (docs/architecture.md "Order"): start time, then span id.
	order := slices.Grow(g.order[:0], len(events))[:len(events)]
	g.order = order
	for i := range events {
		sid := events[i].span.SpanID()
		order[i] = orderKey{start: uint64(events[i].start), sid: binary.BigEndian.Uint64(sid[:]), i: int32(i)}
	}
	slices.SortStableFunc(order, func(a, b orderKey) int {
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		return cmp.Compare(a.sid, b.sid)
	})

	now := g.clock.Now()
	out := g.state.newBatch(now)
	out.uncounted = g.state.join.Uncounted(td, now)
	unpriced := int64(0)
	for _, o := range order {
		e := &events[o.i]
		if e.agent == "" {
			e.agent = traceAgent[e.span.TraceID()]
		}
		if !g.state.process(e, g.prices, out) {
			unpriced++
		}
	}
	ld := out.build()
	logsOut := g.logsOut
	clear(events) // drop references to the batch
	g.mu.Unlock()

	if unpriced > 0 {
		g.tb.ConnectorAgentGuardSpansUnpriced.Add(ctx, unpriced)
	}
	for _, a := range out.alerts {
		g.tb.ConnectorAgentGuardAlerts.Add(ctx, 1, metric.WithAttributes(attribute.String("alert.kind", a.kind)))
	}
	if logsOut != nil && ld.LogRecordCount() > 0 {
		if err := logsOut.ConsumeLogs(ctx, ld); err != nil {
			g.logger.Warn("agent_guard: logs pipeline refused alert records", zap.Error(err), zap.Int("records", ld.LogRecordCount()))
		}
	}
	return nil
}

type orderKey struct {
	start, sid uint64
	i          int32
}
