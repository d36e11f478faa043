package tieredexporter // import "github.com/runagain/runagain/exporter/tieredexporter"

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/clickhousestore"
	"github.com/runagain/runagain/internal/store/coldstore"
	"github.com/runagain/runagain/internal/store/sqlitestore"
)

// backend writes what a tier keeps of a batch. Implementations are safe for concurrent use
// (the sending queue runs several consumers).
type backend interface {
	writeTraces(ctx context.Context, td ptrace.Traces) error
	writeLogs(ctx context.Context, ld plog.Logs) error
}

// hot tier on SQLite: full spans and logs.

type hotSQLite struct {
	logger *zap.Logger
	db     *sqlitestore.DB
}

func (h *hotSQLite) writeTraces(ctx context.Context, td ptrace.Traces) error {
	rejected, err := h.db.WriteTraces(ctx, td)
	for _, r := range rejected {
		h.logger.Warn("hot tier: span not stored", zap.Error(r))
	}
	return err
}

func (h *hotSQLite) writeLogs(ctx context.Context, ld plog.Logs) error {
	return h.db.WriteLogs(ctx, ld)
}

func hotSQLiteTier(logger *zap.Logger, cfg *HotConfig, keys []string, now func() time.Time, every time.Duration) *tier {
	path := cfg.SQLite.Get().Path
	return &tier{name: "hot", key: "sqlite-hot:" + path, sending: cfg.TierSending,
		open: func(context.Context) (*resource, error) {
			db, err := sqlitestore.Open(path, sqlitestore.Options{SessionKeys: keys, Now: now})
			if err != nil {
				return nil, err
			}
			return &resource{backend: &hotSQLite{logger: logger, db: db}, close: db.Close,
				janitor: newJanitor(logger, "hot", every, cfg.Retention, now, db.Expire)}, nil
		}}
}

// warm tier.

type warmSQLite struct{ db *sqlitestore.WarmDB }

func (w *warmSQLite) writeTraces(ctx context.Context, td ptrace.Traces) error {
	return w.db.WriteTraces(ctx, td)
}
func (w *warmSQLite) writeLogs(ctx context.Context, ld plog.Logs) error {
	return w.db.WriteLogs(ctx, ld)
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

func (w *warmClickHouse) writeTraces(ctx context.Context, td ptrace.Traces) error {
	if err := w.ensure(ctx); err != nil {
		return err
	}
	return w.w.WriteWarmTraces(ctx, td)
}

func (w *warmClickHouse) writeLogs(ctx context.Context, ld plog.Logs) error {
	if err := w.ensure(ctx); err != nil {
		return err
	}
	return w.w.WriteWarmLogs(ctx, ld)
}

func openClickHouse(c *ClickHouseConfig) (*sql.DB, error) {
	return clickhousestore.OpenDB(c.Endpoint, c.Username, string(c.Password), c.ConnectionParams)
}

func warmTier(logger *zap.Logger, cfg *WarmConfig, keys []string, now func() time.Time, every time.Duration) *tier {
	if cfg.ClickHouse.HasValue() {
		ch := cfg.ClickHouse.Get()
		return &tier{name: "warm", key: "clickhouse-warm:" + ch.Endpoint + "/" + ch.Database, sending: cfg.TierSending,
			open: func(context.Context) (*resource, error) {
				db, err := openClickHouse(ch)
				if err != nil {
					return nil, err
				}
				w := &clickhousestore.Writer{DB: db, SessionKeys: keys, Now: now,
					Schema: clickhousestore.Schema{Database: ch.Database, Cluster: ch.ClusterName, WarmTTL: cfg.Retention}}
				b := &warmClickHouse{clickhouseBackend{w: w}}
				if ch.CreateSchema {
					b.create = w.CreateWarm
				}
				return &resource{backend: b, close: db.Close}, nil
			}}
	}
	path := cfg.SQLite.Get().Path
	return &tier{name: "warm", key: "sqlite-warm:" + path, sending: cfg.TierSending,
		open: func(context.Context) (*resource, error) {
			db, err := sqlitestore.OpenWarm(path, sqlitestore.Options{SessionKeys: keys, Now: now})
			if err != nil {
				return nil, err
			}
			return &resource{backend: &warmSQLite{db: db}, close: db.Close,
				janitor: newJanitor(logger, "warm", every, cfg.Retention, now, db.Expire)}, nil
		}}
}

// cold tier.

type coldParquet struct {
	st   *coldstore.Store
	keys []string
	now  func() time.Time
}

func (c *coldParquet) writeTraces(ctx context.Context, td ptrace.Traces) error {
	_, err := c.st.Write(ctx, store.Partials(td, plog.Logs{}, c.keys, c.now().UnixNano()))
	return err
}

func (c *coldParquet) writeLogs(ctx context.Context, ld plog.Logs) error {
	_, err := c.st.Write(ctx, store.Partials(ptrace.Traces{}, ld, c.keys, c.now().UnixNano()))
	return err
}

type coldClickHouse struct{ clickhouseBackend }

func (c *coldClickHouse) writeTraces(ctx context.Context, td ptrace.Traces) error {
	if err := c.ensure(ctx); err != nil {
		return err
	}
	return c.w.WriteCold(ctx, td, plog.Logs{})
}

func (c *coldClickHouse) writeLogs(ctx context.Context, ld plog.Logs) error {
	if err := c.ensure(ctx); err != nil {
		return err
	}
	return c.w.WriteCold(ctx, ptrace.Traces{}, ld)
}

func coldTier(logger *zap.Logger, cfg *ColdConfig, keys []string, now func() time.Time, every time.Duration) *tier {
	if cfg.ClickHouse.HasValue() {
		ch := cfg.ClickHouse.Get()
		return &tier{name: "cold", key: "clickhouse-cold:" + ch.Endpoint + "/" + ch.Database, sending: cfg.TierSending,
			open: func(context.Context) (*resource, error) {
				db, err := openClickHouse(ch)
				if err != nil {
					return nil, err
				}
				w := &clickhousestore.Writer{DB: db, SessionKeys: keys, Now: now,
					Schema: clickhousestore.Schema{Database: ch.Database, Cluster: ch.ClusterName, ColdTTL: cfg.Retention}}
				b := &coldClickHouse{clickhouseBackend{w: w}}
				if ch.CreateSchema {
					b.create = w.CreateCold
				}
				return &resource{backend: b, close: db.Close}, nil
			}}
	}
	url := cfg.Parquet.Get().URL
	return &tier{name: "cold", key: "parquet:" + url, sending: cfg.TierSending,
		open: func(ctx context.Context) (*resource, error) {
			st, err := coldstore.Open(ctx, url, coldstore.Options{Now: now})
			if err != nil {
				return nil, err
			}
			return &resource{backend: &coldParquet{st: st, keys: keys, now: now}, close: st.Close,
				janitor: newJanitor(logger, "cold", every, cfg.Retention, now, st.Expire)}, nil
		}}
}
