// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/termsafe"
)

func init() {
	rootCmd.AddCommand(newQuarantineCmd())
}

// newQuarantineCmd lists the hot tier's dead-letter table: spans the span_quarantine processor
// took out of their request because no tier can store them as spans.
func newQuarantineCmd() *cobra.Command {
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "quarantine",
		Short: "List spans kept aside because they cannot be stored as spans (all-zero ids), newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spans, err := readQuarantine(contextOf(cmd), limit)
			if err != nil {
				return err
			}
			if asJSON {
				return writeQuarantineJSON(cmd, spans)
			}
			w := tabwriter.NewWriter(termsafe.NewWriter(cmd.OutOrStdout()), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "RECEIVED\tREASON\tSERVICE\tNAME\tTRACE_ID\tSPAN_ID")
			for _, q := range spans {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", q.Received.Format("2006-01-02T15:04:05Z"), q.Reason,
					termsafe.Cell(q.Service), termsafe.Cell(q.Name), q.TraceID, q.SpanID)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if len(spans) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "no quarantined spans")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON array; each span's otlp is its OTLP JSON TracesData, as received")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many, newest first (0: all)")
	return cmd
}

// readQuarantine reads the hot tier's dead-letter table: --config's runagain_storage::hot (SQLite
// or ClickHouse, runagainstorageextension.Config.Quarantined), or <data-dir>/hot.db.
func readQuarantine(ctx context.Context, limit int) ([]store.QuarantinedSpan, error) {
	cfg, err := storageConfig()
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		return cfg.Quarantined(ctx, limit)
	}
	return runagainstorageextension.QuarantinedSQLite(ctx, filepath.Join(dataDirFlag, "hot.db"), limit)
}

func writeQuarantineJSON(cmd *cobra.Command, spans []store.QuarantinedSpan) error {
	type row struct {
		store.QuarantinedSpan
		OTLP json.RawMessage `json:"otlp"`
	}
	out := make([]row, 0, len(spans))
	for _, q := range spans {
		out = append(out, row{q, json.RawMessage(q.OTLP)})
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
