// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/termsafe"
)

func init() {
	var since, until string
	var asJSON bool
	var limit int
	var failed bool
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List stored runs, newest first",
		Long: `List stored runs (one row per trace), newest first: session, trace id, start, duration,
spans, models, tokens (input/output), cost in USD and error spans. Cost is priced once per LLM call
when stored, with the price table and overrides of the collector's runagain_storage extension;
a model with no known price shows "unpriced" (never $0).

--since takes a duration back from now (24h, 90m), a date (2025-09-30, UTC) or an RFC 3339 time
(2025-09-30T00:00:00Z). It filters on when the run started (its first span), not on when it was
stored: an imported run keeps its original time.

--failed keeps the runs worth turning into regression cases (runagain dataset add): those with
error spans, agent_guard alerts (event runagain.alert) or replay divergences
(runagain.replay.divergence) recorded against them, with a REASON column. It reads the records
of each listed run: bound it with --since or --limit on a large store (--limit N stops at the
N newest failing runs).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return fmt.Errorf("--limit %d: must be 0 (all) or positive", limit)
			}
			f := store.RunFilter{Limit: limit}
			if failed {
				// --failed decides per run after the index row is read (failedReason reads its
				// records): --limit counts the runs printed, not the runs read before the filter.
				f.Limit = 0
			}
			var err error
			if f.Since, f.Until, err = timeRange(since, until, time.Now()); err != nil {
				return err
			}
			r, err := openReader()
			if err != nil {
				return err
			}
			defer r.Close()
			// Runs stream from the run index in pages (store.EachRun): memory stays bounded
			// whatever the store holds; the table is aligned per block of tableBlock rows.
			out := cmd.OutOrStdout()
			var tw *tabwriter.Writer
			var js *jsonArray
			rows, anyIncomplete := 0, false
			var pending []store.RunSummary // the first block, to see whether any run is incomplete
			var pendingWhy []string
			printRow := func(r store.RunSummary, why string) {
				// Session ids and model names are recorded values: one cell each, escaped before
				// the tabwriter measures them (termsafe.Cell).
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%d/%d\t%s\t%d\t%s", termsafe.Cell(r.SessionID), r.TraceID,
					r.Start.Format("2006-01-02 15:04:05.000"), r.Duration().Round(time.Millisecond), r.Spans,
					termsafe.Cell(dash(strings.Join(r.Models, ","))), r.InputTokens, r.OutputTokens,
					pricing.FormatUSD(r.CostUSD, r.Unpriced, r.CostUSD > 0), r.Errors, r.Tier)
				if anyIncomplete {
					fmt.Fprintf(tw, "\t%s", termsafe.Cell(dash(r.IncompleteReason)))
				}
				if failed {
					fmt.Fprintf(tw, "\t%s", termsafe.Cell(why))
				}
				fmt.Fprintln(tw)
			}
			header := func() {
				head := "SESSION\tTRACE ID\tSTART (UTC)\tDURATION\tSPANS\tMODELS\tTOKENS IN/OUT\tCOST\tERRORS\tTIER"
				if anyIncomplete {
					head += "\tINCOMPLETE"
				}
				if failed {
					head += "\tREASON"
				}
				fmt.Fprintln(tw, head)
			}
			flushPending := func() {
				tw = tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
				for _, r := range pending {
					anyIncomplete = anyIncomplete || r.Incomplete // a partial record must not look complete
				}
				header()
				for i, r := range pending {
					printRow(r, pendingWhy[i])
				}
				pending, pendingWhy = nil, nil
			}
			if asJSON {
				js = &jsonArray{w: out}
			}
			var werr error
			// --failed: a run whose index row counts no error span, no alert and no divergence
			// record is not read; on a store whose tiers do not count divergences
			// (store.FiltersRunIndex), its list of runs with one decides (nil: the store cannot
			// say; each run is read).
			counted := store.FiltersRunIndex(r)
			var diverged map[string]bool
			if failed && !counted {
				if diverged, err = store.DivergedSet(cmd.Context(), r); err != nil {
					return err
				}
			}
			err = store.EachRun(cmd.Context(), r, f, func(run store.RunSummary) bool {
				why := ""
				if failed && (counted || diverged != nil) && run.Tier != store.TierCold && run.Errors == 0 && run.Alerts == 0 &&
					run.Divergences == 0 && !diverged[run.TraceID] {
					return true
				}
				if failed {
					var ok bool
					if why, ok, werr = failedReason(cmd.Context(), r, run); werr != nil || !ok {
						return werr == nil
					}
				}
				rows++
				switch {
				case js != nil && failed:
					werr = js.add(struct {
						store.RunSummary
						Reason string `json:"reason"`
					}{run, why})
				case js != nil:
					werr = js.add(run)
				case tw == nil:
					pending, pendingWhy = append(pending, run), append(pendingWhy, why)
					if len(pending) == tableBlock {
						flushPending()
					}
				default:
					if run.Incomplete && !anyIncomplete {
						// a partial record past the first block: a new header with the column
						werr = tw.Flush()
						anyIncomplete = true
						fmt.Fprintln(out)
						header()
					}
					printRow(run, why)
					if rows%tableBlock == 0 {
						werr = tw.Flush()
					}
				}
				return werr == nil && (limit == 0 || rows < limit)
			})
			if err = errors.Join(err, werr); err != nil {
				return err
			}
			if js != nil {
				return js.close()
			}
			if tw == nil {
				flushPending()
			}
			if rows == 0 {
				// The header alone reads like a broken listing: say what was read, and what fills it.
				if f != (store.RunFilter{}) || failed {
					fmt.Fprintf(cmd.ErrOrStderr(), "runagain sessions: no run matches (data directory %s)\n", dataDirFlag)
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "runagain sessions: no runs stored yet (data directory %s); send an agent's spans to the collector (make run), or `runagain import FILE`\n", dataDirFlag)
				}
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "only runs started since this long ago (90m, 24h, 7d) or this date or time (2025-09-30, RFC 3339)")
	cmd.Flags().StringVar(&until, "until", "", untilUsage)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for machines")
	cmd.Flags().BoolVar(&failed, "failed", false, "only runs with errors, alerts or replay divergences (candidates for a dataset)")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many runs (0: all)")
	rootCmd.AddCommand(cmd)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// tableBlock is how many rows `sessions` aligns at a time (text/tabwriter holds a block until it
// is flushed): long listings stream in blocks instead of being held whole.
const tableBlock = 1000

// jsonArray writes a JSON array one element at a time, in printJSON's layout (two-space indent).
type jsonArray struct {
	w io.Writer
	n int
}

func (a *jsonArray) add(v any) error {
	b, err := json.MarshalIndent(v, "  ", "  ")
	if err != nil {
		return err
	}
	sep := ",\n  "
	if a.n == 0 {
		sep = "[\n  "
	}
	a.n++
	if _, err := io.WriteString(a.w, sep); err != nil {
		return err
	}
	_, err = a.w.Write(b)
	return err
}

func (a *jsonArray) close() error {
	end := "\n]\n"
	if a.n == 0 {
		end = "[]\n"
	}
	_, err := io.WriteString(a.w, end)
	return err
}

// failedReason says why r is worth turning into a regression case (error spans, alerts, replay
// divergences), and false when it is not.
func failedReason(ctx context.Context, rd store.Reader, r store.RunSummary) (string, bool, error) {
	var why []string
	if r.Errors > 0 {
		why = append(why, counted(r.Errors, "error span"))
	}
	alerts := map[string]int{}
	divergences := 0
	if r.Tier == "cold" {
		if r.Alerts > 0 {
			why = append(why, fmt.Sprintf("%d alerts", r.Alerts))
		}
	} else {
		run, err := rd.Run(ctx, r.TraceID)
		if err != nil {
			return "", false, fmt.Errorf("run %s: %w", r.TraceID, err)
		}
		f, err := factsOf(ctx, &store.Run{TraceID: run.TraceID, Traces: ptrace.NewTraces(), Logs: run.Logs, Tier: run.Tier})
		if err != nil {
			return "", false, err
		}
		for _, k := range f.Alerts {
			alerts[k]++
		}
		if f.Divergence != nil {
			divergences++
		}
	}
	kinds := make([]string, 0, len(alerts))
	for k := range alerts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		why = append(why, fmt.Sprintf("alert %s x%d", k, alerts[k]))
	}
	if divergences > 0 {
		why = append(why, "replay divergence")
	}
	return strings.Join(why, ", "), len(why) > 0, nil
}
