// SPDX-License-Identifier: Apache-2.0

package runagainstorageextension // import "github.com/runagain/runagain/extension/runagainstorageextension"

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/payloadref/writer"
	"github.com/runagain/runagain/internal/pins"
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/runview/rule"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/clickhousestore"
	"github.com/runagain/runagain/internal/store/coldstore"
	"github.com/runagain/runagain/internal/store/sqlitestore"
)

// Backend writes what one tier keeps of a batch. Implementations are safe for concurrent use
// (the tiered exporter's sending queues run several consumers, and its traces and logs
// instances share the backend).
type Backend interface {
	WriteTraces(ctx context.Context, td ptrace.Traces) error
	WriteLogs(ctx context.Context, ld plog.Logs) error
}

// RecordBackend is a warm or cold backend whose records (store.Records: span summaries and key
// events, or session partials) can be built apart from writing them: the tiered exporter builds
// them before the tier's sending queue, so the queue persists the records instead of the spans
// (its README, "Persist once"). WriteRecords(TraceRecords(td)) stores what WriteTraces(td) does.
type RecordBackend interface {
	Backend
	// TraceRecords and LogRecords build what the tier stores of td and ld; no I/O, no error.
	TraceRecords(td ptrace.Traces) store.Records
	LogRecords(ld plog.Logs) store.Records
	// WriteRecords stores r, idempotently (a retried write replaces what it wrote). r may merge
	// the records of several requests.
	WriteRecords(ctx context.Context, r store.Records) error
}

// opened is a backend with what closes it and the janitor that enforces its retention.
type opened struct {
	backend Backend
	close   func() error
	janitor *janitor
}

// openOptions is what every backend shares: the session keys, the prices, the ingestion clock.
type openOptions struct {
	logger *zap.Logger
	keys   []string
	prices *pricing.Prices
	now    func() time.Time
	every  time.Duration
	pins   func() pins.Source
	// payloads is the payload store the hot tier's retention sweeps (nil for none).
	payloads *writer.Store
	// noSignatures: failure_signatures is read (the writers sign no run).
	noSignatures bool
	// memo is shared by the SQLite hot and warm writers: a failing run is signed once.
	memo *patterns.Memo
}

// hot tier on SQLite: full spans and logs.

type hotSQLite struct {
	logger *zap.Logger
	db     *sqlitestore.DB
}

// PatternRuns implements store.PatternReader over the hot tier's run index (its failure
// signatures), so agent_guard's pattern watcher reads them through the extension.
func (h *hotSQLite) PatternRuns(ctx context.Context, f store.PatternFilter, yield func(store.PatternRun) error) error {
	return h.db.PatternRuns(ctx, f, yield)
}

// PatternSignatures implements store.PatternReader.
func (h *hotSQLite) PatternSignatures(ctx context.Context, variantIDs []string) (map[string][]byte, error) {
	return h.db.PatternSignatures(ctx, variantIDs)
}

func (h *hotSQLite) WriteTraces(ctx context.Context, td ptrace.Traces) error {
	rejected, err := h.db.WriteTraces(ctx, td)
	for _, r := range rejected {
		h.logger.Warn("hot tier: span not stored", zap.Error(r))
	}
	return err
}

func (h *hotSQLite) WriteLogs(ctx context.Context, ld plog.Logs) error {
	return h.db.WriteLogs(ctx, ld)
}

// signDelay is how long the SQLite writers let the runs a commit marked, and could not sign in
// its transaction, wait before reading them back and signing them (sqlitestore.Options.SignDelay):
// a run whose spans arrive over several requests (its root last) is read back once per second,
// not once per request. A listing meanwhile signs such a run on the spot; Shutdown signs them all.
// The warm writer waits twice as long: its records trail the hot writer's by the sending queue,
// and signing after the hot writer lets it take the signature from the shared memo instead of
// reading the run back (patterns.Memo).
const signDelay = time.Second

func openHotSQLite(cfg *HotConfig, o openOptions) (*opened, error) {
	db, err := sqlitestore.Open(cfg.SQLite.Get().Path, sqlitestore.Options{SessionKeys: o.keys, Now: o.now, Prices: o.prices,
		NoSignatures: o.noSignatures, Memo: o.memo, SignDelay: signDelay})
	if err != nil {
		return nil, err
	}
	path := cfg.SQLite.Get().Path
	return &opened{backend: &hotSQLite{logger: o.logger, db: db}, close: db.Close,
		janitor: newJanitor(o, "hot", cfg.Retention, hotSQLiteExpire(db, path, o, cfg.Retention))}, nil
}

// warm tier.

type warmSQLite struct{ db *sqlitestore.WarmDB }

func (w *warmSQLite) WriteTraces(ctx context.Context, td ptrace.Traces) error {
	return w.db.WriteTraces(ctx, td)
}

func (w *warmSQLite) WriteLogs(ctx context.Context, ld plog.Logs) error {
	return w.db.WriteLogs(ctx, ld)
}

