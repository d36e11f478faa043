// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/agentrun"
	"github.com/runagain/runagain/internal/mcp"
	"github.com/runagain/runagain/internal/proxy"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

func init() {
	rootCmd.AddCommand(newReplayCmd())
}

// ErrDiverged is returned (exit code 1) when the replayed command made a request that matches
// nothing recorded.
var ErrDiverged = errors.New("replay diverged")

func newReplayCmd() *cobra.Command {
	o := &proxyOptions{}
	mf := &mcpFlags{}
	var allow, ignoreBody, ignoreQuery []string
	var realtime bool
	cmd := &cobra.Command{
		Use:   "replay TRACE_ID -- COMMAND...",
		Short: "Run a command against the HTTP responses recorded in a run, offline",
		Long: `replay reads the run TRACE_ID from the store (--data-dir), starts the proxy in replay mode and
runs COMMAND with its environment pointed at it (OPENAI_BASE_URL and the other SDK base URLs at
the routes, HTTP_PROXY, and HTTPS_PROXY with --mitm). Every request is answered from the
recorded exchanges: matched on method, path, query and body (after the redactor's
normalisation, so a value stored as a hash token still matches; JSON compared as values), in
recorded order per match key. Multipart and URL-encoded forms are compared part by part;
--ignore-body-field and --ignore-query leave out fields that change on every run. Nothing
reaches the network unless its host is given with --allow-host.

The first request that matches nothing gets an HTTP 400 JSON error naming the field that differs
from the nearest recorded request (expected and got), every later request is refused, a log
record (event runagain.replay.divergence) pointing at the nearest recorded span is sent to the
collector, and replay exits non-zero. A command that exits non-zero also makes replay fail.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 || len(args) < 2 {
				return errors.New("usage: runagain replay TRACE_ID -- COMMAND [ARGS...]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplay(cmd, o, mf, args[0], args[1:], proxy.ReplayOptions{AllowHosts: allow, AllowWrites: mf.allowWrites, Realtime: realtime, IgnoreBody: ignoreBody, IgnoreQuery: ignoreQuery})
		},
	}
	cmd.Flags().StringArrayVar(&allow, "allow-host", nil, "host (or host:port) whose GET, HEAD, OPTIONS and TRACE requests may go to the network, unrecorded (repeatable; other methods need --allow-live-writes)")
	mf.register(cmd)
	cmd.Flags().BoolVar(&realtime, "realtime", false, "pace SSE chunks with their recorded timing")
	cmd.Flags().StringArrayVar(&ignoreBody, "ignore-body-field", nil, "JSON path left out of body matching, e.g. metadata.request_id or messages[*].id, or an RFC 9535 query such as $..request_id (repeatable)")
	cmd.Flags().StringArrayVar(&ignoreQuery, "ignore-query", nil, "query parameter left out of matching (repeatable)")
	o.flags(cmd, "127.0.0.1:0")
	o.sb.flags(cmd, true)
	o.joinFlag(cmd)
	return cmd
}

// stampReplay writes what a replay served on its root span (td's first span).
func stampReplay(td ptrace.Traces, r proxy.Result) {
	if td.SpanCount() == 0 {
		return
	}
	a := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes()
	a.PutInt(runagainattr.ReplayRecorded, int64(r.Recorded))
	a.PutInt(runagainattr.ReplayServed, int64(r.Served))
	a.PutInt(runagainattr.ReplayRequests, int64(r.Requests))
	a.PutInt(runagainattr.ReplayRefused, int64(r.Refused))
	a.PutInt(runagainattr.ReplayLive, int64(r.Live))
}

func runReplay(cmd *cobra.Command, o *proxyOptions, mf *mcpFlags, traceID string, args []string, ro proxy.ReplayOptions) error {
	errOut := cmd.ErrOrStderr()
	logger := log.New(errOut, "", 0)
	ctx, stop := signal.NotifyContext(contextOf(cmd), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) > 0 {
		if err := commandFound("replay", args[0]); err != nil {
			return err
		}
	}
	run, tid, err := loadRecordedRun(ctx, traceID, "replayed", errOut)
	if err != nil {
		return err
	}
	vo, err := viewOptions()
	if err != nil {
		return err
	}
	orig, err := runview.Build(ctx, run, vo) // its payloads are rehydrated already
	if err != nil {
		return fmt.Errorf("run %s: %w", traceID, err)
	}
	if note := o.reuseRecorded(cmd, run.Traces); note != "" {
		fmt.Fprintf(errOut, "runagain replay: %s\n", note)
	}
	sandboxed, err := o.sb.enabled("replay", errOut)
	if err != nil {
		return err
	}
	cfg, sink, l, caPath, err := o.config(cmd, logger)
	if err != nil {
		return err
	}
	defer sink.Close()
	// The replay is a run of its own: its divergences are recorded on it (pointing at the
	// original's spans), and the original stays as it was recorded.
	root := proxy.Root{TraceID: proxy.NewTraceID(), SpanID: proxy.NewSpanID()}
	rp, err := proxy.NewReplayer(cfg, run.Traces, root.TraceID, ro)
	if err != nil {
		l.Close()
		return fmt.Errorf("run %s: %w", traceID, err)
	}
	broker, err := agentrun.StartMCPBroker(mcp.ModeReplay, run.Traces, cfg, ro, mf.allow(), false, root.TraceID)
	if err != nil {
		l.Close()
		return err
	}
	if rp.Exchanges() == 0 && broker.Exchanges() == 0 {
		l.Close()
		_ = broker.Close()
		return fmt.Errorf("run %s has no recorded HTTP or MCP exchanges (spans with %s); record one with `runagain proxy --record` or import a cassette", traceID, "runagain.fixture.source")
	}
	srv := proxy.Serve(l, rp)
	addr := l.Addr().String()
	env := append(agentrun.Env(addr, caPath, root), broker.Env()...)
	// An agent that writes its own trace but ignores TRACEPARENT: the replay's root span and its
	// divergence record go into that trace once the command has ended (one run per execution).
	jn := o.newJoiner("replay", root, env, errOut)
	env = jn.Hold(nil, rp, env) // replay records no exchange: its root span and records join
	fmt.Fprintf(errOut, "runagain replay: %s of run %s on http://%s; replay run %s\n", counted(rp.Exchanges(), "recorded exchange"), tid, addr, jn.Pending(root.TraceID))
	if sandboxed {
		fmt.Fprintf(errOut, "runagain replay: network sandbox: every TCP connection and DNS query of the command goes through the proxy; nothing unrecorded is sent\n")
	}
	start := time.Now()
	exit, runErr := agentrun.Run(ctx, sandboxed, rp, logger, args, env, cmd.OutOrStdout(), errOut, jn.Started)
	shutErr := srv.Shutdown(10 * time.Second)
	_ = broker.Close()
	var startErr *agentrun.StartError
	if errors.As(runErr, &startErr) {
		_ = rp.Close() // nothing ran: no replay run is stored
		return fmt.Errorf("replay: %w", runErr)
	}
	mr := broker.Result()
	td := proxy.RerunRootSpan(proxy.Command{Root: root, Name: "runagain replay " + filepath.Base(args[0]), Args: args, Start: start, End: time.Now(), ExitCode: exit.Code},
		orig, nil, 0, nil)
	stampReplay(td, rp.Result()) // the agent has exited and the proxy is shut down: final counts
	if t, ok := jn.Attempt(ctx, nil, rp, td, start, errOut); ok {
		fmt.Fprintf(errOut, "runagain replay: replay run %s\n", t)
	}
	if err := sink.ConsumeTraces(ctx, td); err != nil {
		fmt.Fprintf(errOut, "runagain replay: the replay run's span could not be sent to %s: %v\n", o.endpoint, err)
	}
	sinkErr := rp.Close()
	r := rp.Result()
	fmt.Fprintf(errOut, "runagain replay: served %d of %d recorded exchanges (%d requests, %d recorded exchanges not requested); %d refused, %d sent live\n",
		r.Served, r.Recorded, r.Requests, r.Unserved, r.Refused, r.Live)
	if s := mcpSummary(mr); s != "" {
		fmt.Fprintf(errOut, "runagain replay: %s\n", s)
	}
	var errs []string
	if e := printMCPDivergence(errOut, mr); e != "" {
		errs = append(errs, e)
	}
	if r.Divergence != nil {
		fmt.Fprintln(errOut, r.Divergence.Message())
		if sinkErr != nil {
			fmt.Fprintf(errOut, "runagain replay: the divergence record could not be sent to %s: %v\n", o.endpoint, sinkErr)
		}
		errs = append(errs, fmt.Sprintf("at request %d: %s", r.Divergence.Request, r.Divergence.Diff))
	}
	if runErr != nil {
		errs = append(errs, runErr.Error())
	} else if exit.Code != 0 {
		errs = append(errs, "command "+exit.String())
	}
	if shutErr != nil {
		errs = append(errs, shutErr.Error())
	}
	switch {
	case r.Divergence != nil || mr.Divergence != nil:
		return fmt.Errorf("%w %s", ErrDiverged, strings.Join(errs, "; "))
	case len(errs) == 1 && exit.Code != 0 && runErr == nil:
		return &commandExit{exit} // only the command failed: exit with its status
	case len(errs) > 0:
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// loadRecordedRun reads the run named by arg (a trace id) from the store for replay, rerun or a
// dataset case: it must be in the hot tier (warm and cold keep summaries, no recorded bodies);
// offloaded bodies are rehydrated and, where the originals were sealed and the keys are at
// hand, the exact recorded bytes restored. verb completes "it cannot be ..." in the error.
func loadRecordedRun(ctx context.Context, arg, verb string, errOut io.Writer) (*store.Run, pcommon.TraceID, error) {
	full, err := resolveRunArg(ctx, arg)
	if err != nil {
		return nil, pcommon.TraceID{}, err
	}
	tid, err := parseTraceID(full)
	if err != nil {
		return nil, tid, err
	}
	rd, err := openReader()
	if err != nil {
		return nil, tid, err
	}
	run, err := rd.Run(ctx, tid.String())
	rd.Close()
	if err != nil {
		return nil, tid, fmt.Errorf("run %s: %w", arg, err)
	}
	if run.Tier != "hot" {
		return nil, tid, fmt.Errorf("run %s is only in the %s tier (past the hot retention): its recorded HTTP exchanges are gone, it cannot be %s", arg, run.Tier, verb)
	}
	res := newPayloadResolver()
	err = res.RehydrateTraces(ctx, run.Traces)
	res.Close()
	if err != nil {
		return nil, tid, fmt.Errorf("run %s: rehydrating offloaded bodies: %w", arg, err)
	}
	if err := unsealForReplay(ctx, run.Traces, errOut); err != nil {
		return nil, tid, fmt.Errorf("run %s: %w", arg, err)
	}
	return run, tid, nil
}

// resolveRunArg turns a run argument (a trace id, or an unambiguous prefix of one: the
// store.ResolveTraceID rule `show` and `diff` use) into the full trace id, reading the store only
// for a prefix.
func resolveRunArg(ctx context.Context, arg string) (string, error) {
	arg = strings.ToLower(strings.TrimSpace(arg))
	if len(arg) == 32 {
		return arg, nil // parseTraceID says what is wrong with a bad one
	}
	rd, err := openReader()
	if err != nil {
		return "", err
	}
	defer rd.Close()
	return store.ResolveTraceID(ctx, rd, arg)
}
