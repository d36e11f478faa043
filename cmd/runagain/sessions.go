package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/store"
)

func init() {
	var since string
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List stored runs, newest first",
		Long: `List stored runs (one row per trace), newest first: session, trace id, start, duration,
spans, models, tokens (input/output), cost in USD and error spans. Cost is priced once per LLM call
when stored, with the price table and overrides of the collector's runagain_storage extension;
a model with no known price shows "unpriced" (never $0).

--since takes a duration back from now (24h, 90m), a date (2025-09-30, UTC) or an RFC 3339 time
(2025-09-30T00:00:00Z). It filters on when the run started (its first span), not on when it was
stored: an imported run keeps its original time.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return fmt.Errorf("--limit %d: must be 0 (all) or positive", limit)
			}
			f := store.RunFilter{Limit: limit}
			if since != "" {
				t, err := parseSince(since, time.Now())
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
			if asJSON {
				if runs == nil {
					runs = []store.RunSummary{}
				}
				return printJSON(os.Stdout, runs)
			}
			tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SESSION\tTRACE ID\tSTART (UTC)\tDURATION\tSPANS\tMODELS\tTOKENS IN/OUT\tCOST\tERRORS\tTIER")
			for _, r := range runs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%d/%d\t%s\t%d\t%s\n", r.SessionID, r.TraceID,
					r.Start.Format("2006-01-02 15:04:05.000"), r.Duration().Round(time.Millisecond), r.Spans,
					dash(strings.Join(r.Models, ",")), r.InputTokens, r.OutputTokens,
					pricing.FormatUSD(r.CostUSD, r.Unpriced, r.CostUSD > 0), r.Errors, r.Tier)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "only runs started since this duration ago (24h) or time (RFC 3339)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for machines")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many runs (0: all)")
	rootCmd.AddCommand(cmd)
}

// parseSince reads --since: a Go duration back from now, or an RFC 3339 timestamp.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("--since %q: duration must be positive", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration (24h, 90m), a date (2025-09-30) or an RFC 3339 time (2025-09-30T00:00:00Z)", s)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
