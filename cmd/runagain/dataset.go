// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/runagain/runagain/internal/dataset"
	"github.com/runagain/runagain/internal/store"
)

// datasetsURLFlag is where datasets are kept: a gocloud.dev/blob URL (RUNAGAIN_DATASETS_URL,
// default file://<data-dir>/datasets).
var datasetsURLFlag string

func init() {
	rootCmd.AddCommand(newDatasetCmd())
}

func addDatasetsFlag(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&datasetsURLFlag, "datasets-url", os.Getenv("RUNAGAIN_DATASETS_URL"),
		"dataset store, a gocloud.dev/blob URL (file://, s3://, gs://, azblob://); default: --config's runagain_storage datasets::url, else file://<data-dir>/datasets (env RUNAGAIN_DATASETS_URL)")
}

func openDatasets(ctx context.Context) (*dataset.Store, error) {
	u := datasetsURLFlag
	if cfg, err := storageConfig(); err != nil {
		return nil, err
	} else if u == "" && cfg != nil && cfg.Datasets.HasValue() {
		u = cfg.Datasets.Get().URL // --config: the runagain_storage extension's datasets::url
	}
	if u == "" {
		// the default lives in the data directory: a directory that is not there is a typo or
		// the wrong machine, not an empty store to create
		if st, err := os.Stat(dataDirFlag); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("dataset store: the data directory %s does not exist (is --data-dir / RUNAGAIN_DATA_DIR the collector's data directory? --datasets-url names another store)", dataDirFlag)
		}
		u = dataset.DefaultURL(dataDirFlag)
	}
	return dataset.Open(ctx, u)
}

func newDatasetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dataset",
		Short: "Versioned regression datasets: runs frozen as cases with expectations",
		Long: `A dataset version is an immutable set of cases, each a frozen run (its spans, rehydrated payloads,
recorded HTTP fixtures and log records) with expectations a new run must meet (runagain test).
Its id is the SHA-256 of its cases: the same cases give the same version. Runs in any dataset
are pinned: no retention janitor deletes them or their payloads.`,
	}
	addDatasetsFlag(cmd)
	cmd.AddCommand(newDatasetAddCmd(), newDatasetListCmd(), newDatasetShowCmd(), newDatasetVersionsCmd(),
		newDatasetRmCmd(), newDatasetExportCmd(), newDatasetImportCmd())
	return cmd
}

