// SPDX-License-Identifier: Apache-2.0

package runagainstorageextension // import "github.com/runagain/runagain/extension/runagainstorageextension"

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/klauspost/compress/zstd"
	"go.uber.org/zap"

	"github.com/runagain/runagain/internal/payloadref/collect"
	"github.com/runagain/runagain/internal/payloadref/writer"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/clickhousestore"
	"github.com/runagain/runagain/internal/store/sqlitestore"
)

// openPayloads opens the payload store of payloads (the bucket, and with Dir the pack staging
// area and digest index): one per extension, shared by every payload_offload instance and the
// payload janitor.
func openPayloads(ctx context.Context, p *PayloadsConfig, logger *zap.Logger, now func() time.Time) (*writer.Store, error) {
	cache := p.DedupCacheSize
	if cache == 0 {
		cache = DefaultDedupCacheSize
	}
	_, level := zstd.EncoderLevelFromString(p.CompressionLevel)
	packLevel := level
	if p.CompressionLevel == "" || p.CompressionLevel == "default" {
		packLevel = 0 // the store's default for pack blocks (packfile.DefaultLevel)
	}
	s, err := writer.NewStore(ctx, p.URL, writer.StoreOptions{
		KnownObjects: cache, Level: level, PackLevel: packLevel, Now: now,
		Dir: p.Dir, PackMaxSize: p.Pack.MaxSize, PackMaxAge: p.Pack.MaxAge, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	if p.Dir != "" {
		// The digest index's memory bound: the location cache, and the digest filter (sized
		// from the index's rows; rebuilt larger when they pass its capacity).
		st := s.StatsAtOpen() // the rows NewStore just read: not a second scan of the index
		dir, _ := filepath.Abs(p.Dir)
		logger.Info("runagain_storage: payload pack store open", zap.String("dir", dir),
			zap.Int("index_cache_limit", cache), zap.Int("index_cache_limit_bytes_approx", cache*100),
			zap.Int64("indexed_objects", st.IndexedObjects), zap.Uint("index_filter_capacity", st.FilterCapacity),
			zap.Int64("index_filter_bytes", st.FilterBytes))
	}
	return s, nil
}

// closePayloads reports the digest index's size (issue 17: "its size reported") and closes s.
func closePayloads(s *writer.Store, logger *zap.Logger) error {
	if st, err := s.Stats(context.Background()); err == nil {
		logger.Info("runagain_storage: closing the payload store",
			zap.Int("index_cache_entries", st.CachedLocations),
			zap.Int64("indexed_objects", st.IndexedObjects), zap.Int64("index_filter_bytes", st.FilterBytes),
			zap.Int64("packs_uploaded", st.PacksUploaded), zap.Int("packs_staged", st.StagedPacks))
	}
	return s.Close()
}

// Payload retention (issue 17, "Retention and erasure reach payload bytes"): offloaded payloads
// follow the hot tier. After each hot retention pass the payload store is collected with the hot
// tier's remaining references as the live set (payload_refs in SQLite, the K_ref attributes of
// the ClickHouse tables): an object no live row reaches is deleted once it was last referenced
// (or, for single objects, written) more than the hot retention before the sweep. Runs pinned by
// a dataset keep their hot rows, so their payloads stay live. The grace of one hot retention
// spares values on their way from payload_offload to the hot tier (a sending queue during an
// outage): an object of an expired run was referenced no later than that run's rows were
// ingested, so the grace never keeps an expired run's payloads past its own expiry.
//
// The janitor collects through the store payload_offload writes with (one process, one staging
// area): packs still staged are left for a later pass (CollectStats.Staged). Retention is a
// deletion promise as much as an erasure: every pack holding an expired object is rewritten
// (Erase), not only mostly dead ones, so no byte of an expired run remains.

// sweepPayloads collects o.payloads with refs as the live set.
func sweepPayloads(ctx context.Context, o openOptions, retention time.Duration, refs store.RefLister) (collect.Stats, error) {
	st, err := o.payloads.Collect(ctx, collect.LiveRefs(store.LiveRefsOf(ctx, refs)),
		collect.Options{Erase: true, Grace: retention})
	if err != nil {
		return st, fmt.Errorf("payloads %s: %w", o.payloads.URI(""), err)
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
		if err != nil || o.payloads == nil {
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
// that only collects the payload store; nil when there is nothing to sweep.
func openPayloadJanitor(hot *HotConfig, o openOptions) (*opened, error) {
	if o.payloads == nil || hot.Retention <= 0 || !hot.ClickHouse.HasValue() {
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
