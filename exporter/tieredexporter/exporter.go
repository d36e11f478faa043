// SPDX-License-Identifier: Apache-2.0

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
	"go.opentelemetry.io/collector/exporter/exporterhelper/xexporterhelper"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/internal/store"
)

// tieredExporter fans each batch out to one exporterhelper pipeline per tier and acknowledges
// once every tier has accepted it (into its queue, or written when the queue is disabled). The
// factory makes one instance per signal. The tiers' pipelines are built at Start, from the
// tiers the runagain_storage extension configures (found through the host).
//
// Persist once (README "Persist once"): the hot tier is given the whole request; the warm and
// cold tiers' pipelines build their records of it (store.Records: span summaries and key
// events, session partials) before their sending queues, so those queues persist about a
// hundred compressed bytes per span instead of the request (records.go). A backend that cannot
// build records is given only what its records are built from (store.TrimTraces,
// store.TrimLogs: no payloads, no payload references, no stack traces).
type tieredExporter struct {
	set exporter.Settings
	cfg *Config
	sig signal

	keys  []string // session keys (what the trimmed requests keep for the summaries)
	tiers []tierPipe
	// noRecords gives warm and cold the trimmed requests even when their backend builds records
	// (the benchmark's earlier modes).
	noRecords bool
}

// tierPipe is one tier's exporterhelper pipeline (or the contrib ClickHouse exporter).
type tierPipe struct {
	name string
	trim bool // given store.TrimTraces / store.TrimLogs of each request, not the request
	// records: the pipeline builds the tier's records of each request before its queue
	// (records.go); it is given the request as is (the records hold no payload).
	records bool
	traces  exporter.Traces
	logs    exporter.Logs
}

func (p tierPipe) component() component.Component {
	if p.traces != nil {
		return p.traces
	}
	return p.logs
}

type signal int

const (
	signalTraces signal = iota
	signalLogs
)

func newExporter(_ context.Context, set exporter.Settings, cfg *Config, sig signal) *tieredExporter {
	return &tieredExporter{set: set, cfg: cfg, sig: sig}
}

// build creates the tiers' pipelines for st's tiers.
func (e *tieredExporter) build(ctx context.Context, st runagainstorageextension.Storage) error {
	e.keys = st.SessionKeys()
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
	return nil
}

func (e *tieredExporter) addTier(ctx context.Context, name string, b runagainstorageextension.Backend, s TierSending) error {
	tset := e.set
	// A distinct id per tier keeps persistent-queue keys apart in a shared storage extension.
	tset.ID = component.NewIDWithName(e.set.ID.Type(), joinName(e.set.ID.Name(), name))
	// The options every tier shares; the queue's differs: records tiers persist records.
	opts := []exporterhelper.Option{
		exporterhelper.WithTimeout(s.TimeoutConfig),
		exporterhelper.WithRetry(s.BackOff),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
	}
	p := tierPipe{name: name, trim: name != store.TierHot}
	if rb, ok := b.(runagainstorageextension.RecordBackend); ok && p.trim && !e.noRecords {
		return e.addRecordsTier(ctx, tset, name, rb, s, opts)
	}
	opts = append(opts, exporterhelper.WithQueue(s.Queue))
	switch e.sig {
	case signalTraces:
		te, err := exporterhelper.NewTraces(ctx, tset, e.cfg, b.WriteTraces, opts...)
		if err != nil {
			return fmt.Errorf("%s tier: %w", name, err)
		}
		p.traces = te
	case signalLogs:
		le, err := exporterhelper.NewLogs(ctx, tset, e.cfg, b.WriteLogs, opts...)
		if err != nil {
			return fmt.Errorf("%s tier: %w", name, err)
		}
		p.logs = le
	}
	e.tiers = append(e.tiers, p)
	return nil
}

