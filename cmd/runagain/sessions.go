package main

import (
	"context"
	"fmt"
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
	var since string
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
of each listed run: bound it with --since or --limit on a large store.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return fmt.Errorf("--limit %d: must be 0 (all) or positive", limit)
			}
			f := store.RunFilter{Limit: limit}
			if since != "" {
				t, err := store.ParseTimeArg("--since", since, time.Now())
				if err != nil {
					return err
				}
				f.Since = t
			}
			r, err := openReader()
			if err != nil {
				return err
			}
			defer r.Close()
			runs, err := r.Runs(cmd.Context(), f)
			if err != nil {
				return err
			}
			var reasons []string
			if failed {
				runs, reasons, err = failedRuns(cmd.Context(), r, runs)
				if err != nil {
					return err
				}
			}
			if asJSON {
				if runs == nil {
					runs = []store.RunSummary{}
				}
				if failed {
					type row struct {
						store.RunSummary
						Reason string `json:"reason"`
					}
					rows := make([]row, len(runs))
					for i := range runs {
						rows[i] = row{runs[i], reasons[i]}
					}
					return printJSON(cmd.OutOrStdout(), rows)
				}
				return printJSON(cmd.OutOrStdout(), runs)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			head := "SESSION\tTRACE ID\tSTART (UTC)\tDURATION\tSPANS\tMODELS\tTOKENS IN/OUT\tCOST\tERRORS\tTIER"
			anyIncomplete := false
			for _, r := range runs {
				anyIncomplete = anyIncomplete || r.Incomplete
			}
			if anyIncomplete { // a partial record must not look complete
				head += "\tINCOMPLETE"
			}
			if failed {
				head += "\tREASON"
			}
			fmt.Fprintln(tw, head)
			for i, r := range runs {
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
					fmt.Fprintf(tw, "\t%s", termsafe.Cell(reasons[i]))
				}
				fmt.Fprintln(tw)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "only runs started since this long ago (90m, 24h, 7d) or this date or time (2025-09-30, RFC 3339)")
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

// failedRuns keeps the runs with error spans, alerts or replay divergences and says why.
func failedRuns(ctx context.Context, rd store.Reader, runs []store.RunSummary) ([]store.RunSummary, []string, error) {
	var out []store.RunSummary
	var reasons []string
	for _, r := range runs {
		var why []string
		if r.Errors > 0 {
			why = append(why, fmt.Sprintf("%d error spans", r.Errors))
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
				return nil, nil, fmt.Errorf("run %s: %w", r.TraceID, err)
			}
			f, err := factsOf(ctx, &store.Run{TraceID: run.TraceID, Traces: ptrace.NewTraces(), Logs: run.Logs, Tier: run.Tier})
			if err != nil {
				return nil, nil, err
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
		if len(why) > 0 {
			out = append(out, r)
			reasons = append(reasons, strings.Join(why, ", "))
		}
	}
	return out, reasons, nil
}
