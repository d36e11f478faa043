// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/agentrun"
	"github.com/runagain/runagain/internal/dataset"
	"github.com/runagain/runagain/internal/dataset/runner"
	"github.com/runagain/runagain/internal/proxy"
	"github.com/runagain/runagain/internal/runagainattr"
)

type testOptions struct {
	proxy     proxyOptions
	parallel  int
	asJSON    bool
	junitPath string
	wait      time.Duration
	allow     []string
	ignBody   []string
	ignQuery  []string
	cases     []string
	change    string
	mcp       mcpFlags
}

func init() {
	rootCmd.AddCommand(newTestCmd())
}

func newTestCmd() *cobra.Command {
	o := &testOptions{}
	cmd := &cobra.Command{
		Use:   "test DATASET[@VERSION] -- COMMAND...",
		Short: "Run an agent against every case of a dataset and check the expectations (a CI gate)",
		Long: `test runs COMMAND once per case of the dataset version (the newest without @VERSION), against the
case's recorded HTTP exchanges: the command's HTTP goes through a recording proxy whose upstream is
the replay of the case (SDK base URLs, HTTP_PROXY and TRACEPARENT are set as for runagain replay),
so the new run is recorded as a trace of its own (root span "runagain test CASE", linked to the
case's run) while nothing reaches the network. The case is given to the command through:

  RUNAGAIN_CASE_ID     the case id
  RUNAGAIN_CASE_INPUT  the case input (expect.yaml "input", else the first LLM call's last user message)
  RUNAGAIN_CASE_FILE   a JSON file {"dataset", "version", "case", "trace_id", "input"}
  RUNAGAIN_CASE_DIR    a directory holding the case's files (run.json, bodies/, expect.yaml)
  RUNAGAIN_TEST_RUN    the trace id of the new run

When the command ends, test waits for the new run in the store (--data-dir; spans go to the
collector at --endpoint) and checks every expectation of the case in order, then that the command
exited 0 and (unless the case says otherwise with replay:) that no request diverged.

One line per case: PASS, or FAIL with the first failed expectation (expected and got) and the
runagain diff command comparing the recorded and the new run; then a summary. --json and
--junit FILE give the same for machines. Each case's result is also sent to the collector as an
OpenTelemetry gen_ai.evaluation.result event on the new run's root span (gen_ai.evaluation.name the
dataset, gen_ai.evaluation.score.label pass or fail, gen_ai.evaluation.score.value 1 or 0,
gen_ai.evaluation.explanation; error.type when the case could not be run), so any back end the
collector exports logs to reads the results. The exit code is 1 when any case fails.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 || len(args) < 2 {
				return errors.New("usage: runagain test DATASET[@VERSION] -- COMMAND [ARGS...]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runTest(cmd, o, args[0], args[1:]) },
	}
	addDatasetsFlag(cmd)
	f := cmd.Flags()
	f.IntVar(&o.parallel, "parallel", 1, "cases run at the same time")
	f.BoolVar(&o.asJSON, "json", false, "print the results as JSON instead of lines")
	f.StringVar(&o.junitPath, "junit", "", "write a JUnit XML report to this file")
	f.DurationVar(&o.wait, "wait", 30*time.Second, "how long to wait for a new run to reach the store")
	f.StringArrayVar(&o.allow, "allow-host", nil, "host whose GET, HEAD, OPTIONS and TRACE requests go to the network, unrecorded (repeatable; other methods need --allow-live-writes)")
	o.mcp.register(cmd)
	f.StringArrayVar(&o.ignBody, "ignore-body-field", nil, "JSON path left out of body matching (repeatable; see runagain replay)")
	f.StringArrayVar(&o.ignQuery, "ignore-query", nil, "query parameter left out of matching (repeatable)")
	f.StringArrayVar(&o.cases, "case", nil, "run only this case (repeatable)")
	f.StringVar(&o.change, "change", "", "what changed in the agent, recorded on each new run ("+runagainattr.RerunChanges+")")
	o.proxy.flags(cmd, "127.0.0.1:0")
	o.proxy.sb.flags(cmd, true)
	o.proxy.joinFlag(cmd)
	return cmd
}

func runTest(cmd *cobra.Command, o *testOptions, ref string, args []string) error {
	ctx, stop := signal.NotifyContext(contextOf(cmd), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.parallel < 1 {
		return fmt.Errorf("--parallel must be at least 1, got %d", o.parallel)
	}
	if cmd.Flags().Changed("listen") {
		return errors.New("--listen: runagain test listens on a free loopback port per case")
	}
	if err := commandFound("test", args[0]); err != nil {
		return err
	}
	sandboxed, err := o.proxy.sb.enabled("test", cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	if w, _ := agentrun.CheckJoinWait("test", o.proxy.joinWait, nil); w != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), w)
	}
	st, err := openDatasets(ctx)
	if err != nil {
		return err
	}
	m, err := st.Resolve(ctx, ref)
	if err != nil {
		st.Close()
		return err
	}
	cases, err := st.Cases(ctx, m)
	st.Close()
	if err != nil {
		return err
	}
	if cases, err = dataset.Select(m, cases, o.cases); err != nil {
		return err
	}
	vo, err := viewOptions()
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	cfg := runner.Config{
		Dataset: m, Command: args, Parallel: o.parallel, Wait: o.wait,
		Replay: proxy.ReplayOptions{AllowHosts: o.allow, AllowWrites: o.mcp.allowWrites, IgnoreBody: o.ignBody, IgnoreQuery: o.ignQuery},
		MCP:    o.mcp.allow(), Change: o.change, Sandboxed: sandboxed, JoinWait: o.proxy.joinWait,
		View: vo, Rehydrate: !noRehydrate, PayloadStaging: payloadStagingDir(),
		Proxy: func(recorded ptrace.Traces, logger *log.Logger) (*runner.Proxy, error) {
			po := o.proxy // a copy per case
			note := po.reuseRecorded(cmd, recorded)
			pcfg, sink, l, caPath, err := po.config(cmd, logger)
			if err != nil {
				return nil, err
			}
			return &runner.Proxy{Config: pcfg, Sink: sink, Listener: l, CAPath: caPath, Endpoint: po.endpoint, Stamp: po.stamp, Note: note}, nil
		},
		OpenReader: openReader, Store: dataDirFlag,
		Stderr: cmd.ErrOrStderr(),
	}
	if !o.asJSON {
		cfg.Result = func(r *dataset.CaseResult) { fmt.Fprintln(out, r.Line()) }
	}
	started := time.Now()
	results := runner.Run(ctx, cfg, cases)
	sum := dataset.Summarize(m, results, time.Since(started))
	if o.junitPath != "" {
		if err := dataset.WriteJUnit(o.junitPath, m, results, sum, started); err != nil {
			return err
		}
	}
	if o.asJSON {
		if err := printJSON(out, map[string]any{"summary": sum, "cases": results}); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(out, sum)
	}
	if sum.Failed+sum.Errors > 0 {
		return fmt.Errorf("%d of %d cases failed", sum.Failed+sum.Errors, sum.Cases)
	}
	return nil
}
