// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/internal/dataset"
	"github.com/runagain/runagain/internal/erase"
	"github.com/runagain/runagain/internal/seal"
	"github.com/runagain/runagain/internal/settle"
	"github.com/runagain/runagain/internal/store/clickhousestore"
)

// payloadsURLFlag is the payload bucket when no --config names one.
var payloadsURLFlag string

const deleteLong = `delete erases a session (--session) or one run (--trace) from everywhere runagain keeps it, for a
data-subject erasure request, and reports what it removed:

  hot tier      every span and log record of the runs (SQLite: deleted with secure_delete, then the
                file is rebuilt with VACUUM and its WAL truncated, so no stale copy stays in free
                pages; ClickHouse: ALTER TABLE ... DELETE, a synchronous mutation that rewrites the parts)
  warm tier     span summaries and key events (exceptions, alerts)
  cold tier     the session's Parquet partial records: each file holding one is rewritten without it
                (or deleted when nothing else is left); ClickHouse runagain_sessions rows
  payloads      the offloaded payload objects the erased rows referenced, unless a live row still
                references the same content (content addressing stores a value once: another
                session that sent the very same bytes keeps them); the sweep also removes other
                unreferenced objects older than the hot retention
  sealed originals  the session's data key is destroyed (crypto-shredding, see agent_redaction
                seal_originals): every sealed copy, in exports or backups too, becomes unreadable
  datasets      a run frozen in a regression dataset is a full copy (spans and rehydrated payloads).
                delete refuses, before removing anything, and names the dataset versions, unless
                --remove-from-datasets: then each such version is replaced by a version without
                those cases (a new version id) or removed when nothing is left

With --sealed-only, delete --session only destroys the session's data key: the redacted runs stay
readable, replay serves the redacted bytes and says the originals were erased.

A session's runs are found in every tier (gen_ai.conversation.id or session.id on any span or record;
a run without one is its own session: give its trace id). --trace erases one run; its session's key
is destroyed only when the run is its own session.

It is safe while the collector runs: the SQLite files are in WAL mode and every statement waits on a
busy timeout (the collector's writes wait during VACUUM and are retried by their sending queues),
Parquet objects are replaced whole, ClickHouse mutations are synchronous. Spans of the session that
are still on their way are stored after it: summaries in the collector's warm and cold sending
queues (flushed within 1 s and 10 s by config/default.yaml) and packs not yet uploaded (5 s) are
caught by a second pass, run as soon as the collector's own metrics show each of its tiered
sending queues empty once (otelcol_exporter_queue_size; at most --settle, 15 s by default, and the
whole of it when those metrics cannot be read: --collector-metrics); spans sent after delete
started, or a queue held back by a store that is down, are not: stop the agents of that session
first, and run delete again once every store is back.

What it cannot reach: backups and snapshots of the data directory or buckets, copies already
exported (runagain dataset export directories, files you wrote with --json), other systems the
collector forwards to, Prometheus series and exemplars that carry trace ids (agent_guard metrics),
the free pages of the collector's persistent sending queue files (data/queue: config/default.yaml
compacts them at every start, so restart the collector after an erasure), and the collector's logs.

--dry-run lists the runs and the dataset versions an erasure would touch, and removes nothing.

Stores are those of --config (runagain_storage), else the embedded default's files under --data-dir.`

