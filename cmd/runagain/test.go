// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/dataset"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/mcp"
	"github.com/runagain/runagain/internal/proxy"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/store"
)

// Environment of the command under test (documented in the README and `runagain test --help`).
const (
	EnvCaseID    = "RUNAGAIN_CASE_ID"    // the case id
	EnvCaseInput = "RUNAGAIN_CASE_INPUT" // the case input (expect.yaml input, else the first LLM call's last user message)
	EnvCaseFile  = "RUNAGAIN_CASE_FILE"  // JSON file: {"dataset","version","case","trace_id","input"}
	EnvCaseDir   = "RUNAGAIN_CASE_DIR"   // directory with the case's files (run.json, bodies/, expect.yaml)
	EnvTestRun   = "RUNAGAIN_TEST_RUN"   // trace id of the new run being recorded
)

// Attributes of the root span of a test run (a rerun of the case's run: docs/architecture.md "Reruns and
// datasets"; the span also links to the original trace).
const (
	AttrTestDataset  = runagainattr.TestDataset
	AttrTestVersion  = runagainattr.TestVersion
	AttrTestCase     = runagainattr.TestCase
	AttrRerunOrigin  = runagainattr.RerunOriginalTrace
	AttrRerunChanges = runagainattr.RerunChanges
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
	f.StringVar(&o.change, "change", "", "what changed in the agent, recorded on each new run ("+AttrRerunChanges+")")
	o.proxy.flags(cmd, "127.0.0.1:0")
	o.proxy.sb.flags(cmd, true)
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
	sandboxed, err := o.proxy.sb.enabled("test", cmd.ErrOrStderr())
	if err != nil {
		return err
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
	if len(o.cases) > 0 {
		want := map[string]bool{}
		for _, c := range o.cases {
			want[c] = true
		}
		var sel []*dataset.Case
		for _, c := range cases {
			if want[c.ID] {
				sel = append(sel, c)
				delete(want, c.ID)
			}
		}
		for c := range want {
			return fmt.Errorf("--case %s: dataset %s@%s has no such case", c, m.Name, dataset.Short(m.Version))
		}
		cases = sel
	}
	out := cmd.OutOrStdout()
	started := time.Now()
	results := make([]*dataset.CaseResult, len(cases))
	sem := make(chan struct{}, o.parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := runCase(ctx, cmd, o, m, c, args, sandboxed)
			results[i] = r
			if !o.asJSON {
				mu.Lock()
				fmt.Fprintln(out, r.Line())
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
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

// replayUpstream sends a recorded request to the case's replayer as a plain-HTTP forward-proxy
// request (the replayer matches on method, path, query and body; scheme and host take no part).
type replayUpstream struct{ t *http.Transport }

func (u replayUpstream) RoundTrip(req *http.Request) (*http.Response, error) {
	r2 := req.Clone(req.Context())
	u2 := *req.URL
	u2.Scheme = "http"
	r2.URL = &u2
	return u.t.RoundTrip(r2)
}

func runCase(ctx context.Context, cmd *cobra.Command, o *testOptions, m *dataset.Manifest, c *dataset.Case, args []string, sandboxed bool) *dataset.CaseResult {
	start := time.Now()
	r := &dataset.CaseResult{Case: c.ID, Original: c.TraceID, Checked: []string{}}
	fail := func(err error) *dataset.CaseResult {
		r.Status, r.Error, r.Seconds = "error", err.Error(), time.Since(start).Seconds()
		return r
	}
	var logBuf bytes.Buffer
	var logMu sync.Mutex
	logger := log.New(writerFunc(func(p []byte) (int, error) { logMu.Lock(); defer logMu.Unlock(); return logBuf.Write(p) }), "", 0)
	po := o.proxy // a copy per case
	if note := po.reuseRecorded(cmd, c.Traces); note != "" {
		logger.Printf("runagain test: case %s: %s", c.ID, note)
	}
	cfg, sink, l, caPath, err := po.config(cmd, logger)
	if err != nil {
		return fail(err)
	}
	defer sink.Close()
	root := proxy.Root{TraceID: proxy.NewTraceID(), SpanID: proxy.NewSpanID()}
	r.New = root.TraceID.String()
	// Whatever the outcome, the result goes out as a gen_ai.evaluation.result event on the new
	// run's root span (before the deferred sink.Close above).
	defer func() {
		if err := sink.SendLogs(ctx, dataset.EvaluationLogs(m, r, root.TraceID, root.SpanID, time.Now())); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "runagain test: case %s: sending its %s event to %s: %v\n", c.ID, genai.EventEvaluationResult, po.endpoint, err)
		}
	}()
	r.DiffCmd = "runagain diff " + c.TraceID + " " + r.New

	// The replay of the case, on its own loopback listener; divergences are recorded in the new run.
	rcfg := cfg
	rl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		l.Close()
		return fail(err)
	}
	rcfg.SelfHosts = proxy.SelfHosts(rl.Addr())
	ro := proxy.ReplayOptions{AllowHosts: o.allow, AllowWrites: o.mcp.allowWrites, IgnoreBody: o.ignBody, IgnoreQuery: o.ignQuery}
	rp, err := proxy.NewReplayer(rcfg, c.Traces, root.TraceID, ro)
	if err != nil {
		l.Close()
		rl.Close()
		return fail(fmt.Errorf("case %s: %w", c.ID, err))
	}
	broker, err := startMCPBroker(mcp.ModeReplay, c.Traces, cfg, ro, &o.mcp, true, root.TraceID)
	if err != nil {
		l.Close()
		rl.Close()
		return fail(err)
	}
	defer broker.Close()
	if rp.Exchanges() == 0 && broker.Exchanges() == 0 {
		l.Close()
		rl.Close()
		return fail(fmt.Errorf("case %s: its run has no recorded HTTP or MCP exchanges to replay", c.ID))
	}
	rsrv := proxy.Serve(rl, rp)
	purl, _ := url.Parse("http://" + rl.Addr().String())
	cfg.Upstream = replayUpstream{&http.Transport{Proxy: http.ProxyURL(purl), DisableCompression: true}}
	rec := proxy.NewRecorder(cfg, root)
	srv := proxy.Serve(l, rec)

	dir, err := os.MkdirTemp("", "runagain-case-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	caseDir := filepath.Join(dir, "case")
	for p, b := range c.Files {
		f := filepath.Join(caseDir, filepath.FromSlash(p))
		_ = os.MkdirAll(filepath.Dir(f), 0o755)
		if err := os.WriteFile(f, b, 0o644); err != nil {
			return fail(err)
		}
	}
	input := caseInput(c)
	caseFile := filepath.Join(dir, "case.json")
	cj, _ := json.MarshalIndent(map[string]string{"dataset": m.Name, "version": m.Version, "case": c.ID, "trace_id": c.TraceID, "input": input}, "", "  ")
	if err := os.WriteFile(caseFile, cj, 0o644); err != nil {
		return fail(err)
	}
	env := append(append(childEnv(l.Addr().String(), caPath, root), broker.Env()...),
		EnvCaseID+"="+c.ID, EnvCaseInput+"="+input, EnvCaseFile+"="+caseFile, EnvCaseDir+"="+caseDir, EnvTestRun+"="+r.New)
	var outBuf syncBuf
	runStart := time.Now()
	code, runErr := runAgent(ctx, sandboxed, rec, logger, args, env, &outBuf, &outBuf)
	runEnd := time.Now()
	shutErr := srv.Shutdown(30 * time.Second)
	_ = broker.Close()
	mr := broker.Result()
	_ = rsrv.Shutdown(10 * time.Second) // the replay server's error, if any, is in shutErr's run already
	td := proxy.Command{Root: root, Args: args, Start: runStart, End: runEnd, ExitCode: code}.RootSpan()
	po.stamp(td)
	sp := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	sp.SetName("runagain test " + c.ID)
	a := sp.Attributes()
	a.PutStr(AttrTestDataset, m.Name)
	a.PutStr(AttrTestVersion, m.Version)
	a.PutStr(AttrTestCase, c.ID)
	if tid, err := parseTraceID(c.TraceID); err == nil {
		r := proxy.RerunOf{OriginalTrace: tid}
		if o.change != "" {
			r.Changes = []string{o.change}
		}
		if rootID, ok := rootSpanID(c); ok {
			r.OriginalRoot = rootID
		}
		proxy.MarkRerun(sp, r)
	}
	rec.Emit(td)
	closeErr := rec.Close()
	sinkErr := rp.Close()
	res := rp.Result()
	r.ExitCode = code
	r.Output = outBuf.String() + logBuf.String()
	switch {
	case runErr != nil:
		return fail(runErr)
	case closeErr != nil:
		return fail(fmt.Errorf("sending the new run to %s: %w", po.endpoint, closeErr))
	case sinkErr != nil:
		return fail(fmt.Errorf("sending the divergence record to %s: %w", po.endpoint, sinkErr))
	case shutErr != nil:
		return fail(shutErr)
	}
	wantLogs := 0
	if res.Divergence != nil {
		wantLogs = 1
	}
	if mr.Divergence != nil {
		wantLogs++
	}
	run, err := waitForRun(ctx, r.New, 1+rec.Stats().Exchanges+mr.Spans, wantLogs, o.wait)
	if err != nil {
		return fail(err)
	}
	v, closeView, err := buildView(ctx, run)
	if err != nil {
		return fail(err)
	}
	closeView()
	facts, err := dataset.RunFacts(v)
	if err != nil {
		return fail(fmt.Errorf("new run %s: %w", r.New, err))
	}
	if d := res.Divergence; d != nil {
		facts.Divergence = &dataset.Divergence{Request: d.Request, Detail: d.Diff.String()}
	} else if d := mr.Divergence; d != nil {
		facts.Divergence = &dataset.Divergence{Request: d.Request, Detail: "MCP " + d.Server + " " + d.Diff.String()}
	}
	r.Facts = facts
	r.Checked, r.Failures = dataset.Evaluate(c, facts, code)
	r.Status = "pass"
	if len(r.Failures) > 0 {
		r.Status, r.Failure = "fail", r.Failures[0]
	}
	r.Seconds = time.Since(start).Seconds()
	return r
}

// rootSpanID is the span id of the case run's first root span.
func rootSpanID(c *dataset.Case) (pcommon.SpanID, bool) {
	roots, _ := store.Order(c.Traces, nil)
	if len(roots) == 0 {
		return pcommon.SpanID{}, false
	}
	return roots[0].Span.SpanID(), true
}

// waitForRun polls the store until the run has at least spans spans and logs log records.
func waitForRun(ctx context.Context, traceID string, spans, logs int, wait time.Duration) (*store.Run, error) {
	deadline := time.Now().Add(wait)
	var last error
	for {
		rd, err := openReader()
		if err == nil {
			run, err := rd.Run(ctx, traceID)
			rd.Close()
			if err == nil && run.Tier == "hot" && run.Traces.SpanCount() >= spans && run.Logs.LogRecordCount() >= logs {
				return run, nil
			}
			if err == nil {
				err = fmt.Errorf("%d of %d spans and %d of %d log records arrived", run.Traces.SpanCount(), spans, run.Logs.LogRecordCount(), logs)
			}
			last = err
		} else {
			last = err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the new run %s did not reach the store in %s (%v): is the collector running and writing to --data-dir %s?", traceID, wait, last, dataDirFlag)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
