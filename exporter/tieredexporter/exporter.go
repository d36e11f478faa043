package tieredexporter // import "github.com/runagain/runagain/exporter/tieredexporter"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/clickhouseexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// tier is one storage tier behind its own exporterhelper pipeline (queue, retry, timeout). Its
// backend is shared by the traces and logs instances of one configuration (see acquire).
type tier struct {
	name    string
	key     string // shared-resource key: backend kind and location
	sending TierSending
	open    func(ctx context.Context) (*resource, error)

	mu  sync.Mutex
	res *resource
}

func (t *tier) start(ctx context.Context, _ component.Host) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.res != nil {
		return nil
	}
	r, err := acquire(ctx, t.key, t.open)
	if err != nil {
		return fmt.Errorf("%s tier: %w", t.name, err)
	}
	t.res = r
	return nil
}

func (t *tier) shutdown(context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.res == nil {
		return nil
	}
	t.res = nil
	return release(t.key)
}

func (t *tier) pushTraces(ctx context.Context, td ptrace.Traces) error {
	return t.res.backend.writeTraces(ctx, td)
}

func (t *tier) pushLogs(ctx context.Context, ld plog.Logs) error {
	return t.res.backend.writeLogs(ctx, ld)
}

// tieredExporter fans each batch out to one exporterhelper pipeline per tier and acknowledges
// once every tier has accepted it (into its queue, or written when the queue is disabled). The
// factory makes one instance per signal.
type tieredExporter struct {
	traces []exporter.Traces
	logs   []exporter.Logs
}

type signal int

const (
	signalTraces signal = iota
	signalLogs
)

func newExporter(ctx context.Context, set exporter.Settings, cfg *Config, sig signal, now func() time.Time) (*tieredExporter, error) {
	e := &tieredExporter{}
	var tiers []*tier
	interval := cfg.JanitorInterval
	if interval <= 0 {
		interval = DefaultJanitorInterval
	}
	if cfg.Hot.HasValue() {
		hot := cfg.Hot.Get()
		if hot.ClickHouse.HasValue() {
			if err := e.addContribClickHouse(ctx, set, hot, sig); err != nil {
				return nil, err
			}
		} else {
			tiers = append(tiers, hotSQLiteTier(set.Logger, hot, cfg.SessionKeys, now, interval))
		}
	}
	if cfg.Warm.HasValue() {
		tiers = append(tiers, warmTier(set.Logger, cfg.Warm.Get(), cfg.SessionKeys, now, interval))
	}
	if cfg.Cold.HasValue() {
		tiers = append(tiers, coldTier(set.Logger, cfg.Cold.Get(), cfg.SessionKeys, now, interval))
	}
	for _, t := range tiers {
		tset := set
		// A distinct id per tier keeps persistent-queue keys apart in a shared storage extension.
		tset.ID = component.NewIDWithName(set.ID.Type(), joinName(set.ID.Name(), t.name))
		s := t.sending
		opts := []exporterhelper.Option{
			exporterhelper.WithStart(t.start),
			exporterhelper.WithShutdown(t.shutdown),
			exporterhelper.WithTimeout(s.TimeoutConfig),
			exporterhelper.WithRetry(s.BackOff),
			exporterhelper.WithQueue(s.Queue),
			exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		}
		switch sig {
		case signalTraces:
			te, err := exporterhelper.NewTraces(ctx, tset, cfg, t.pushTraces, opts...)
			if err != nil {
				return nil, fmt.Errorf("%s tier: %w", t.name, err)
			}
			e.traces = append(e.traces, te)
		case signalLogs:
			le, err := exporterhelper.NewLogs(ctx, tset, cfg, t.pushLogs, opts...)
			if err != nil {
				return nil, fmt.Errorf("%s tier: %w", t.name, err)
			}
			e.logs = append(e.logs, le)
		}
	}
	return e, nil
}

// addContribClickHouse creates the contrib clickhouseexporter from its own factory with the
// nested configuration, its TTL set to the hot retention. It brings its own queue and retry.
func (e *tieredExporter) addContribClickHouse(ctx context.Context, set exporter.Settings, hot *HotConfig, sig signal) error {
	f := clickhouseexporter.NewFactory()
	chCfg := *hot.ClickHouse.Get()
	chCfg.TTL = hot.Retention
	cset := set
	// The contrib factory insists on its own type: clickhouse/tiered_<name>_hot.
	cset.ID = component.NewIDWithName(f.Type(), joinName(joinName(set.ID.Type().String(), set.ID.Name()), "hot"))
	switch sig {
	case signalTraces:
		te, err := f.CreateTraces(ctx, cset, &chCfg)
		if err != nil {
			return fmt.Errorf("hot tier (clickhouse): %w", err)
		}
		e.traces = append(e.traces, te)
	case signalLogs:
		le, err := f.CreateLogs(ctx, cset, &chCfg)
		if err != nil {
			return fmt.Errorf("hot tier (clickhouse): %w", err)
		}
		e.logs = append(e.logs, le)
	}
	return nil
}

