package tieredexporter // import "github.com/runagain/runagain/exporter/tieredexporter"

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/clickhouseexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/internal/sharedcomponent"
	"github.com/runagain/runagain/internal/store"
)

// tieredExporter fans each batch out to one exporterhelper pipeline per tier and acknowledges
// once every tier has accepted it (into its queue, or written when the queue is disabled). The
// factory makes one instance per signal. The tiers' pipelines are built at Start, from the
// tiers the runagain_storage extension configures (found through the host), or from the
// private storage of an inline configuration.
type tieredExporter struct {
	set     exporter.Settings
	cfg     *Config
	sig     signal
	private *sharedcomponent.Holder[*runagainstorageextension.Storage] // inline backends; nil otherwise

	traces []exporter.Traces
	logs   []exporter.Logs
}

type signal int

const (
	signalTraces signal = iota
	signalLogs
)

// private holds the storage of each inline-configured tiered exporter, shared by its traces
// and logs instances (one writer per SQLite file, one janitor per location).
var private = sharedcomponent.NewMap[component.ID, *runagainstorageextension.Storage]()

func newExporter(_ context.Context, set exporter.Settings, cfg *Config, sig signal, now func() time.Time) (*tieredExporter, error) {
	e := &tieredExporter{set: set, cfg: cfg, sig: sig}
	if cfg.inline() {
		h, err := private.LoadOrStore(set.ID, func() (*runagainstorageextension.Storage, error) {
			return runagainstorageextension.New(cfg.storageConfig(), set.TelemetrySettings, now)
		})
		if err != nil {
			return nil, err
		}
		e.private = h
	}
	return e, nil
}

// build creates the tiers' pipelines for st's tiers.
func (e *tieredExporter) build(ctx context.Context, st *runagainstorageextension.Storage) error {
	for _, name := range st.Tiers() {
		var sending TierSending
		switch name {
		case store.TierHot:
			sending = e.cfg.hotSending()
		case store.TierWarm:
			sending = e.cfg.warmSending()
		case store.TierCold:
			sending = e.cfg.coldSending()
		}
		if name == store.TierHot {
			if ch, ret, ok := st.HotClickHouse(); ok {
				if err := e.addContribClickHouse(ctx, contribConfig(ch, ret, sending)); err != nil {
					return err
				}
				continue
			}
		}
		b, err := st.Backend(name)
		if err != nil {
			return err
		}
		if err := e.addTier(ctx, name, b, sending); err != nil {
			return err
		}
	}
	if e.private != nil && e.cfg.Hot.HasValue() && e.cfg.Hot.Get().ClickHouse.HasValue() {
		chCfg := *e.cfg.Hot.Get().ClickHouse.Get()
		chCfg.TTL = e.cfg.Hot.Get().Retention
		return e.addContribClickHouse(ctx, &chCfg)
	}
	return nil
}

func (e *tieredExporter) addTier(ctx context.Context, name string, b runagainstorageextension.Backend, s TierSending) error {
	tset := e.set
	// A distinct id per tier keeps persistent-queue keys apart in a shared storage extension.
	tset.ID = component.NewIDWithName(e.set.ID.Type(), joinName(e.set.ID.Name(), name))
	opts := []exporterhelper.Option{
		exporterhelper.WithTimeout(s.TimeoutConfig),
		exporterhelper.WithRetry(s.BackOff),
		exporterhelper.WithQueue(s.Queue),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
	}
	switch e.sig {
	case signalTraces:
		te, err := exporterhelper.NewTraces(ctx, tset, e.cfg, b.WriteTraces, opts...)
		if err != nil {
			return fmt.Errorf("%s tier: %w", name, err)
		}
		e.traces = append(e.traces, te)
	case signalLogs:
		le, err := exporterhelper.NewLogs(ctx, tset, e.cfg, b.WriteLogs, opts...)
		if err != nil {
			return fmt.Errorf("%s tier: %w", name, err)
		}
		e.logs = append(e.logs, le)
	}
	return nil
}

// contribConfig is the contrib clickhouseexporter configuration of a hot tier on ClickHouse
// configured in the extension: its defaults, the connection, the TTL from the retention and
// the tier's delivery settings.
func contribConfig(ch *runagainstorageextension.ClickHouseConfig, retention time.Duration, s TierSending) *clickhouseexporter.Config {
	c := clickhouseexporter.NewFactory().CreateDefaultConfig().(*clickhouseexporter.Config)
	c.Endpoint, c.Username, c.Password, c.Database = ch.Endpoint, ch.Username, ch.Password, ch.Database
	c.ConnectionParams, c.CreateSchema, c.ClusterName, c.TTL = ch.ConnectionParams, ch.CreateSchema, ch.ClusterName, retention
	c.TimeoutSettings, c.BackOffConfig, c.QueueSettings = s.TimeoutConfig, s.BackOff, s.Queue
	return c
}

// addContribClickHouse creates the contrib clickhouseexporter from its own factory: the hot
// tier's writer on ClickHouse. It brings its own queue and retry.
func (e *tieredExporter) addContribClickHouse(ctx context.Context, chCfg *clickhouseexporter.Config) error {
	f := clickhouseexporter.NewFactory()
	cset := e.set
	// The contrib factory insists on its own type: clickhouse/tiered_<name>_hot.
	cset.ID = component.NewIDWithName(f.Type(), joinName(joinName(e.set.ID.Type().String(), e.set.ID.Name()), "hot"))
	switch e.sig {
	case signalTraces:
		te, err := f.CreateTraces(ctx, cset, chCfg)
		if err != nil {
			return fmt.Errorf("hot tier (clickhouse): %w", err)
		}
		e.traces = append(e.traces, te)
	case signalLogs:
		le, err := f.CreateLogs(ctx, cset, chCfg)
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

// Start finds the storage (the runagain_storage extension, or the private storage of inline
// backends), builds one pipeline per tier it configures and starts them.
func (e *tieredExporter) Start(ctx context.Context, host component.Host) error {
	var st *runagainstorageextension.Storage
	if e.private != nil {
		if err := e.private.Start(ctx, host); err != nil {
			return err
		}
		st = e.private.Unwrap()
	} else {
		found, err := runagainstorageextension.Find(host, e.cfg.Storage)
		if err != nil {
			return err
		}
		if found == nil {
			return errors.New("no storage: add the runagain_storage extension (extensions and service::extensions) " +
				"or configure the tiers' backends inline (hot::sqlite ...)")
		}
		st = found
	}
	if err := e.build(ctx, st); err != nil {
		return err
	}
	if len(e.components()) == 0 {
		return errors.New("no tier configured: set at least one of `hot`, `warm`, `cold` in the runagain_storage extension")
	}
	for _, c := range e.components() {
		if err := c.Start(ctx, host); err != nil {
			return err
		}
	}
	return nil
}

// Shutdown drains and stops the tiers' pipelines, then releases the private storage.
func (e *tieredExporter) Shutdown(ctx context.Context) error {
	var errs []error
	for _, c := range e.components() {
		errs = append(errs, c.Shutdown(ctx))
	}
	if e.private != nil {
		errs = append(errs, e.private.Shutdown(ctx))
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

// runJanitors runs the retention janitors of every inline-configured exporter's storage once,
// now (tests).
func runJanitors(ctx context.Context) (int64, error) {
	var total int64
	var errs []error
	for _, st := range private.Values() {
		n, err := st.RunJanitors(ctx)
		total += n
		errs = append(errs, err)
	}
	return total, errors.Join(errs...)
}