func init() {
	var session, trace string
	var removeFromDatasets, noCompact, sealedOnly, dryRun bool
	var settleFor time.Duration
	var collectorMetrics string
	cmd := &cobra.Command{
		Use:   "delete --session ID | --trace ID",
		Short: "Erase a session or run from every tier, datasets, sealed originals and payload storage (data-subject erasure)",
		Long:  deleteLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := contextOf(cmd)
			if sealedOnly {
				return destroySessionKey(cmd, session)
			}
			if trace != "" {
				// An unambiguous prefix names the run, as `show` reads it; the full id is printed.
				full, err := resolveRunArg(ctx, trace)
				if err != nil {
					return fmt.Errorf("--trace: %w", err)
				}
				trace = full
			}
			e, closeAll, err := openEraser(ctx)
			if err != nil {
				return err
			}
			defer closeAll()
			if dryRun {
				p, err := e.Resolve(ctx, erase.Request{Session: session, TraceID: trace})
				if err != nil {
					return err
				}
				printPlan(cmd.OutOrStdout(), session, trace, p)
				return nil
			}
			req := erase.Request{Session: session, TraceID: trace, RemoveFromDatasets: removeFromDatasets, NoCompact: noCompact}
			rep, err := e.Run(ctx, req)
			if rep != nil {
				printErasure(cmd.OutOrStdout(), session, trace, rep)
			}
			if err != nil || settleFor <= 0 {
				return err
			}
			murl, err := settle.MetricsURL(ctx, collectorMetrics, configFlag)
			if err != nil {
				return err
			}
			return settlePass(ctx, cmd.OutOrStdout(), e, req, settleFor, murl)
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "session id (gen_ai.conversation.id, session.id, or the trace id of a run without one)")
	cmd.Flags().StringVar(&trace, "trace", "", "trace id of one run (32 hex characters, or an unambiguous prefix of at least 6)")
	cmd.Flags().BoolVar(&removeFromDatasets, "remove-from-datasets", false,
		"also remove the runs' cases from the dataset versions that froze them (each version is replaced by one without them)")
	cmd.Flags().BoolVar(&noCompact, "no-compact", false,
		"skip rebuilding the SQLite files after deleting (faster on large files; stale copies of erased rows may then stay in free pages)")
	cmd.Flags().DurationVar(&settleFor, "settle", 15*time.Second,
		"then wait, at most this long, until a running collector's sending queues delivered what they held "+
			"(its otelcol_exporter_queue_size of each tiered queue read 0; config/default.yaml flushes warm within 1s and "+
			"cold within 10s) and erase again what arrived; without the collector's metrics it waits this long; 0: one pass only")
	cmd.Flags().StringVar(&collectorMetrics, "collector-metrics", os.Getenv("RUNAGAIN_COLLECTOR_METRICS"),
		"the running collector's own metrics (Prometheus text), watched by --settle; default: the Prometheus reader of "+
			"--config's service::telemetry, else http://127.0.0.1:$RUNAGAIN_TELEMETRY_PORT/metrics (8888) (env RUNAGAIN_COLLECTOR_METRICS)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list the runs and dataset versions the erasure would touch; remove nothing")
	cmd.Flags().BoolVar(&sealedOnly, "sealed-only", false,
		"only destroy the session's data key (crypto-shredding of the sealed originals); the redacted runs stay")
	cmd.Flags().StringVar(&payloadsURLFlag, "payloads-url", os.Getenv("RUNAGAIN_PAYLOADS_URL"),
		"payload bucket (gocloud.dev/blob URL); default: --config's runagain_storage payloads::url, else file://<data-dir>/blobs (env RUNAGAIN_PAYLOADS_URL)")
	addDatasetsFlag(cmd)
	rootCmd.AddCommand(cmd)
}

// settlePass is the second pass of an erasure: records of the runs that were still in a running
// collector's warm and cold sending queues (summaries batched for up to cold's flush_timeout) reach
// their tiers after the first pass. It waits until the collector's metrics at metricsURL show
// every tiered queue empty once (settle.WaitDelivered), at most limit (the whole of limit when
// the metrics cannot be read), then erases again and reports what arrived. A queue held back
// longer (a tier's store down) delivers later still: the output says to run delete again then.
func settlePass(ctx context.Context, w io.Writer, e *erase.Eraser, req erase.Request, limit time.Duration, metricsURL string) error {
	fmt.Fprintf(w, "waiting at most %s for records still in the collector's sending queues (--settle)...\n", limit)
	start := time.Now()
	pending, werr := settle.WaitDelivered(ctx, metricsURL, limit)
	waited := time.Since(start).Round(10 * time.Millisecond)
	switch {
	case errors.Is(werr, settle.ErrNoConfirmation):
		fmt.Fprintf(w, "waited %s: %v\n", waited, werr)
	case werr != nil:
		return werr
	case len(pending) > 0:
		fmt.Fprintf(w, "waited %s: queues not seen empty (new traffic keeps them busy, or a store is down): %s\n", waited, strings.Join(pending, ", "))
	default:
		fmt.Fprintf(w, "the collector's sending queues delivered what they held (after %s)\n", waited)
	}
	rep, err := e.Run(ctx, req)
	var n int64
	if rep != nil {
		for _, t := range rep.Tiers {
			n += t.Total()
		}
	}
	switch {
	case err != nil:
		if rep != nil {
			printErasure(w, req.Session, req.TraceID, rep)
		}
		return fmt.Errorf("second pass: %w", err)
	case n > 0:
		fmt.Fprintf(w, "second pass, after %s: records that were still queued\n", waited)
		printErasure(w, req.Session, req.TraceID, rep)
	default:
		fmt.Fprintf(w, "second pass, after %s: nothing more arrived (a tier whose store is down delivers its queue later: run delete again once it is back)\n", waited)
	}
	return nil
}