// PatternRuns implements store.PatternReader over the warm file's run index (agent_guard's
// pattern watcher reads it when the hot tier keeps no signatures).
func (w *warmSQLite) PatternRuns(ctx context.Context, f store.PatternFilter, yield func(store.PatternRun) error) error {
	return w.db.PatternRuns(ctx, f, yield)
}

// PatternSignatures implements store.PatternReader.
func (w *warmSQLite) PatternSignatures(ctx context.Context, variantIDs []string) (map[string][]byte, error) {
	return w.db.PatternSignatures(ctx, variantIDs)
}

func (w *warmSQLite) TraceRecords(td ptrace.Traces) store.Records { return w.db.TraceRecords(td) }

func (w *warmSQLite) LogRecords(ld plog.Logs) store.Records { return w.db.LogRecords(ld) }

func (w *warmSQLite) WriteRecords(ctx context.Context, r store.Records) error {
	return w.db.WriteRecords(ctx, r)
}

// clickhouseBackend creates its schema on first use (retried on every write until it succeeds),
// so an unreachable server at start never blocks the collector; the tier's queue holds the data.
type clickhouseBackend struct {
	w      *clickhousestore.Writer
	create func(context.Context) error
	mu     sync.Mutex
	ready  bool
}

func (c *clickhouseBackend) ensure(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ready || c.create == nil {
		return nil
	}
	if err := c.create(ctx); err != nil {
		return err
	}
	c.ready = true
	return nil
}

type warmClickHouse struct{ clickhouseBackend }

func (w *warmClickHouse) WriteTraces(ctx context.Context, td ptrace.Traces) error {
	if err := w.ensure(ctx); err != nil {
		return err
	}
	return w.w.WriteWarmTraces(ctx, td)
}

func (w *warmClickHouse) WriteLogs(ctx context.Context, ld plog.Logs) error {
	if err := w.ensure(ctx); err != nil {
		return err
	}
	return w.w.WriteWarmLogs(ctx, ld)
}

// reader reads what the writer wrote (clickhousestore.WarmReader on the same handle).
func (w *warmClickHouse) reader() *clickhousestore.WarmReader {
	return &clickhousestore.WarmReader{DB: w.w.DB, Schema: w.w.Schema, SessionKeys: w.w.SessionKeys}
}

// PatternRuns implements store.PatternReader over the ClickHouse warm tier's run index and its
// failure signatures (clickhousestore, patternindex.go).
func (w *warmClickHouse) PatternRuns(ctx context.Context, f store.PatternFilter, yield func(store.PatternRun) error) error {
	return w.reader().PatternRuns(ctx, f, yield)
}

// PatternSignatures implements store.PatternReader.
func (w *warmClickHouse) PatternSignatures(ctx context.Context, variantIDs []string) (map[string][]byte, error) {
	return w.reader().PatternSignatures(ctx, variantIDs)
}

func (w *warmClickHouse) TraceRecords(td ptrace.Traces) store.Records {
	return w.w.WarmRecords(td, plog.Logs{})
}

func (w *warmClickHouse) LogRecords(ld plog.Logs) store.Records {
	return w.w.WarmRecords(ptrace.Traces{}, ld)
}

func (w *warmClickHouse) WriteRecords(ctx context.Context, r store.Records) error {
	if err := w.ensure(ctx); err != nil {
		return err
	}
	return w.w.WriteWarmRecords(ctx, r)
}

// OpenDB opens a database/sql handle on the configured ClickHouse (clickhousestore.OpenDB).
func (c *ClickHouseConfig) OpenDB() (*sql.DB, error) {
	return clickhousestore.OpenDB(c.Endpoint, c.Username, string(c.Password), c.ConnectionParams)
}

func openWarm(cfg *WarmConfig, o openOptions) (*opened, error) {
	if cfg.ClickHouse.HasValue() {
		ch := cfg.ClickHouse.Get()
		db, err := ch.OpenDB()
		if err != nil {
			return nil, err
		}
		w := &clickhousestore.Writer{DB: db, SessionKeys: o.keys, Now: o.now, Prices: o.prices, NoSignatures: o.noSignatures,
			Schema: clickhousestore.Schema{Database: ch.Database, Cluster: ch.ClusterName, WarmTTL: cfg.Retention}}
		b := &warmClickHouse{clickhouseBackend{w: w}}
		if ch.CreateSchema {
			b.create = w.CreateWarm
		}
		return &opened{backend: b, close: db.Close}, nil
	}
	db, err := sqlitestore.OpenWarm(cfg.SQLite.Get().Path, sqlitestore.Options{SessionKeys: o.keys, Now: o.now, Prices: o.prices,
		NoSignatures: o.noSignatures, Memo: o.memo, SignDelay: 2 * signDelay})
	if err != nil {
		return nil, err
	}
	return &opened{backend: &warmSQLite{db: db}, close: db.Close,
		janitor: newJanitor(o, "warm", cfg.Retention, db.ExpireExcept)}, nil
}

