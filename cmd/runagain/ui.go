// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/runagain/runagain/internal/ui"
)

func init() {
	var listen, token, tokenFile string
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve a web view of sessions, runs, steps and diffs over the store",
		Long: `Serve the web interface over the same store the other commands read (--data-dir, or
--clickhouse and --cold-url), on ` + ui.DefaultListen + ` by default.

Pages: Sessions (filters, newest first), Run (a waterfall timeline with alerts and replay
divergences pinned where they happened; select a span for its messages, attributes and raw
OTLP), Step N (/runs/TRACE_ID/steps/N, what "show --step N" prints) and Diff.

The UI shows every stored prompt and payload. Listening anywhere but loopback requires a bearer
token (--token or --token-file, or RUNAGAIN_UI_TOKEN): requests must then send
"Authorization: Bearer TOKEN"; a browser opens any page once with ?token=TOKEN (kept in a cookie).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tokenFile != "" {
				if token != "" {
					return fmt.Errorf("--token and --token-file: give one")
				}
				b, err := os.ReadFile(tokenFile)
				if err != nil {
					return fmt.Errorf("--token-file: %w", err)
				}
				token = strings.TrimSpace(string(b))
				if token == "" {
					return fmt.Errorf("--token-file %s is empty", tokenFile)
				}
			}
			if err := ui.CheckListen(listen, token); err != nil {
				return err
			}
			r, err := openReader()
			if err != nil {
				return err
			}
			defer r.Close()
			ds, err := openDatasets(cmd.Context())
			if err != nil {
				return err
			}
			defer ds.Close()
			vo, err := viewOptions()
			if err != nil {
				return err
			}
			srv, err := ui.New(ui.Options{Reader: r, Datasets: ds, NoRehydrate: noRehydrate, Prices: vo.Prices, SessionKeys: vo.SessionKeys,
				Quarantine: readQuarantine, PayloadStaging: payloadStagingDir()})
			if err != nil {
				return err
			}
			defer srv.Close()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return ui.Serve(ctx, listen, ui.WithToken(srv, token), func(a net.Addr) {
				auth := ""
				if token != "" {
					auth = " (bearer token required)"
				}
				fmt.Fprintf(os.Stdout, "runagain ui: http://%s/%s\n", a, auth)
			})
		},
	}
	cmd.Flags().StringVar(&listen, "listen", ui.DefaultListen, "address to listen on (host:port); non-loopback needs a token")
	cmd.Flags().StringVar(&token, "token", os.Getenv("RUNAGAIN_UI_TOKEN"), "bearer token every request must carry (env RUNAGAIN_UI_TOKEN)")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "read the bearer token from this file")
	cmd.Flags().BoolVar(&noRehydrate, "no-rehydrate", false, "show payload references (K_ref) instead of fetching the payloads")
	addDatasetsFlag(cmd)
	rootCmd.AddCommand(cmd)
}