func newDatasetAddCmd() *cobra.Command {
	var note, caseID, input, pattern, since string
	var expects []string
	var strict bool
	var limit int
	cmd := &cobra.Command{
		Use:   "add NAME {TRACE_ID... | --pattern ID [--limit N]} [--note TEXT] [--expect KIND=VALUE]...",
		Short: "Freeze runs into a new version of dataset NAME (the previous version's cases plus these)",
		Long: `add reads each run from the store (it must still be in the hot tier: spans and payloads), rehydrates
its offloaded payloads, and freezes it as a case whose id is its trace id. The new version holds the
newest version's cases plus these (a case with the same id is replaced).

--expect (repeatable, applied to every run given):
  output=TEXT  output~TEXT (contains)  output/REGEX  output.PATH=JSON (JSON value at a gjson path)
  output=recorded            the run's own final output, exactly
  tools=NAME,NAME...         the tool calls in order (names); tools=recorded: names and arguments
  max_cost_usd=N  max_tokens=N  max_steps=N  max_duration=DURATION
  no_alert=KIND|any          replay=strict  replay=diverge_after:N
  no_pattern=ID              the new run's failure signature must not fall in pattern ID

--pattern ID (runagain patterns lists them) freezes up to --limit runs of that failure pattern
(default 5), chosen to cover its variants (the newest run of each, most frequent first), each
expecting no_pattern=ID: runagain test then passes only when the failure does not recur.
Expectations can be edited later in the exported expect.yaml files (runagain dataset export/import).

A case that cannot work is warned about: a run with no recorded HTTP exchanges (runagain test has
nothing to replay), an expectation the recorded run itself fails. --strict refuses the version then.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if pattern != "" {
				if len(args) != 1 || caseID != "" || input != "" || len(expects) > 0 || strict {
					return errors.New("--pattern ID takes the dataset NAME only (no trace ids, --case-id, --input, --expect or --strict)")
				}
				return datasetAddPattern(cmd, args[0], pattern, since, limit, note)
			}
			if len(args) < 2 {
				return errors.New("give NAME and at least one TRACE_ID, or NAME --pattern ID")
			}
			if caseID != "" && len(args) != 2 {
				return errors.New("--case-id names one case: give one run")
			}
			return datasetAdd(cmd, args[0], args[1:], note, caseID, input, expects, strict)
		},
	}
	cmd.Flags().StringVar(&note, "note", "", "a note kept with the version (not part of its digest)")
	cmd.Flags().StringVar(&input, "input", "", "the case input given to the command under test as RUNAGAIN_CASE_INPUT (default: the run's first LLM call's last user message)")
	cmd.Flags().StringVar(&caseID, "case-id", "", "case id (default: the run's trace id); one run only")
	cmd.Flags().StringArrayVar(&expects, "expect", nil, "expectation KIND=VALUE, repeatable (see above)")
	cmd.Flags().StringVar(&pattern, "pattern", "", "freeze runs of this failure pattern (runagain patterns), expecting no_pattern=ID")
	cmd.Flags().IntVar(&limit, "limit", dataset.DefaultPatternLimit, "with --pattern: at most this many runs")
	cmd.Flags().StringVar(&since, "since", "", "with --pattern: runs that started since (7d, a date, an RFC 3339 time)")
	cmd.Flags().BoolVar(&strict, "strict", false, "refuse the new version when a case cannot work (no recorded exchanges, or an expectation the recorded run fails)")
	return cmd
}

// datasetAddPattern is dataset add --pattern: dataset.AddFromPattern, then its cases' problems.
func datasetAddPattern(cmd *cobra.Command, name, id, since string, limit int, note string) error {
	ctx := contextOf(cmd)
	if limit < 1 {
		return fmt.Errorf("--limit %d: must be at least 1", limit)
	}
	a := dataset.PatternAdd{Name: name, PatternID: id, Limit: limit, Note: note}
	if since != "" {
		t, err := store.ParseTimeArg("--since", since, time.Now())
		if err != nil {
			return err
		}
		a.Since = t
	}
	st, err := openDatasets(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	rd, err := openReader()
	if err != nil {
		return err
	}
	defer rd.Close()
	pr, ok := rd.(store.PatternReader)
	if !ok {
		return fmt.Errorf("--pattern: the configured store (%T) has no run index with failure signatures", rd)
	}
	if a.View, err = viewOptions(); err != nil {
		return err
	}
	res := newPayloadResolver()
	defer res.Close()
	a.View.Resolver = res
	m, created, cases, err := dataset.AddFromPattern(ctx, st, rd, pr, a)
	if err != nil {
		return err
	}
	var problems []string
	for _, c := range cases {
		problems = append(problems, c.Case.Problems(c.Facts)...)
	}
	for _, p := range problems {
		fmt.Fprintf(cmd.ErrOrStderr(), "runagain dataset add: warning: %s\n", p)
	}
	state := "new version"
	if !created {
		state = "unchanged: this version already exists"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "dataset %s@%s: %d cases (%s); %d from pattern %s, each expecting no_pattern=%s\n",
		m.Name, dataset.Short(m.Version), len(m.Cases), state, len(cases), id, id)
	return nil
}

func datasetAdd(cmd *cobra.Command, name string, runs []string, note, caseID, input string, expects []string, strict bool) error {
	ctx := contextOf(cmd)
	if err := dataset.CheckName(name); err != nil {
		return err
	}
	st, err := openDatasets(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	rd, err := openReader()
	if err != nil {
		return err
	}
	defer rd.Close()
	o, err := viewOptions()
	if err != nil {
		return err
	}
	res := newPayloadResolver()
	defer res.Close()
	cases, problems, err := dataset.FreezeRuns(ctx, rd, dataset.RunsAdd{TraceIDs: runs, CaseID: caseID, Input: input, Expects: expects, View: o, Rehydrator: res})
	if err != nil {
		return err
	}
	for _, p := range problems {
		fmt.Fprintf(cmd.ErrOrStderr(), "runagain dataset add: warning: %s\n", p)
	}
	if strict && len(problems) > 0 {
		return fmt.Errorf("--strict: %d case problem(s); nothing was added", len(problems))
	}
	// The new version: the newest version's cases, these added or replacing.
	m, created, err := st.Add(ctx, name, note, cases)
	if err != nil {
		return err
	}
	state := "new version"
	if !created {
		state = "unchanged: this version already exists"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "dataset %s@%s: %d cases (%s)\n", m.Name, dataset.Short(m.Version), len(m.Cases), state)
	return nil
}

func newDatasetListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the datasets with their newest version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := contextOf(cmd)
			st, err := openDatasets(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			rows, err := st.List(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rows)
			}
			if len(rows) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "no datasets in %s (create one with: runagain dataset add NAME TRACE_ID)\n", st.Location())
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "DATASET\tVERSIONS\tLATEST\tCASES\tCREATED\tNOTE")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\n", r.Name, r.Versions, dataset.Short(r.Latest), r.Cases, r.Created.Format(time.RFC3339), r.Note)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "JSON output")
	return cmd
}

func newDatasetVersionsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "versions NAME",
		Short: "List the versions of a dataset, newest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := contextOf(cmd)
			st, err := openDatasets(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			vs, err := st.Versions(ctx, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), vs)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "VERSION\tCASES\tCREATED\tNOTE")
			for _, m := range vs {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", m.Version, len(m.Cases), m.Created.Format(time.RFC3339), m.Note)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "JSON output (the manifests)")
	return cmd
}

func newDatasetShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show NAME[@VERSION]",
		Short: "Show a dataset version: its cases, their runs and expectations",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := contextOf(cmd)
			st, err := openDatasets(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			m, err := st.Resolve(ctx, args[0])
			if err != nil {
				return err
			}
			cases, err := st.Cases(ctx, m)
			if err != nil {
				return err
			}
			type caseOut struct {
				dataset.CaseRef
				Spans    int                   `json:"spans"`
				Fixtures int                   `json:"fixtures"`
				Input    string                `json:"input"`
				Expect   []dataset.Expectation `json:"expect"`
			}
			vo, err := viewOptions()
			if err != nil {
				return err
			}
			var outs []caseOut
			for i, c := range cases {
				o := caseOut{CaseRef: m.Cases[i], Spans: c.Traces.SpanCount(), Fixtures: c.Fixtures(), Expect: c.Expect.Expect}
				v, _ := c.View(ctx, vo) // nil (no input read) when the run cannot be read
				o.Input = c.Input(v)
				outs = append(outs, o)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"name": m.Name, "version": m.Version, "created": m.Created, "note": m.Note, "cases": outs})
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "dataset %s@%s\nversion %s\ncreated %s\n", m.Name, dataset.Short(m.Version), m.Version, m.Created.Format(time.RFC3339))
			if m.Note != "" {
				fmt.Fprintf(w, "note    %s\n", m.Note)
			}
			fmt.Fprintf(w, "%d cases\n", len(outs))
			for _, o := range outs {
				fmt.Fprintf(w, "\ncase %s  run %s  %d spans, %d recorded HTTP exchanges, digest %s\n", o.ID, o.TraceID, o.Spans, o.Fixtures, dataset.Short(o.Digest))
				if o.Input != "" {
					fmt.Fprintf(w, "  input: %q\n", clipStr(o.Input, 100))
				}
				if len(o.Expect) == 0 {
					fmt.Fprintln(w, "  no expectations (the command must succeed and replay must not diverge)")
				}
				for _, e := range o.Expect {
					fmt.Fprintf(w, "  expect %s\n", e.Name())
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "JSON output")
	return cmd
}

func clipStr(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func newDatasetRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME@VERSION",
		Short: "Delete one version of a dataset (its runs stay pinned while another version holds them)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := contextOf(cmd)
			if !strings.Contains(args[0], "@") {
				return fmt.Errorf("rm %s: name the version (NAME@VERSION; runagain dataset versions %s lists them)", args[0], args[0])
			}
			st, err := openDatasets(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			m, err := st.Resolve(ctx, args[0])
			if err != nil {
				return err
			}
			if err := st.Remove(ctx, m.Name, m.Version); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed dataset %s@%s\n", m.Name, dataset.Short(m.Version))
			return nil
		},
	}
}

func newDatasetExportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "export NAME[@VERSION] DIR",
		Short: "Write a dataset version as plain files (OTLP JSON per case, bodies, expect.yaml, manifest.json)",
		Long: `export writes DIR/manifest.json (name, version, every file's SHA-256) and, per case,
DIR/cases/<id>/run.json (OTLP JSON spans, fixture bodies moved to bodies/), logs.json, bodies/...
and expect.yaml (editable). Commit DIR to a repository; runagain dataset import DIR reads it back
into any store as the same version (same digest) unless expect.yaml files were edited.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := contextOf(cmd)
			st, err := openDatasets(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			m, err := st.Resolve(ctx, args[0])
			if err != nil {
				return err
			}
			if err := st.Export(ctx, m, args[1]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "exported dataset %s@%s (%d cases) to %s\n", m.Name, dataset.Short(m.Version), len(m.Cases), args[1])
			return nil
		},
	}
}

func newDatasetImportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "import DIR",
		Short: "Read an exported dataset directory into the store",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := contextOf(cmd)
			st, err := openDatasets(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			r, err := st.Import(ctx, args[0])
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			state := "new version"
			if !r.Created {
				state = "already in the store"
			}
			fmt.Fprintf(w, "imported dataset %s@%s: %d cases (%s)\n", r.Manifest.Name, dataset.Short(r.Manifest.Version), len(r.Manifest.Cases), state)
			if len(r.Edited) > 0 {
				fmt.Fprintf(w, "expectations edited in %s: a new version (exported as %s)\n", strings.Join(r.Edited, ", "), dataset.Short(r.Exported))
			}
			return nil
		},
	}
}
