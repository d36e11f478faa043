// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/runagain/runagain/internal/agentrun"
	"github.com/runagain/runagain/internal/mcp"
	"github.com/runagain/runagain/internal/proxy"
	"github.com/runagain/runagain/internal/runview"
)

func init() {
	rootCmd.AddCommand(newRerunCmd())
}

func newRerunCmd() *cobra.Command {
	o := &proxyOptions{}
	mf := &mcpFlags{}
	var sets, allow, ignoreBody, ignoreQuery, llmRoutes []string
	var fromStep int
	cmd := &cobra.Command{
		Use:   "rerun RUN [--set PATH=VALUE]... [--from-step N] -- COMMAND...",
		Short: "Run a command again against a run's recordings with one thing changed, recorded as a new run",
		Long: `rerun runs COMMAND through the replay proxy with the recorded exchanges of RUN, changing what
--set says in every outgoing LLM request body (JSON path on the known LLM routes: --set
model=gpt-4.1, --set temperature=0, --set 'messages[0].content=@prompt.txt', or an RFC 9535
query naming one value, --set '$.messages[-1].content=hi'; VALUE is JSON when it
parses as JSON, else a string; @FILE is the file's text). A selector aims a change at some calls:
--set 'step=2:messages[0].content=hi' (the 2nd LLM call), --set 'api=responses:instructions=Be
brief' (Responses API calls only; also chat, messages, gemini). A path applies where it exists:
calls without it are sent unchanged, and rerun names the calls each --set changed. A change made in the agent's own code
or prompt files needs no --set.

  - A request that still matches the recording is served from it: tool and API responses stay
    exactly as they were.
  - An LLM request (on a route named by --llm-route, default the known LLM routes) that no longer
    matches, and with --from-step N every LLM call after the first N, goes live to its route's
    upstream with the caller's own credentials, and is recorded.
  - Any other request that matches nothing fails loudly as in replay, unless its host is allowed.

Every exchange is recorded as a new run (a trace of its own) whose root span links to RUN and
names each change (runagain.rerun.original_trace_id, runagain.rerun.changes). At the end rerun
prints the new run id, the first request where it departed from the recording, and the
runagain diff command to compare the two. A --set path that names no value in any recorded LLM
request body it selects is an error naming the path, before the command runs.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 || len(args) < 2 {
				return errors.New("usage: runagain rerun RUN [--set PATH=VALUE]... [--from-step N] -- COMMAND [ARGS...]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var edits []proxy.Edit
			for _, s := range sets {
				e, err := proxy.ParseEdit(s)
				if err != nil {
					return err
				}
				edits = append(edits, e)
			}
			if fromStep < 0 {
				return fmt.Errorf("--from-step %d: want N >= 0", fromStep)
			}
			routes := proxy.DefaultLLMRoutes
			if len(llmRoutes) > 0 {
				routes = append(append([]string(nil), routes...), llmRoutes...)
			}
			ro := proxy.ReplayOptions{AllowHosts: allow, AllowWrites: mf.allowWrites, IgnoreBody: ignoreBody, IgnoreQuery: ignoreQuery,
				Rerun: &proxy.RerunOptions{Edits: edits, FromStep: fromStep, LLMRoutes: routes}}
			return runRerun(cmd, o, mf, args[0], args[1:], ro)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&sets, "set", nil, "[SELECTOR:]PATH=VALUE: change outgoing LLM request bodies at this JSON path where it exists (repeatable; VALUE JSON or text, @FILE for a file's text; SELECTOR step=N or api=chat|responses|messages|gemini, comma-separated)")
	f.IntVar(&fromStep, "from-step", 0, "serve the first N LLM calls from the recording, send every later one live")
	f.StringArrayVar(&llmRoutes, "llm-route", nil, "route name whose requests are LLM calls, besides "+strings.Join(proxy.DefaultLLMRoutes, ", ")+" (repeatable)")
	f.StringArrayVar(&allow, "allow-host", nil, "host (or host:port) whose GET, HEAD, OPTIONS and TRACE requests may go to the network, unrecorded (repeatable; other methods need --allow-live-writes)")
	mf.register(cmd)
	f.StringArrayVar(&ignoreBody, "ignore-body-field", nil, "JSON path left out of body matching (repeatable)")
	f.StringArrayVar(&ignoreQuery, "ignore-query", nil, "query parameter left out of matching (repeatable)")
	o.flags(cmd, "127.0.0.1:0")
	// On by default, as for replay and test: the calls a rerun sends live are the LLM calls it
	// changes (and, with --from-step, those after it); every other connection is the proxy's.
	o.sb.flags(cmd, true)
	o.joinFlag(cmd)
	return cmd
}

func runRerun(cmd *cobra.Command, o *proxyOptions, mf *mcpFlags, runArg string, args []string, ro proxy.ReplayOptions) error {
	errOut := cmd.ErrOrStderr()
	logger := log.New(errOut, "", 0)
	ctx, stop := signal.NotifyContext(contextOf(cmd), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := commandFound("rerun", args[0]); err != nil {
		return err
	}
	run, tid, err := loadRecordedRun(ctx, runArg, "rerun", errOut)
	if err != nil {
		return err
	}
	vo, err := viewOptions()
	if err != nil {
		return err
	}
	orig, err := runview.Build(ctx, run, vo) // its payloads are rehydrated already
	if err != nil {
		return fmt.Errorf("run %s: %w", runArg, err)
	}
	if recorded, _, _, found := recordedSettings(run.Traces); found {
		// The recording's LLM calls went to the routes' targets of then, whatever --route says now.
		if rs, err := proxy.NewRoutes(recorded); err == nil {
			for _, n := range ro.Rerun.LLMRoutes {
				if rt, ok := rs[n]; ok {
					ro.Rerun.RecordedTargets = append(ro.Rerun.RecordedTargets, rt.Target)
				}
			}
		}
	}
	if note := o.reuseRecorded(cmd, run.Traces); note != "" {
		fmt.Fprintf(errOut, "runagain rerun: %s\n", note)
	}
	sandboxed, err := o.sb.enabled("rerun", errOut)
	if err != nil {
		return err
	}
	cfg, sink, l, caPath, err := o.config(cmd, logger)
	if err != nil {
		return err
	}
	defer sink.Close()
	cfg.SpillPath = filepath.Join(dataDirFlag, "proxy-unsent.otlp.jsonl") // the new run's spans the collector could not take
	root := proxy.Root{TraceID: proxy.NewTraceID(), SpanID: proxy.NewSpanID()}
	ro.Rerun.Root = root
	// Refusals are recorded on the new run (pointing at the original's spans), not the original.
	rp, err := proxy.NewReplayer(cfg, run.Traces, root.TraceID, ro)
	if err != nil {
		l.Close()
		return fmt.Errorf("run %s: %w", runArg, err)
	}
	// The agent's stdio MCP servers are served from the recording too; their exchanges join the new run.
	broker, err := agentrun.StartMCPBroker(mcp.ModeReplay, run.Traces, cfg, ro, mf.allow(), true, root.TraceID)
	if err != nil {
		l.Close()
		return err
	}
	if rp.Exchanges() == 0 && broker.Exchanges() == 0 {
		l.Close()
		_ = broker.Close()
		return fmt.Errorf("run %s has no recorded HTTP or MCP exchanges (spans with runagain.fixture.source); record one with `runagain proxy --record`", runArg)
	}
	changes := proxy.EditSpecs(ro.Rerun.Edits)
	srv := proxy.Serve(l, rp)
	addr := l.Addr().String()
	env := append(agentrun.Env(addr, caPath, root), broker.Env()...)
	// An agent that writes its own trace but ignores TRACEPARENT: the new run's exchanges join it.
	jn := o.newJoiner("rerun", root, env, errOut)
	held := agentrun.Holders(rp, broker) // HTTP and MCP exchanges join alike
	env = jn.Hold(held, rp, env)
	fmt.Fprintf(errOut, "runagain rerun: %s of run %s on http://%s; changes: %s; new run %s\n",
		counted(rp.Exchanges(), "recorded exchange"), tid, addr, orNone(strings.Join(changes, ", ")), jn.Pending(root.TraceID))
	if sandboxed {
		fmt.Fprintf(errOut, "runagain rerun: network sandbox: every TCP connection and DNS query of the command goes through the proxy\n")
	}
	start := time.Now()
	exit, runErr := agentrun.Run(ctx, sandboxed, rp, logger, args, env, cmd.OutOrStdout(), errOut, jn.Started)
	shutErr := srv.Shutdown(10 * time.Second)
	_ = broker.Close()
	var startErr *agentrun.StartError
	if errors.As(runErr, &startErr) {
		_ = rp.Close() // nothing ran: no new run is stored
		return fmt.Errorf("rerun: %w", runErr)
	}
	mr := broker.Result()
	r := rp.RerunResult()
	rtd := proxy.RerunRootSpan(proxy.Command{Root: root, Name: "runagain rerun " + filepath.Base(args[0]), Args: args, Start: start, End: time.Now(), ExitCode: exit.Code},
		orig, changes, ro.Rerun.FromStep, r.First)
	o.stamp(rtd)
	newRun := root.TraceID // a refusal's record goes with the new run, joined or not
	if t, ok := jn.Attempt(ctx, held, rp, rtd, start, errOut); ok {
		newRun = t
	}
	rp.EmitSpans(rtd)
	closeErr := rp.Close()
	r = rp.RerunResult()
	fmt.Fprintf(errOut, "runagain rerun: %d requests: %d served from the recording, %d LLM calls live, %d refused; %d exchanges recorded\n",
		r.Requests, r.Served, r.Live, r.Refused, r.Recorded)
	for _, e := range ro.Rerun.Edits {
		if calls := r.Changed[e.Spec]; len(calls) > 0 {
			fmt.Fprintf(errOut, "runagain rerun: --set %s changed LLM call(s) %s\n", e.Spec, joinInts(calls))
		} else {
			fmt.Fprintf(errOut, "runagain rerun: --set %s changed no LLM call\n", e.Spec)
		}
	}
	if s := mcpSummary(mr); s != "" {
		fmt.Fprintf(errOut, "runagain rerun: %s\n", s)
	}
	switch {
	case r.First == nil:
		fmt.Fprintf(errOut, "runagain rerun: the rerun never departed from the recording\n")
	case r.First.LLMCall > 0:
		fmt.Fprintf(errOut, "runagain rerun: first departed at LLM call %d (request %d, %s %s: %s)\n", r.First.LLMCall, r.First.Request, r.First.Method, r.First.URL, departureWhy(r.First.Reason))
	default:
		fmt.Fprintf(errOut, "runagain rerun: first departed at request %d (%s %s: %s)\n", r.First.Request, r.First.Method, r.First.URL, departureWhy(r.First.Reason))
	}
	fmt.Fprintf(errOut, "runagain rerun: new run %s (rerun of %s)\n", newRun, tid)
	fmt.Fprintf(errOut, "runagain rerun: compare with: runagain diff %s %s\n", tid, newRun)
	var errs []string
	if e := printMCPDivergence(errOut, mr); e != "" {
		errs = append(errs, e)
	}
	if r.Divergence != nil {
		fmt.Fprintln(errOut, r.Divergence.Message())
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
	if closeErr != nil {
		errs = append(errs, fmt.Sprintf("recording the new run: %v", closeErr))
	}
	switch {
	case r.Divergence != nil || mr.Divergence != nil:
		return fmt.Errorf("%w: %s", errRerunRefused, strings.Join(errs, "; "))
	case len(errs) == 1 && exit.Code != 0 && runErr == nil:
		return &commandExit{exit} // only the command failed: exit with its status
	case len(errs) > 0:
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// errRerunRefused is returned (exit 1) when a request that is not an LLM call matched nothing
// recorded and was refused, as replay does.
var errRerunRefused = errors.New("rerun refused a request that matches no recorded one")

func departureWhy(reason string) string {
	switch reason {
	case "changed":
		return "no longer matches the recording, sent live"
	case "from-step":
		return "after --from-step, sent live"
	case "refused":
		return "matched no recorded request and was refused"
	}
	return reason
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
