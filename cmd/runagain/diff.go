// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/runagain/runagain/internal/diff"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/termsafe"
)

func init() {
	rootCmd.AddCommand(newDiffCmd())
}

// errRunsDiffer is returned with --exit-code when the runs differ (exit status 1).
var errRunsDiffer = errors.New("the runs differ")

func newDiffCmd() *cobra.Command {
	var asJSON, exitCode bool
	var step int
	var colorMode string
	cmd := &cobra.Command{
		Use:   "diff RUN_A RUN_B",
		Short: "Compare two runs step by step and name the first step where they differ, and why",
		Long: `diff aligns the steps of two runs (LLM calls, tool calls, and recorded HTTP exchanges to tools)
with the Myers difference algorithm on their signatures (kind, operation, tool name, model; a step
whose model changed still pairs with its counterpart), names the first step that differs and why
(input messages, output, tool chosen, tool arguments, tool result, model, finish reason, error),
and shows for every aligned step the messages compared message by message with a line diff inside
a changed one, tool arguments and results compared as JSON by path, tokens, cost, latency and
status; steps only in one run are listed as such; totals with deltas close the report.

--step N compares what the model saw (and answered) at LLM call N of each run.
--json prints the result in the stable schema of internal/diff/README.md.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := contextOf(cmd)
			views := make([]*runview.View, 2)
			rd, err := openReader()
			if err != nil {
				return err
			}
			for i, id := range args {
				tid, err := store.ResolveTraceID(ctx, rd, id)
				if err != nil {
					rd.Close()
					return fmt.Errorf("run %s: %w", id, err)
				}
				run, err := rd.Run(ctx, tid)
				if err != nil {
					rd.Close()
					return fmt.Errorf("run %s: %w", id, err)
				}
				v, closeView, err := buildView(ctx, run)
				if err != nil {
					rd.Close()
					return err
				}
				closeView()
				views[i] = v
			}
			rd.Close()
			res, err := diff.Runs(views[0], views[1], diff.Options{Step: step})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					return err
				}
			} else {
				color, err := useColor(colorMode, out)
				if err != nil {
					return err
				}
				if tw, ok := out.(*termsafe.Writer); ok && color {
					// diff.WriteText escapes every recorded value itself; let its colour through.
					out = &termsafe.Writer{W: tw.W, AllowSGR: true}
				}
				if err := diff.WriteText(out, res, color); err != nil {
					return err
				}
			}
			if exitCode && !res.Identical {
				return errRunsDiffer
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON (schema: internal/diff/README.md)")
	cmd.Flags().IntVar(&step, "step", 0, "compare only LLM call N (1-based, as show --step) of each run: what the model saw and answered")
	cmd.Flags().StringVar(&colorMode, "color", "auto", "colour the output: auto (when stdout is a terminal and NO_COLOR is unset), always, never")
	cmd.Flags().BoolVar(&exitCode, "exit-code", false, "exit with status 1 when the runs differ (like git diff --exit-code)")
	cmd.Flags().BoolVar(&noRehydrate, "no-rehydrate", false, "compare offloaded payloads by reference instead of fetching them")
	return cmd
}

func useColor(mode string, w io.Writer) (bool, error) {
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto":
		if os.Getenv("NO_COLOR") != "" {
			return false, nil
		}
		f, ok := w.(*os.File)
		if tw, isTW := w.(*termsafe.Writer); isTW {
			f, ok = tw.File(), tw.File() != nil
		}
		return ok && term.IsTerminal(int(f.Fd())), nil
	}
	return false, fmt.Errorf("--color %q: want auto, always or never", mode)
}
