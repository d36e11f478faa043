package runagainstorageextension // import "github.com/runagain/runagain/extension/runagainstorageextension"

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/runagain/runagain/internal/erase"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/clickhousestore"
	"github.com/runagain/runagain/internal/store/sqlitestore"
)

// Payload retention (issue 17, "Retention and erasure reach payload bytes"): offloaded payloads
// follow the hot tier. After each hot retention pass the payload bucket is swept with the hot
// tier's remaining references as the live set (payload_refs in SQLite, the K_ref attributes of
// the ClickHouse tables): an object no live row reaches is deleted once it was last referenced
// (or, for single objects, written) more than the hot retention before the sweep. Runs pinned by
// a dataset keep their hot rows, so their payloads stay live. The grace of one hot retention
// spares values on their way from payload_offload to the hot tier (a sending queue during an
// outage): an object of an expired run was referenced no later than that run's rows were
// ingested, so the grace never keeps an expired run's payloads past its own expiry.

// sweepPayloads sweeps the payload bucket (o.payloadURL) with refs as the live set.
func sweepPayloads(ctx context.Context, o openOptions, retention time.Duration, refs store.RefLister) (erase.PayloadStats, error) {
	sw := erase.NewSweeper(o.payloadURL, o.payloadDir, retention, o.now)
	st, err := sw.Sweep(ctx, store.LiveRefsOf(ctx, refs), erase.SweepOptions{})
	if err != nil {
		return st, fmt.Errorf("payloads %s: %w", o.payloadURL, err)
	}
	if st.ObjectsDeleted > 0 {
		o.logger.Info("retention janitor deleted unreferenced payloads", zap.Int("objects", st.ObjectsDeleted),
			zap.Int64("bytes", st.BytesFreed), zap.Int("packs_deleted", st.PacksDeleted), zap.Int("packs_rewritten", st.PacksRewritten))
	}
	return st, nil
}

// hotSQLiteExpire is the hot SQLite janitor's pass: rows past retention (pins kept), then the
// payloads no remaining row references. The live set is read through a second, read-only
// handle so the sweep never holds the writer's only connection.
func hotSQLiteExpire(db *sqlitestore.DB, path string, o openOptions, retention time.Duration) func(context.Context, time.Time, map[string]bool) (int64, error) {
	return func(ctx context.Context, cutoff time.Time, pinned map[string]bool) (int64, error) {
		n, err := db.ExpireExcept(ctx, cutoff, pinned)
		if err != nil || o.payloadURL == "" {
			return n, err
		}
		ro, err := sqlitestore.Open(path, sqlitestore.Options{ReadOnly: true, SessionKeys: o.keys})
		if err != nil {
			return n, err
		}
		defer ro.Close()
		_, err = sweepPayloads(ctx, o, retention, ro) // logs the objects it deleted itself
		return n, err
	}
}

// openPayloadJanitor returns, for a hot tier on ClickHouse (whose rows expire by TTL), a janitor
// that only sweeps the payload bucket; nil when there is nothing to sweep.
func openPayloadJanitor(hot *HotConfig, o openOptions) (*opened, error) {
	if o.payloadURL == "" || hot.Retention <= 0 || !hot.ClickHouse.HasValue() {
		return nil, nil
	}
	ch := hot.ClickHouse.Get()
	db, err := ch.OpenDB()
	if err != nil {
		return nil, err
	}
	refs := &clickhousestore.HotEraser{DB: db, Tables: clickhousestore.HotTables{Database: ch.Database}, SessionKeys: o.keys}
	sweep := func(ctx context.Context, _ time.Time, _ map[string]bool) (int64, error) {
		st, err := sweepPayloads(ctx, o, hot.Retention, refs)
		return int64(st.ObjectsDeleted), err
	}
	return &opened{close: db.Close, janitor: newJanitor(o, "payloads", hot.Retention, sweep)}, nil
}
