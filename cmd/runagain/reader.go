// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/internal/store"
)

// Where the tiers are read from. With --clickhouse the hot, warm and cold tiers are read from
// that ClickHouse (the hot tier in the contrib exporter's otel_traces/otel_logs tables);
// otherwise from the embedded default's files under --data-dir: hot.db, warm.db and cold/.
// --cold-url names the Parquet cold tier on any gocloud.dev/blob URL (s3://..., gs://...), in
// place of <data-dir>/cold or the ClickHouse cold table.
var (
	clickhouseFlag      string
	clickhouseDBFlag    string
	clickhouseHotDBFlag string
	coldURLFlag         string
)

func init() {
	rootCmd.PersistentFlags().StringVar(&clickhouseFlag, "clickhouse", os.Getenv("RUNAGAIN_CLICKHOUSE_ENDPOINT"),
		"read the tiers from this ClickHouse (tcp://host:9000 or http://host:8123; env RUNAGAIN_CLICKHOUSE_ENDPOINT)")
	def := os.Getenv("RUNAGAIN_CLICKHOUSE_DATABASE")
	if def == "" {
		def = "default"
	}
	rootCmd.PersistentFlags().StringVar(&clickhouseDBFlag, "clickhouse-database", def,
		"ClickHouse database of the tier tables (env RUNAGAIN_CLICKHOUSE_DATABASE)")
	rootCmd.PersistentFlags().StringVar(&clickhouseHotDBFlag, "clickhouse-hot-database", os.Getenv("RUNAGAIN_CLICKHOUSE_HOT_DATABASE"),
		"ClickHouse database of the hot tier's otel_traces/otel_logs (the clickhouseexporter's database); default --clickhouse-database (env RUNAGAIN_CLICKHOUSE_HOT_DATABASE)")
	rootCmd.PersistentFlags().StringVar(&coldURLFlag, "cold-url", os.Getenv("RUNAGAIN_COLD_URL"),
		"cold tier Parquet bucket URL (gocloud.dev/blob) or directory; default <data-dir>/cold (env RUNAGAIN_COLD_URL)")
}

// openReader opens every tier it finds and reads them as one, falling back hot -> warm -> cold:
// a run past the hot retention still shows its warm summary, and past that its cold session.
//
// With --config the tiers are the runagain_storage extension's (storageConfig); without it,
// the embedded default's files under --data-dir, or the ClickHouse and cold flags.
func openReader() (store.Reader, error) {
	cfg, err := storageConfig()
	if err != nil {
		return nil, err
	}
	if _, err := openPricing(); err != nil { // a bad pricing section fails before anything is read
		return nil, err
	}
	if err := checkColdURL(); err != nil {
		return nil, err
	}
	if cfg != nil {
		warnMissingHot(os.Stderr, cfg)
		return cfg.OpenReader(context.Background())
	}
	return openTiers(context.Background(), dataDirFlag)
}

// openTiers opens the tiers of the embedded default's layout under dataDir (hot.db, warm.db,
// cold/), or of the --clickhouse and --cold-url flags (dirStorageConfig), through the one walk of
// the tiers that --config and runagain delete use too (runagainstorageextension.Config.OpenReader):
// a file or directory that does not exist is skipped, and it is an error naming dataDir when no
// tier is found.
func openTiers(ctx context.Context, dataDir string) (store.Reader, error) {
	r, err := dirStorageConfig(dataDir).OpenReader(ctx)
	if errors.Is(err, runagainstorageextension.ErrNoTier) {
		return nil, fmt.Errorf("open store in %s: no tier found (no hot.db, warm.db or cold/ there; is --data-dir / RUNAGAIN_DATA_DIR the collector's data directory?)", dataDir)
	}
	return r, err
}

// checkColdURL fails when --cold-url (or RUNAGAIN_COLD_URL) names a local directory that does
// not exist: the tiers' walk skips a missing directory (a tier the collector has not written yet,
// as <data-dir>/cold), but one the user named is a typo to report, not an empty tier. With
// --config only a --cold-url given on the command line is applied (loadStorageConfig), so only
// that one is checked: a RUNAGAIN_COLD_URL left in the environment is ignored there, as before.
func checkColdURL() error {
	if coldURLFlag == "" {
		return nil
	}
	if f := rootCmd.PersistentFlags().Lookup("cold-url"); configFlag != "" && (f == nil || !f.Changed) {
		return nil
	}
	if local := runagainstorageextension.LocalDir(coldURLFlag); local != "" && !exists(local) {
		return fmt.Errorf("--cold-url %s: directory %s does not exist", coldURLFlag, local)
	}
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// warnMissingHot says on stderr when the configured hot SQLite file is missing while the warm
// one exists: the collector writes hot before warm, so this is a --config that names another
// path than the collector's (a typo, another data directory), and the runs shown come from the
// warm tier's summaries only.
func warnMissingHot(w io.Writer, cfg *runagainstorageextension.Config) {
	if !cfg.Hot.HasValue() || !cfg.Hot.Get().SQLite.HasValue() || !cfg.Warm.HasValue() || !cfg.Warm.Get().SQLite.HasValue() {
		return
	}
	hot, warm := cfg.Hot.Get().SQLite.Get().Path, cfg.Warm.Get().SQLite.Get().Path
	if !exists(hot) && exists(warm) {
		fmt.Fprintf(w, "runagain: warning: the hot tier %s (runagain_storage::hot::sqlite::path) does not exist but the warm tier %s does: runs are read from the warm and cold tiers only (is --config the collector's configuration?)\n", hot, warm)
	}
}
