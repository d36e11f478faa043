// SPDX-License-Identifier: Apache-2.0

// Command runagain reads agent runs back from a runagain store, imports runs and cassettes
// recorded by other tools, and (in later subcommands) records, replays and diffs them.
//
// Subcommands live one per file in this package and register themselves on rootCmd in init.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/runagain/runagain/internal/agentrun"
	"github.com/runagain/runagain/internal/sandbox"
	"github.com/runagain/runagain/internal/termsafe"
)

// rootCmd is the runagain command; subcommand files add themselves to it in init().
var rootCmd = &cobra.Command{
	Use:           "runagain",
	Short:         "Time-travel debugging for AI agents: read, replay and diff recorded runs",
	SilenceUsage:  true,
	SilenceErrors: true,
}

// dataDirFlag is the data directory shared with the collector's embedded default
// (config/default.yaml): RUNAGAIN_DATA_DIR, else ./data.
var dataDirFlag string

func init() {
	def := os.Getenv("RUNAGAIN_DATA_DIR")
	if def == "" {
		def = "./data"
	}
	rootCmd.PersistentFlags().StringVar(&dataDirFlag, "data-dir", def, "data directory of the embedded store (env RUNAGAIN_DATA_DIR)")
}

func main() {
	// In the network sandbox's first process this sets the namespace up and execs the command.
	sandbox.Init()
	// Everything a command prints may hold recorded agent text: escape what could drive the
	// terminal (internal/termsafe); JSON output stays valid and decodes to the same values.
	rootCmd.SetOut(termsafe.NewWriter(os.Stdout))
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "runagain:", termsafe.String(err.Error()))
		var ce *commandExit
		if errors.As(err, &ce) {
			os.Exit(ce.exit.Code)
		}
		os.Exit(1)
	}
}

// commandExit is the error of proxy --record, replay and rerun when the command they ran failed
// (and nothing else did): runagain then exits with the command's own status (128+N for signal N),
// so a CI step wrapped in `runagain proxy --record --` fails as the step would have.
type commandExit struct{ exit agentrun.Exit }

func (e *commandExit) Error() string { return "command " + e.exit.String() }