// destroySessionKey is delete --session ID --sealed-only: the session's data key is destroyed, the
// redacted runs stay.
func destroySessionKey(cmd *cobra.Command, session string) error {
	if session == "" {
		return fmt.Errorf("--sealed-only: give --session")
	}
	dir := keysDir()
	if !seal.Exists(dir) {
		return fmt.Errorf("no session keys in %s: sealing was never enabled there (agent_redaction seal_originals)", dir)
	}
	keys, err := seal.OpenKeys(contextOf(cmd), dir, os.Getenv("RUNAGAIN_SEAL_KEEPER_URL"))
	if err != nil {
		return err
	}
	defer keys.Close()
	ok, err := keys.Destroy(session)
	if err != nil {
		return err
	}
	if !ok {
		fmt.Fprintf(cmd.OutOrStdout(), "session %s: no key (nothing was sealed for it, or it was deleted before)\n", session)
		return nil
	}
	fmt.Fprintf(cmd.OutOrStdout(), "session %s: data key destroyed; its sealed originals can no longer be opened\n", session)
	return nil
}

// printPlan is the output of --dry-run.
func printPlan(w io.Writer, session, trace string, p erase.Plan) {
	what := "session " + session
	if session == "" {
		what = "run " + trace
	}
	fmt.Fprintf(w, "%s: %d runs would be erased (dry run: nothing removed)\n", what, len(p.Erasure.TraceIDs))
	for _, id := range p.Erasure.TraceIDs {
		fmt.Fprintf(w, "  run       %s\n", id)
	}
	for _, h := range p.Datasets {
		fmt.Fprintf(w, "  dataset   %s@%s holds cases %s of %d (delete refuses without --remove-from-datasets)\n",
			h.Name, dataset.Short(h.Version), strings.Join(h.Cases, ", "), h.Total)
	}
}

func printErasure(w io.Writer, session, trace string, rep *erase.Report) {
	what := "session " + session
	if session == "" {
		what = "run " + trace
	}
	fmt.Fprintf(w, "%s: %d runs", what, len(rep.Erasure.TraceIDs))
	if len(rep.Erasure.TraceIDs) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(rep.Erasure.TraceIDs, ", "))
	}
	fmt.Fprintln(w)
	for _, t := range rep.Tiers {
		fmt.Fprintf(w, "  %-9s %s: removed %s\n", t.Tier, t.Where, t)
		for _, n := range t.Notes {
			fmt.Fprintf(w, "            note: %s\n", n)
		}
	}
	switch {
	case len(rep.Datasets) > 0:
		for _, l := range rep.Datasets {
			fmt.Fprintf(w, "  datasets  %s\n", l)
		}
	case len(rep.Plan.Datasets) == 0:
		fmt.Fprintln(w, "  datasets  no dataset holds these runs")
	}
	if rep.Key != "" {
		fmt.Fprintf(w, "  sealed    %s\n", rep.Key)
	} else {
		fmt.Fprintln(w, "  sealed    no session keys (sealing never enabled)")
	}
	if p := rep.Payloads; p != nil {
		fmt.Fprintf(w, "  payloads  %s: removed %d objects (%d bytes stored)", rep.Where, p.ObjectsDeleted, p.BytesFreed)
		if p.PacksDeleted+p.PacksRewritten > 0 {
			fmt.Fprintf(w, ", %d packs deleted, %d rewritten", p.PacksDeleted, p.PacksRewritten)
		}
		if p.StillStaged > 0 {
			fmt.Fprintf(w, "; %d of the collector's staged packs were not uploaded in time (bucket down or slow): erased objects in them remain under payloads::dir until delete runs again", p.StillStaged)
		}
		if p.KeptShared > 0 {
			fmt.Fprintf(w, "; kept %d objects other live runs reference too (same content)", p.KeptShared)
		}
		fmt.Fprintln(w)
	}
}