func joinName(base, tier string) string {
	if base == "" {
		return tier
	}
	return base + "_" + tier
}

func (e *tieredExporter) components() []component.Component {
	var cs []component.Component
	for _, t := range e.traces {
		cs = append(cs, t)
	}
	for _, l := range e.logs {
		cs = append(cs, l)
	}
	return cs
}

func (e *tieredExporter) Start(ctx context.Context, host component.Host) error {
	for _, c := range e.components() {
		if err := c.Start(ctx, host); err != nil {
			return err
		}
	}
	return nil
}

func (e *tieredExporter) Shutdown(ctx context.Context) error {
	var errs []error
	for _, c := range e.components() {
		errs = append(errs, c.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

func (e *tieredExporter) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

func (e *tieredExporter) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	var errs []error
	for _, t := range e.traces {
		errs = append(errs, t.ConsumeTraces(ctx, td))
	}
	return errors.Join(errs...)
}

func (e *tieredExporter) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	var errs []error
	for _, l := range e.logs {
		errs = append(errs, l.ConsumeLogs(ctx, ld))
	}
	return errors.Join(errs...)
}

// The traces and logs instances of one exporter (and several exporters pointed at one
// location) share one backend handle per location, so there is one writer per SQLite file and
// one retention janitor per location.
var (
	sharedMu  sync.Mutex
	resources = map[string]*resource{}
)

type resource struct {
	backend backend
	close   func() error
	janitor *janitor
	refs    int
}

func acquire(ctx context.Context, key string, open func(context.Context) (*resource, error)) (*resource, error) {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if r, ok := resources[key]; ok {
		r.refs++
		return r, nil
	}
	r, err := open(ctx)
	if err != nil {
		return nil, err
	}
	r.refs = 1
	if r.janitor != nil {
		r.janitor.start()
	}
	resources[key] = r
	return r, nil
}

func release(key string) error {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	r, ok := resources[key]
	if !ok {
		return nil
	}
	r.refs--
	if r.refs > 0 {
		return nil
	}
	delete(resources, key)
	if r.janitor != nil {
		r.janitor.stop()
	}
	return r.close()
}

// janitor enforces a retention on a backend without TTL: at start and every interval it
// deletes what was ingested before now - retention.
type janitor struct {
	name      string
	every     time.Duration
	retention time.Duration
	now       func() time.Time
	expire    func(ctx context.Context, cutoff time.Time) (int64, error)
	logger    *zap.Logger

	cancel context.CancelFunc
	done   chan struct{}
}

func newJanitor(logger *zap.Logger, name string, every, retention time.Duration, now func() time.Time,
	expire func(context.Context, time.Time) (int64, error)) *janitor {
	if retention <= 0 {
		return nil
	}
	return &janitor{name: name, every: every, retention: retention, now: now, expire: expire, logger: logger}
}

// runOnce deletes what is past retention now and returns how much it deleted.
func (j *janitor) runOnce(ctx context.Context) (int64, error) {
	cutoff := j.now().Add(-j.retention)
	n, err := j.expire(ctx, cutoff)
	if err != nil {
		j.logger.Warn("retention janitor failed; will retry", zap.String("tier", j.name), zap.Error(err))
	} else if n > 0 {
		j.logger.Info("retention janitor deleted expired data", zap.String("tier", j.name),
			zap.Int64("deleted", n), zap.Time("ingested_before", cutoff))
	}
	return n, err
}

func (j *janitor) start() {
	ctx, cancel := context.WithCancel(context.Background())
	j.cancel, j.done = cancel, make(chan struct{})
	go func() {
		defer close(j.done)
		_, _ = j.runOnce(ctx)
		t := time.NewTicker(j.every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_, _ = j.runOnce(ctx)
			}
		}
	}()
}

func (j *janitor) stop() {
	j.cancel()
	<-j.done
}

// runJanitors runs every active retention janitor once, now (tests and maintenance).
func runJanitors(ctx context.Context) (int64, error) {
	sharedMu.Lock()
	var js []*janitor
	for _, r := range resources {
		if r.janitor != nil {
			js = append(js, r.janitor)
		}
	}
	sharedMu.Unlock()
	var total int64
	var errs []error
	for _, j := range js {
		n, err := j.runOnce(ctx)
		total += n
		errs = append(errs, err)
	}
	return total, errors.Join(errs...)
}
