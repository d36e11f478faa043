package tieredexporter // import "github.com/runagain/runagain/exporter/tieredexporter"

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/runagain/runagain/internal/store/sqlitestore"
)

// tier is one storage tier: it writes what it keeps of a batch. Implementations must be safe
// for concurrent use (the sending queue runs several consumers).
type tier interface {
	name() string
	start(ctx context.Context, host component.Host) error
	pushTraces(ctx context.Context, td ptrace.Traces) error
	pushLogs(ctx context.Context, ld plog.Logs) error
	shutdown(ctx context.Context) error
	sending() TierSending
}

// tieredExporter fans each batch out to one exporterhelper pipeline per tier (queue, retry,
// timeout of its own) and acknowledges once every tier has accepted it (into its queue, or
// written when the queue is disabled). The factory makes one instance per signal.
type tieredExporter struct {
	tiers  []tier
	traces []exporter.Traces
	logs   []exporter.Logs
}

type signal int

const (
	signalTraces signal = iota
	signalLogs
)

func newExporter(ctx context.Context, set exporter.Settings, cfg *Config, sig signal) (*tieredExporter, error) {
	e := &tieredExporter{}
	if cfg.Hot.HasValue() {
		e.tiers = append(e.tiers, newHotTier(set.Logger, cfg.Hot.Get(), cfg.SessionKeys))
	}
	for _, t := range e.tiers {
		tset := set
		// A distinct id per tier keeps persistent-queue keys apart in a shared storage extension.
		tset.ID = component.NewIDWithName(set.ID.Type(), joinName(set.ID.Name(), t.name()))
		s := t.sending()
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
				return nil, fmt.Errorf("%s tier: %w", t.name(), err)
			}
			e.traces = append(e.traces, te)
		case signalLogs:
			le, err := exporterhelper.NewLogs(ctx, tset, cfg, t.pushLogs, opts...)
			if err != nil {
				return nil, fmt.Errorf("%s tier: %w", t.name(), err)
			}
			e.logs = append(e.logs, le)
		}
	}
	return e, nil
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

// hotTier stores full spans and logs in SQLite.
type hotTier struct {
	logger      *zap.Logger
	cfg         *HotConfig
	sessionKeys []string
	mu          sync.Mutex
	db          *sqlitestore.DB
}

func newHotTier(logger *zap.Logger, cfg *HotConfig, sessionKeys []string) *hotTier {
	return &hotTier{logger: logger, cfg: cfg, sessionKeys: sessionKeys}
}

func (h *hotTier) name() string         { return "hot" }
func (h *hotTier) sending() TierSending { return h.cfg.TierSending }

func (h *hotTier) start(context.Context, component.Host) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.db != nil {
		return nil
	}
	db, err := openShared(h.cfg.SQLite.Get().Path, sqlitestore.Options{SessionKeys: h.sessionKeys})
	if err != nil {
		return err
	}
	h.db = db
	return nil
}

func (h *hotTier) pushTraces(ctx context.Context, td ptrace.Traces) error {
	rejected, err := h.db.WriteTraces(ctx, td)
	for _, r := range rejected {
		h.logger.Warn("hot tier: span not stored", zap.Error(r))
	}
	return err
}

func (h *hotTier) pushLogs(ctx context.Context, ld plog.Logs) error {
	return h.db.WriteLogs(ctx, ld)
}

func (h *hotTier) shutdown(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.db == nil {
		return nil
	}
	err := closeShared(h.cfg.SQLite.Get().Path)
	h.db = nil
	return err
}

// The traces and logs instances of one exporter (and several exporters pointed at one file)
// share a single handle per SQLite path, so there is one writer per file.
var (
	sharedMu  sync.Mutex
	sharedDBs = map[string]*sharedDB{}
)

type sharedDB struct {
	db   *sqlitestore.DB
	refs int
}

func openShared(path string, o sqlitestore.Options) (*sqlitestore.DB, error) {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if s, ok := sharedDBs[path]; ok {
		s.refs++
		return s.db, nil
	}
	db, err := sqlitestore.Open(path, o)
	if err != nil {
		return nil, err
	}
	sharedDBs[path] = &sharedDB{db: db, refs: 1}
	return db, nil
}

func closeShared(path string) error {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	s, ok := sharedDBs[path]
	if !ok {
		return nil
	}
	s.refs--
	if s.refs > 0 {
		return nil
	}
	delete(sharedDBs, path)
	return s.db.Close()
}
