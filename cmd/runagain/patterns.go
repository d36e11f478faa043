// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/store"
)

func init() {
	var since, until string
	var asJSON bool
	filter := func() (store.PatternFilter, error) {
		var f store.PatternFilter
		var err error
		f.Since, f.Until, err = timeRange(since, until, time.Now())
		return f, err
	}
	cmd := &cobra.Command{
		Use:   "patterns",
		Short: "List the failures that repeat across runs, most frequent first",
		Long: `List failure patterns: failing runs grouped by their failure signature (what failed and how,
with ids, numbers, paths and quoted values replaced by placeholders; README "Failure patterns"),
most runs first. Each pattern shows its runs, its share of all runs and of failing runs, when it
was first and last seen, its trend per day, the models and agents involved, the cost spent in its
runs, the merge rules that joined near-identical signatures, and three example runs.

The signatures are computed when runs are stored (the run index): listing reads the index, not
the runs. --since filters on when a run started (24h, 7d, a date, an RFC 3339 time).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := filter()
			if err != nil {
				return err
			}
			pr, closeFn, err := openPatternReader()
			if err != nil {
				return err
			}
			defer closeFn()
			rep, err := patterns.List(cmd.Context(), pr, f)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(os.Stdout, rep)
			}
			return patterns.WriteText(os.Stdout, rep, time.Now())
		},
	}
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one pattern: its variants and its runs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := filter()
			if err != nil {
				return err
			}
			pr, closeFn, err := openPatternReader()
			if err != nil {
				return err
			}
			defer closeFn()
			p, runs, err := patterns.Show(cmd.Context(), pr, args[0], f)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(os.Stdout, struct {
					patterns.Pattern
					RunList []patterns.Run `json:"run_list"`
				}{p, runs})
			}
			return patterns.WriteShow(os.Stdout, p, runs, time.Now())
		},
	}
	cmd.AddCommand(show)
	cmd.PersistentFlags().StringVar(&since, "since", "", "runs that started since: a duration back from now (7d, 24h), a date or an RFC 3339 time")
	cmd.PersistentFlags().StringVar(&until, "until", "", untilUsage)
	cmd.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON")
	rootCmd.AddCommand(cmd)
}

// openPatternReader opens the store for patterns: the tiers with a run index.
func openPatternReader() (store.PatternReader, func(), error) {
	r, err := openReader()
	if err != nil {
		return nil, nil, err
	}
	pr, ok := r.(store.PatternReader)
	if !ok {
		r.Close()
		return nil, nil, fmt.Errorf("patterns: the configured store (%T) has no run index with failure signatures", r)
	}
	return pr, func() { r.Close() }, nil
}
