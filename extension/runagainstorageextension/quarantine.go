// SPDX-License-Identifier: Apache-2.0

package runagainstorageextension // import "github.com/runagain/runagain/extension/runagainstorageextension"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/clickhousestore"
	"github.com/runagain/runagain/internal/store/sqlitestore"
)

// QuarantineWriter stores spans that cannot be stored as spans in the hot tier's dead-letter
// table (store.QuarantinedSpan), idempotently: a span written twice (same ID) is listed once.
type QuarantineWriter interface {
	Quarantine(ctx context.Context, spans []store.QuarantinedSpan) error
}

// Quarantiner is implemented by the extension (beside Storage): the span_quarantine processor
// asserts it on what Find returns.
type Quarantiner interface {
	// QuarantineWriter returns the hot tier's dead-letter table: the table quarantine in the
	// SQLite hot file, or runagain_quarantine in the hot ClickHouse database (created on first
	// use when hot::clickhouse::create_schema is set). It fails when the extension is not
	// started or has no hot tier.
	QuarantineWriter() (QuarantineWriter, error)
}

var _ Quarantiner = (*Extension)(nil)

// QuarantineWriter implements Quarantiner.
func (s *Extension) QuarantineWriter() (QuarantineWriter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return nil, errors.New("runagain_storage: not started")
	}
	if t, ok := s.tiers[store.TierHot]; ok {
		if h, ok := t.backend.(*hotSQLite); ok {
			return h.db, nil
		}
	}
	if s.chDead != nil {
		return s.chDead, nil
	}
	return nil, errors.New("runagain_storage: no hot tier: the dead-letter table is in the hot tier (hot::sqlite or hot::clickhouse)")
}

// chQuarantine is the dead-letter table of a hot tier on ClickHouse. The contrib exporter writes
// the hot spans; this handle writes only runagain_quarantine, creating it on first use (retried
// on every write until it succeeds, as the warm and cold backends do) when create_schema is set.
type chQuarantine struct {
	w      *clickhousestore.Writer
	ttl    time.Duration
	create bool
	mu     sync.Mutex
	ready  bool
}

// Quarantine implements QuarantineWriter.
func (c *chQuarantine) Quarantine(ctx context.Context, spans []store.QuarantinedSpan) error {
	if len(spans) == 0 {
		return nil
	}
	c.mu.Lock()
	if c.create && !c.ready {
		if err := c.w.CreateQuarantine(ctx, c.ttl); err != nil {
			c.mu.Unlock()
			return fmt.Errorf("clickhouse hot tier: quarantine: %w", err)
		}
		c.ready = true
	}
	c.mu.Unlock()
	return c.w.Quarantine(ctx, spans)
}

// openHotQuarantine opens the handle of the dead-letter table of a hot tier on ClickHouse
// (opening does not connect: an unreachable server fails the writes, which the client retries).
func openHotQuarantine(cfg *HotConfig) (*chQuarantine, func() error, error) {
	ch := cfg.ClickHouse.Get()
	db, err := ch.OpenDB()
	if err != nil {
		return nil, nil, err
	}
	w := &clickhousestore.Writer{DB: db, Schema: clickhousestore.Schema{Database: ch.Database, Cluster: ch.ClusterName}}
	return &chQuarantine{w: w, ttl: cfg.Retention, create: ch.CreateSchema}, db.Close, nil
}

// Quarantined reads the hot tier's dead-letter table newest first, each span once, at most
// limit rows (0: all): hot::sqlite::path's table quarantine (the file must exist; a file without
// the table lists nothing) or hot::clickhouse's runagain_quarantine (a missing table lists
// nothing). It fails, naming the field, when the configuration has no hot tier.
func (c *Config) Quarantined(ctx context.Context, limit int) ([]store.QuarantinedSpan, error) {
	if !c.Hot.HasValue() {
		return nil, errors.New("quarantine: the dead-letter table is in the hot tier (runagain_storage::hot), which this configuration does not have")
	}
	h := c.Hot.Get()
	if h.ClickHouse.HasValue() {
		ch := h.ClickHouse.Get()
		db, err := ch.OpenDB()
		if err != nil {
			return nil, fmt.Errorf("quarantine: hot::clickhouse: %w", err)
		}
		defer func() { _ = db.Close() }()
		return clickhousestore.Quarantined(ctx, db, clickhousestore.Schema{Database: ch.Database}, limit)
	}
	return QuarantinedSQLite(ctx, h.SQLite.Get().Path, limit)
}

// QuarantinedSQLite reads the dead-letter table of the hot SQLite file at path, read-only (see
// Config.Quarantined); a path that does not exist is an error naming it.
func QuarantinedSQLite(ctx context.Context, path string, limit int) ([]store.QuarantinedSpan, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("quarantine: hot tier %s: %w", path, err)
	}
	db, err := sqlitestore.Open(path, sqlitestore.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = db.Close() }()
	return db.Quarantined(ctx, limit)
}