// cold tier.

type coldParquet struct {
	st     *coldstore.Store
	keys   []string
	now    func() time.Time
	prices *pricing.Prices
	join   *rule.Window // cold::join_window (nil: the rule within each batch)
}

func (c *coldParquet) partials(td ptrace.Traces, ld plog.Logs) []store.SessionPartial {
	return store.JoinedPartials(td, ld, c.keys, c.now().UnixNano(), c.prices, c.join)
}

func (c *coldParquet) WriteTraces(ctx context.Context, td ptrace.Traces) error {
	_, err := c.st.Write(ctx, c.partials(td, plog.Logs{}))
	return err
}

func (c *coldParquet) WriteLogs(ctx context.Context, ld plog.Logs) error {
	_, err := c.st.Write(ctx, c.partials(ptrace.Traces{}, ld))
	return err
}

func (c *coldParquet) TraceRecords(td ptrace.Traces) store.Records {
	return store.Records{Partials: c.partials(td, plog.Logs{})}
}

func (c *coldParquet) LogRecords(ld plog.Logs) store.Records {
	return store.Records{Partials: c.partials(ptrace.Traces{}, ld)}
}

// WriteRecords writes the partials of r as they are, one row per session and request batch, in
// one Parquet object per date, also when a queue merged several requests (coldstore.Store.Write):
// a request sent again after a crash, merged with other ones, counts once, where rows combined
// into one partial per session (the write before) would have counted it twice.
func (c *coldParquet) WriteRecords(ctx context.Context, r store.Records) error {
	_, err := c.st.Write(ctx, r.Partials)
	return err
}

type coldClickHouse struct{ clickhouseBackend }

func (c *coldClickHouse) WriteTraces(ctx context.Context, td ptrace.Traces) error {
	if err := c.ensure(ctx); err != nil {
		return err
	}
	return c.w.WriteCold(ctx, td, plog.Logs{})
}

func (c *coldClickHouse) WriteLogs(ctx context.Context, ld plog.Logs) error {
	if err := c.ensure(ctx); err != nil {
		return err
	}
	return c.w.WriteCold(ctx, ptrace.Traces{}, ld)
}

func (c *coldClickHouse) TraceRecords(td ptrace.Traces) store.Records {
	return c.w.ColdRecords(td, plog.Logs{})
}

func (c *coldClickHouse) LogRecords(ld plog.Logs) store.Records {
	return c.w.ColdRecords(ptrace.Traces{}, ld)
}

func (c *coldClickHouse) WriteRecords(ctx context.Context, r store.Records) error {
	if err := c.ensure(ctx); err != nil {
		return err
	}
	return c.w.WriteColdRecords(ctx, r)
}

var (
	_ RecordBackend = (*warmSQLite)(nil)
	_ RecordBackend = (*warmClickHouse)(nil)
	_ RecordBackend = (*coldParquet)(nil)
	_ RecordBackend = (*coldClickHouse)(nil)

	_ store.PatternReader = (*hotSQLite)(nil)
	_ store.PatternReader = (*warmSQLite)(nil)
	_ store.PatternReader = (*warmClickHouse)(nil)
)

func openCold(ctx context.Context, cfg *ColdConfig, o openOptions) (*opened, error) {
	if cfg.ClickHouse.HasValue() {
		ch := cfg.ClickHouse.Get()
		db, err := ch.OpenDB()
		if err != nil {
			return nil, err
		}
		w := &clickhousestore.Writer{DB: db, SessionKeys: o.keys, Now: o.now, Prices: o.prices,
			Schema: clickhousestore.Schema{Database: ch.Database, Cluster: ch.ClusterName, ColdTTL: cfg.Retention},
			Join:   rule.NewWindow(cfg.JoinWindow.MaxSpans, cfg.JoinWindow.IdleTimeout)}
		b := &coldClickHouse{clickhouseBackend{w: w}}
		if ch.CreateSchema {
			b.create = w.CreateCold
		}
		return &opened{backend: b, close: db.Close}, nil
	}
	st, err := coldstore.Open(ctx, cfg.Parquet.Get().URL, coldstore.Options{Now: o.now})
	if err != nil {
		return nil, err
	}
	// Cold Parquet files hold many sessions each: the janitor deletes whole files by date and
	// does not consult the pins (the cold tier is kept forever by default).
	expire := func(ctx context.Context, cutoff time.Time, _ map[string]bool) (int64, error) {
		return st.Expire(ctx, cutoff)
	}
	return &opened{backend: &coldParquet{st: st, keys: o.keys, now: o.now, prices: o.prices,
		join: rule.NewWindow(cfg.JoinWindow.MaxSpans, cfg.JoinWindow.IdleTimeout)}, close: st.Close,
		janitor: newJanitor(o, "cold", cfg.Retention, expire)}, nil
}