// addRecordsTier creates a warm or cold tier's pipeline whose sending queue holds the records
// of each request (records.go), built by rb in ConsumeTraces/ConsumeLogs. opts are addTier's
// options of every tier (timeout, retry, capabilities); the queue is added here.
func (e *tieredExporter) addRecordsTier(ctx context.Context, tset exporter.Settings, name string,
	rb runagainstorageextension.RecordBackend, s TierSending, opts []exporterhelper.Option,
) error {
	opts = append(opts, xexporterhelper.WithQueueBatch(s.Queue, xexporterhelper.QueueBatchSettings{Encoding: recordsEncoding{b: rb, sig: e.sig}}))
	p := tierPipe{name: name, trim: true, records: true}
	switch e.sig {
	case signalTraces:
		te, err := xexporterhelper.NewTracesRequest(ctx, tset, func(_ context.Context, td ptrace.Traces) (xexporterhelper.Request, error) {
			return &recordsRequest{r: rb.TraceRecords(td)}, nil
		}, writeRecords(rb), opts...)
		if err != nil {
			return fmt.Errorf("%s tier: %w", name, err)
		}
		p.traces = te
	case signalLogs:
		le, err := xexporterhelper.NewLogsRequest(ctx, tset, func(_ context.Context, ld plog.Logs) (xexporterhelper.Request, error) {
			return &recordsRequest{r: rb.LogRecords(ld)}, nil
		}, writeRecords(rb), opts...)
		if err != nil {
			return fmt.Errorf("%s tier: %w", name, err)
		}
		p.logs = le
	}
	e.tiers = append(e.tiers, p)
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
	p := tierPipe{name: store.TierHot}
	switch e.sig {
	case signalTraces:
		te, err := f.CreateTraces(ctx, cset, chCfg)
		if err != nil {
			return fmt.Errorf("hot tier (clickhouse): %w", err)
		}
		p.traces = te
	case signalLogs:
		le, err := f.CreateLogs(ctx, cset, chCfg)
		if err != nil {
			return fmt.Errorf("hot tier (clickhouse): %w", err)
		}
		p.logs = le
	}
	// the hot tier first: when it refuses, the request is refused before the others take it
	e.tiers = append([]tierPipe{p}, e.tiers...)
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
	for _, p := range e.tiers {
		cs = append(cs, p.component())
	}
	return cs
}

// Start finds the runagain_storage extension, builds one pipeline per tier it configures and
// starts them.
func (e *tieredExporter) Start(ctx context.Context, host component.Host) error {
	st, err := runagainstorageextension.Find(host, e.cfg.Storage)
	if err != nil {
		return err
	}
	if st == nil {
		return errors.New("no storage: add the runagain_storage extension (extensions and service::extensions): " +
			"it says where each tier lives (README \"Upgrade notes\")")
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

// Shutdown drains and stops the tiers' pipelines.
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

// ConsumeTraces hands td to the hot tier, then to the warm and cold tiers, whose pipelines
// queue their records of it (or its trimmed spans, store.TrimTraces, without records).
// When the hot tier refuses the request (with its queue disabled: the write itself failed, a
// full disk), the error is returned at once and the other tiers do not take it: the client
// retries the whole request. Otherwise every tier is offered its part and the errors of those
// that refused are joined (the client retries; the writes are idempotent, README "Delivery
// guarantees"). Each trimmed request is built per tier: a queue may merge the requests it holds.
func (e *tieredExporter) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	var errs []error
	for _, p := range e.tiers {
		in := td
		switch {
		case p.records && td.SpanCount() == 0:
			continue
		case p.trim && !p.records:
			in = store.TrimTraces(td, e.keys)
			if in.SpanCount() == 0 {
				continue
			}
		}
		err := p.traces.ConsumeTraces(ctx, in)
		if err != nil && p.name == store.TierHot {
			return err
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ConsumeLogs is ConsumeTraces for log records: warm and cold tiers keep the alert records only
// (their records of them, or store.TrimLogs), and are given nothing when a request holds none.
func (e *tieredExporter) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	var errs []error
	for _, p := range e.tiers {
		in := ld
		switch {
		case p.records && !store.HasAlerts(ld):
			continue // the warm and cold tiers keep alert records only
		case p.trim && !p.records:
			in = store.TrimLogs(ld, e.keys)
			if in.LogRecordCount() == 0 {
				continue
			}
		}
		err := p.logs.ConsumeLogs(ctx, in)
		if err != nil && p.name == store.TierHot {
			return err
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
