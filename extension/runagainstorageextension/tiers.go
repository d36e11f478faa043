// SPDX-License-Identifier: Apache-2.0

package runagainstorageextension // import "github.com/runagain/runagain/extension/runagainstorageextension"

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/runagain/runagain/internal/store/coldstore"
	"github.com/runagain/runagain/internal/store/sqlitestore"
)

// OpenedTier is one configured tier opened by OpenTiers. Exactly one backend is set: HotSQLite
// (Name "hot"), WarmSQLite ("warm"), Cold (Parquet, "cold"), or ClickHouse with CH, its
// configuration (database, cluster), for any of the three.
type OpenedTier struct {
	Name  string // "hot", "warm" or "cold"
	Where string // the SQLite file, the ClickHouse endpoint or the cold URL

	HotSQLite  *sqlitestore.DB
	WarmSQLite *sqlitestore.WarmDB
	Cold       *coldstore.Store
	ClickHouse *sql.DB
	CH         *ClickHouseConfig
}

// Close closes the tier's handle.
func (t OpenedTier) Close() error {
	switch {
	case t.HotSQLite != nil:
		return t.HotSQLite.Close()
	case t.WarmSQLite != nil:
		return t.WarmSQLite.Close()
	case t.Cold != nil:
		return t.Cold.Close()
	case t.ClickHouse != nil:
		return t.ClickHouse.Close()
	}
	return nil
}

// OpenTiers opens every configured tier that exists, in order hot, warm, cold: read-only when
// readOnly (the CLI's readers), else for writing (runagain delete). A SQLite file or local cold
// directory that does not exist is skipped, never created (the collector has not written it:
// nothing to read or erase there); ClickHouse tiers and cold buckets elsewhere are always opened.
// Errors name the tier (a ClickHouse connection: `hot::clickhouse: ...`); it is an error, listing
// the local paths looked for, when no tier is found. On error nothing stays open.
func (c *Config) OpenTiers(ctx context.Context, readOnly bool) ([]OpenedTier, error) {
	var tiers []OpenedTier
	var looked []string
	fail := func(err error) ([]OpenedTier, error) {
		for i := len(tiers) - 1; i >= 0; i-- {
			_ = tiers[i].Close()
		}
		return nil, err
	}
	openCH := func(name string, ch *ClickHouseConfig) error {
		db, err := ch.OpenDB()
		if err != nil {
			return fmt.Errorf("%s::clickhouse: %w", name, err)
		}
		tiers = append(tiers, OpenedTier{Name: name, Where: ch.Endpoint, ClickHouse: db, CH: ch})
		return nil
	}
	opts := sqlitestore.Options{ReadOnly: readOnly, SessionKeys: c.SessionKeys}
	if c.Hot.HasValue() {
		h := c.Hot.Get()
		switch {
		case h.ClickHouse.HasValue():
			if err := openCH("hot", h.ClickHouse.Get()); err != nil {
				return fail(err)
			}
		case h.SQLite.HasValue():
			p := h.SQLite.Get().Path
			looked = append(looked, p)
			if exists(p) {
				db, err := sqlitestore.Open(p, opts)
				if err != nil {
					return fail(err)
				}
				tiers = append(tiers, OpenedTier{Name: "hot", Where: p, HotSQLite: db})
			}
		}
	}
	if c.Warm.HasValue() {
		w := c.Warm.Get()
		switch {
		case w.ClickHouse.HasValue():
			if err := openCH("warm", w.ClickHouse.Get()); err != nil {
				return fail(err)
			}
		case w.SQLite.HasValue():
			p := w.SQLite.Get().Path
			looked = append(looked, p)
			if exists(p) {
				db, err := sqlitestore.OpenWarm(p, opts)
				if err != nil {
					return fail(err)
				}
				tiers = append(tiers, OpenedTier{Name: "warm", Where: p, WarmSQLite: db})
			}
		}
	}
	if c.Cold.HasValue() {
		k := c.Cold.Get()
		switch {
		case k.ClickHouse.HasValue():
			if err := openCH("cold", k.ClickHouse.Get()); err != nil {
				return fail(err)
			}
		case k.Parquet.HasValue():
			u := k.Parquet.Get().URL
			if local := LocalDir(u); local != "" && !exists(local) {
				looked = append(looked, local)
				break
			}
			st, err := coldstore.Open(ctx, u, coldstore.Options{ReadOnly: readOnly})
			if err != nil {
				return fail(err)
			}
			tiers = append(tiers, OpenedTier{Name: "cold", Where: u, Cold: st})
		}
	}
	if len(tiers) == 0 {
		return nil, fmt.Errorf("open store: %w (looked for %v; is this the collector's configuration and data directory?)", ErrNoTier, looked)
	}
	return tiers, nil
}

// ErrNoTier is wrapped by OpenTiers' error when no configured tier exists.
var ErrNoTier = errors.New("no tier found")
