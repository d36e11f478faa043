package runagainstorageextension // import "github.com/runagain/runagain/extension/runagainstorageextension"

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/clickhousestore"
	"github.com/runagain/runagain/internal/store/coldstore"
	"github.com/runagain/runagain/internal/store/sqlitestore"
)

// OpenReader opens, read-only, every configured tier that exists and reads them as one, falling
// back hot -> warm -> cold (store.Tiered): a run past the hot retention still shows its warm
// summary, and past that its cold session. A SQLite file or local cold directory that does not
// exist yet is skipped (the collector has not written it); it is an error when no tier is found.
// The hot tier on ClickHouse is read from the contrib exporter's otel_traces and otel_logs.
func (c *Config) OpenReader(ctx context.Context) (store.Reader, error) {
	var readers []store.Reader
	fail := func(err error) (store.Reader, error) {
		for _, r := range readers {
			_ = r.Close()
		}
		return nil, err
	}
	var looked []string
	if c.Hot.HasValue() {
		h := c.Hot.Get()
		switch {
		case h.ClickHouse.HasValue():
			ch := h.ClickHouse.Get()
			db, err := ch.OpenDB()
			if err != nil {
				return fail(fmt.Errorf("hot::clickhouse: %w", err))
			}
			readers = append(readers, closing{&clickhousestore.HotReader{DB: db, Tables: clickhousestore.HotTables{Database: ch.Database},
				SessionKeys: c.SessionKeys}, db.Close})
		case h.SQLite.HasValue():
			p := h.SQLite.Get().Path
			looked = append(looked, p)
			if exists(p) {
				db, err := sqlitestore.Open(p, sqlitestore.Options{ReadOnly: true, SessionKeys: c.SessionKeys})
				if err != nil {
					return fail(err)
				}
				readers = append(readers, db)
			}
		}
	}
	if c.Warm.HasValue() {
		w := c.Warm.Get()
		switch {
		case w.ClickHouse.HasValue():
			ch := w.ClickHouse.Get()
			db, err := ch.OpenDB()
			if err != nil {
				return fail(fmt.Errorf("warm::clickhouse: %w", err))
			}
			readers = append(readers, closing{&clickhousestore.WarmReader{DB: db, Schema: clickhousestore.Schema{Database: ch.Database}}, db.Close})
		case w.SQLite.HasValue():
			p := w.SQLite.Get().Path
			looked = append(looked, p)
			if exists(p) {
				db, err := sqlitestore.OpenWarm(p, sqlitestore.Options{ReadOnly: true, SessionKeys: c.SessionKeys})
				if err != nil {
					return fail(err)
				}
				readers = append(readers, db)
			}
		}
	}
	if c.Cold.HasValue() {
		k := c.Cold.Get()
		switch {
		case k.ClickHouse.HasValue():
			ch := k.ClickHouse.Get()
			db, err := ch.OpenDB()
			if err != nil {
				return fail(fmt.Errorf("cold::clickhouse: %w", err))
			}
			readers = append(readers, closing{&clickhousestore.ColdReader{DB: db, Schema: clickhousestore.Schema{Database: ch.Database}}, db.Close})
		case k.Parquet.HasValue():
			u := k.Parquet.Get().URL
			if local := LocalDir(u); local != "" && !exists(local) {
				looked = append(looked, local)
				break
			}
			st, err := coldstore.Open(ctx, u, coldstore.Options{ReadOnly: true})
			if err != nil {
				return fail(err)
			}
			readers = append(readers, st)
		}
	}
	if len(readers) == 0 {
		return nil, fmt.Errorf("open store: no tier found (looked for %v; is this the collector's configuration and data directory?)", looked)
	}
	return store.NewTiered(readers...), nil
}

// LocalDir is the directory of a cold URL that is a plain path or a file:// URL (query dropped),
// else "" (a bucket elsewhere: s3://, gs://...).
func LocalDir(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" {
		return u
	}
	if p.Scheme == "file" {
		return p.Host + p.Path
	}
	return ""
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// closing closes a database handle after its reader.
type closing struct {
	store.Reader
	closeDB func() error
}

func (c closing) Close() error { return errors.Join(c.Reader.Close(), c.closeDB()) }

// ListsSessions passes store.SessionLister through: store.Tiered reads a session tier only when
// the tiers before it cannot fill a limited listing.
func (c closing) ListsSessions() bool {
	s, ok := c.Reader.(store.SessionLister)
	return ok && s.ListsSessions()
}
