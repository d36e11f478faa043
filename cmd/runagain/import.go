// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runagain/runagain/internal/importer"
	"github.com/runagain/runagain/internal/otlpclient"
	"github.com/runagain/runagain/internal/partialsuccess"
)

// importOptions are the flags of `runagain import`.
type importOptions struct {
	otlpFlags
	timeout         time.Duration
	maxRequestBytes int
	wait            time.Duration // how long to wait until the imported runs are readable (0: do not wait)
	waitSet         bool          // --wait given explicitly: not readable in time is an error
}

func init() {
	rootCmd.AddCommand(newImportCmd())
}

func newImportCmd() *cobra.Command {
	o := &importOptions{}
	cmd := &cobra.Command{
		Use:   "import FILE...",
		Short: "Send runs exported by other tools to a collector over OTLP gRPC",
		Long: `Import reads each FILE, detects its format by content and sends its spans to an OTLP gRPC
endpoint (the runagain collector by default) with the standard OTLP client.

Formats: OTLP/JSON as written by the collector's file exporter (one document per line or one
whole document), Langfuse trace JSON ({"trace":...,"observations":[...]}; the original OTel
attributes, resource and scope are read from each observation's metadata), and any-agent span
JSON ({"spans":[...]}), plus every other format registered in internal/importer (see the list
below). Attribute values keep their types and are never truncated.

Each file is parsed completely before anything from it is sent: a malformed file fails with
FILE:LINE:COLUMN and nothing from it is sent; the other files are still imported. A cassette
recording no HTTP exchange (nock's "[]" for a test that made no request) is refused the same way. Requests are
split to stay under --max-request-bytes; a single span larger than that is sent alone, and the
receiver must accept it (otlp receiver protocols.grpc.max_recv_msg_size_mib).

Import returns once every imported run is readable in the store it shares with the collector
(--data-dir), with all its spans, so a script can import and then replay or show at once;
--wait bounds how long it waits (default 15s, 0 to return right after sending).

Formats, in detection order: ` + formatNames() + `.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.waitSet = cmd.Flags().Changed("wait")
			sender, err := o.dial(cmd, otlpclient.Options{MaxRequestBytes: o.maxRequestBytes, Timeout: o.timeout})
			if err != nil {
				return err
			}
			defer sender.Close()
			return runImport(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, sender, args)
		},
	}
	o.register(cmd)
	f := cmd.Flags()
	f.DurationVar(&o.timeout, "timeout", otlpclient.DefaultTimeout, "timeout of each export request")
	f.IntVar(&o.maxRequestBytes, "max-request-bytes", otlpclient.DefaultMaxRequestBytes, "split export requests to stay under this protobuf size")
	f.DurationVar(&o.wait, "wait", defaultImportWait, "after sending, wait up to this long until every imported run is readable with all its spans in the store (--data-dir); 0 returns at once. Given explicitly, a run not readable in time is an error; by default a warning, and there is no wait when no local store exists")
	return cmd
}

// runImport parses and sends each file in turn and prints one summary line per file to out.
// It returns an error naming every file that failed.
func runImport(ctx context.Context, out, errOut io.Writer, o *importOptions, sender *otlpclient.Client, files []string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()

	var failed []error
	var sent []sentRun
	for _, file := range files {
		res, err := importer.ParseFile(file)
		if err != nil {
			failed = append(failed, err) // nothing from this file was sent
			continue
		}
		spans, traces := res.SpanCount(), res.TraceCount()
		st, err := sender.SendTraces(ctx, res.Traces)
		for _, w := range st.Warnings {
			fmt.Fprintf(errOut, "runagain import: %s: collector warning: %s\n", file, w)
		}
		var rej *otlpclient.RejectedError
		quarantined := errors.As(err, &rej) && quarantinedAll(rej)
		if err != nil && !quarantined {
			failed = append(failed, fmt.Errorf("%s: sent %d of %d spans: %w", file, st.Spans, spans, err))
			continue
		}
		fmt.Fprintf(out, "%s: %s, %s, %s sent to %s (%s, %d bytes)\n",
			file, res.Format, counted(spans, "span"), counted(traces, "trace"), o.endpoint, counted(st.Requests, "request"), st.Bytes)
		if quarantined {
			// Invalid OTLP (an all-zero id): kept whole in the dead-letter table, not as a run.
			fmt.Fprintf(out, "  %d spans kept in the collector's quarantine, not as runs: %s (runagain quarantine lists them)\n",
				rej.Rejected, strings.Join(rej.Messages, "; "))
		}
		runs := runsOf(file, res.Traces)
		// The trace ids to pass to show, replay or dataset add: a cassette's are generated here.
		const listed = 20
		for i, r := range runs {
			if i == listed {
				fmt.Fprintf(out, "  ... and %d more runs (runagain sessions lists them)\n", len(runs)-listed)
				break
			}
			fmt.Fprintf(out, "  run %s (%s)\n", r.traceID, counted(r.spans, "span"))
		}
		sent = append(sent, runs...)
	}
	if o.wait > 0 && len(sent) > 0 {
		if err := waitReadable(ctx, sent, o.wait); err != nil {
			if o.waitSet {
				failed = append(failed, err)
			} else {
				fmt.Fprintf(errOut, "runagain import: warning: %v\n", err)
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d files failed:\n%w", len(failed), len(files), errors.Join(failed...))
	}
	return nil
}

// formatNames lists the registered import formats in detection order.
func formatNames() string {
	var names []string
	for _, f := range importer.Default.Formats() {
		names = append(names, f.Name())
	}
	return strings.Join(names, ", ")
}

// quarantinedAll reports whether every span the collector rejected was kept in its quarantine
// (span_quarantine's partial-success message says partialsuccess.KeptInQuarantine): nothing was lost.
func quarantinedAll(rej *otlpclient.RejectedError) bool {
	if len(rej.Messages) == 0 {
		return false
	}
	for _, m := range rej.Messages {
		if !strings.Contains(m, partialsuccess.KeptInQuarantine) {
			return false
		}
	}
	return true
}

// counted is n and the noun, plural unless n is 1 ("1 span", "3 spans").
func counted[N ~int | ~int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