// openEraser opens, for writing, every store the CLI's configuration names (--config, else the
// embedded default under --data-dir, or the --clickhouse and --cold-url flags), through
// runagain_storage's OpenTiers, as the readers: a SQLite file or local cold directory that does
// not exist is skipped (nothing to erase there).
func openEraser(ctx context.Context) (*erase.Eraser, func(), error) {
	cfg, err := storageConfig()
	if err != nil {
		return nil, nil, err
	}
	if err := checkColdURL(); err != nil {
		return nil, nil, err
	}
	if cfg == nil {
		cfg = flagStorageConfig()
	}
	e := &erase.Eraser{}
	var closers []func() error
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
	}
	fail := func(err error) (*erase.Eraser, func(), error) {
		closeAll()
		return nil, nil, err
	}
	tiers, err := cfg.OpenTiers(ctx, false)
	if err != nil {
		return fail(err)
	}
	for _, t := range tiers {
		closers = append(closers, t.Close)
		switch {
		case t.HotSQLite != nil:
			e.Tiers = append(e.Tiers, erase.Tier{Name: t.Name, Where: t.Where, Eraser: t.HotSQLite, Compact: t.HotSQLite.Compact})
			e.Refs = t.HotSQLite
		case t.WarmSQLite != nil:
			e.Tiers = append(e.Tiers, erase.Tier{Name: t.Name, Where: t.Where, Eraser: t.WarmSQLite, Compact: t.WarmSQLite.Compact})
		case t.Cold != nil:
			e.Tiers = append(e.Tiers, erase.Tier{Name: t.Name, Where: t.Where, Eraser: t.Cold})
		case t.Name == "hot":
			he := &clickhousestore.HotEraser{DB: t.ClickHouse, Tables: clickhousestore.HotTables{Database: t.CH.Database}, SessionKeys: cfg.SessionKeys}
			e.Tiers = append(e.Tiers, erase.Tier{Name: t.Name, Where: t.Where, Eraser: he})
			e.Refs = he
		case t.Name == "warm":
			e.Tiers = append(e.Tiers, erase.Tier{Name: t.Name, Where: t.Where,
				Eraser: &clickhousestore.WarmEraser{DB: t.ClickHouse, Schema: clickhousestore.Schema{Database: t.CH.Database, Cluster: t.CH.ClusterName}}})
		default:
			e.Tiers = append(e.Tiers, erase.Tier{Name: t.Name, Where: t.Where,
				Eraser: &clickhousestore.ColdEraser{DB: t.ClickHouse, Schema: clickhousestore.Schema{Database: t.CH.Database, Cluster: t.CH.ClusterName}}})
		}
	}
	pu := payloadsURLFlag
	if pu == "" && cfg.Payloads.HasValue() {
		pu = cfg.Payloads.Get().URL
	}
	if pu != "" {
		grace := runagainstorageextension.DefaultHotRetention
		if cfg.Hot.HasValue() && cfg.Hot.Get().Retention > 0 {
			grace = cfg.Hot.Get().Retention
		}
		dir := ""
		if cfg.Payloads.HasValue() && pu == cfg.Payloads.Get().URL {
			dir = cfg.Payloads.Get().Dir // the pack layout's digest index
		}
		e.Payloads = erase.NewSweeper(pu, dir, grace, nil)
	}
	ds, err := openDatasets(ctx)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, ds.Close)
	e.Datasets = ds
	if dir := keysDir(); seal.Exists(dir) {
		keys, err := seal.OpenKeys(ctx, dir, os.Getenv("RUNAGAIN_SEAL_KEEPER_URL"))
		if err != nil {
			return fail(fmt.Errorf("sealed originals: %w", err))
		}
		closers = append(closers, keys.Close)
		e.Keys = keys
	}
	return e, closeAll, nil
}

// flagStorageConfig is the runagain_storage configuration the flags describe without --config:
// the embedded default's files under --data-dir, or the tiers on --clickhouse, and --cold-url.
func flagStorageConfig() *runagainstorageextension.Config { return dirStorageConfig(dataDirFlag) }

// dirStorageConfig is flagStorageConfig for the data directory dir.
func dirStorageConfig(dir string) *runagainstorageextension.Config {
	cfg := runagainstorageextension.NewDefaultConfig()
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	cfg.Hot.GetOrInsertDefault().SQLite.GetOrInsertDefault().Path = filepath.Join(dir, "hot.db")
	cfg.Warm.GetOrInsertDefault().SQLite.GetOrInsertDefault().Path = filepath.Join(dir, "warm.db")
	cfg.Cold.GetOrInsertDefault().Parquet.GetOrInsertDefault().URL = filepath.Join(dir, "cold")
	cfg.Payloads.GetOrInsertDefault().URL = "file://" + filepath.ToSlash(filepath.Join(dir, "blobs"))
	cfg.Payloads.GetOrInsertDefault().Dir = filepath.Join(dir, "payloads")
	applyFlagOverrides(cfg, func(name string) bool {
		switch name {
		case "clickhouse", "clickhouse-database":
			return clickhouseFlag != ""
		case "clickhouse-hot-database":
			return clickhouseHotDBFlag != ""
		case "cold-url":
			return coldURLFlag != ""
		}
		return false
	})
	// The flags name no credentials: a ClickHouse tier's user and password come from the environment.
	for _, ch := range []*configoptional.Optional[runagainstorageextension.ClickHouseConfig]{&cfg.Hot.Get().ClickHouse, &cfg.Warm.Get().ClickHouse, &cfg.Cold.Get().ClickHouse} {
		if ch.HasValue() {
			ch.Get().Username = os.Getenv("RUNAGAIN_CLICKHOUSE_USERNAME")
			ch.Get().Password = configopaque.String(os.Getenv("RUNAGAIN_CLICKHOUSE_PASSWORD"))
		}
	}
	return cfg
}
