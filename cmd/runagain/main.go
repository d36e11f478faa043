// Command runagain reads agent runs back from a runagain store, imports runs and cassettes
// recorded by other tools, and (in later subcommands) records, replays and diffs them.
//
// Subcommands live one per file in this package and register themselves on rootCmd in init.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
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
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "runagain:", err)
		os.Exit(1)
	}
}
