// SPDX-License-Identifier: Apache-2.0

package runagainstorageextension // import "github.com/runagain/runagain/extension/runagainstorageextension"

import (
	"context"
	"errors"
	"net/url"
	"os"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/clickhousestore"
)

// OpenReader opens, read-only, every configured tier that exists (OpenTiers) and reads them as one, falling
// back hot -> warm -> cold (store.Tiered): a run past the hot retention still shows its warm
// summary, and past that its cold session. A SQLite file or local cold directory that does not
// exist yet is skipped (the collector has not written it); it is an error when no tier is found.
// The hot tier on ClickHouse is read from the contrib exporter's otel_traces and otel_logs.
func (c *Config) OpenReader(ctx context.Context) (store.Reader, error) {
	tiers, err := c.OpenTiers(ctx, true)
	if err != nil {
		return nil, err
	}
	readers := make([]store.Reader, 0, len(tiers))
	for _, t := range tiers {
		switch {
		case t.HotSQLite != nil:
			readers = append(readers, t.HotSQLite)
		case t.WarmSQLite != nil:
			readers = append(readers, t.WarmSQLite)
		case t.Cold != nil:
			readers = append(readers, t.Cold)
		case t.Name == "hot":
			readers = append(readers, closing{&clickhousestore.HotReader{DB: t.ClickHouse, Tables: clickhousestore.HotTables{Database: t.CH.Database},
				SessionKeys: c.SessionKeys}, t.ClickHouse.Close})
		case t.Name == "warm":
			readers = append(readers, patternClosing{closing{&clickhousestore.WarmReader{DB: t.ClickHouse, Schema: clickhousestore.Schema{Database: t.CH.Database},
				SessionKeys: c.SessionKeys}, t.ClickHouse.Close}})
		default:
			readers = append(readers, closing{&clickhousestore.ColdReader{DB: t.ClickHouse, Schema: clickhousestore.Schema{Database: t.CH.Database}}, t.ClickHouse.Close})
		}
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

// patternClosing is closing over a reader whose run index holds failure signatures (the
// ClickHouse warm tier): store.Tiered reads patterns through it.
type patternClosing struct{ closing }

// PatternRuns implements store.PatternReader.
func (c patternClosing) PatternRuns(ctx context.Context, f store.PatternFilter, yield func(store.PatternRun) error) error {
	return c.Reader.(store.PatternReader).PatternRuns(ctx, f, yield)
}

// PatternSignatures implements store.PatternReader.
func (c patternClosing) PatternSignatures(ctx context.Context, ids []string) (map[string][]byte, error) {
	return c.Reader.(store.PatternReader).PatternSignatures(ctx, ids)
}
