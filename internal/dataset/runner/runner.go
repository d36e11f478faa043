// SPDX-License-Identifier: Apache-2.0

// Package runner is `runagain test`: it runs an agent's command once per case of a dataset
// version against the case's recorded exchanges (a proxy.Replayer behind a recording proxy, so
// the new run is recorded as a trace of its own and nothing reaches the network), waits for the
// new run in the store, reads it through the read model (internal/runview) and checks the case's
// expectations (dataset.Evaluate). Each result also goes to the collector as a
// gen_ai.evaluation.result event on the new run's root span (dataset.EvaluationLogs).
package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/agentrun"
	"github.com/runagain/runagain/internal/dataset"
	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/mcp"
	"github.com/runagain/runagain/internal/otlpclient"
	"github.com/runagain/runagain/internal/payloadref"
	"github.com/runagain/runagain/internal/proxy"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// Environment of the command under test (documented in the README and `runagain test --help`).
const (
	EnvCaseID    = "RUNAGAIN_CASE_ID"    // the case id
	EnvCaseInput = "RUNAGAIN_CASE_INPUT" // the case input (dataset.Case.Input)
	EnvCaseFile  = "RUNAGAIN_CASE_FILE"  // JSON file: {"dataset","version","case","trace_id","input"}
	EnvCaseDir   = "RUNAGAIN_CASE_DIR"   // directory with the case's files (run.json, bodies/, expect.yaml)
	EnvTestRun   = "RUNAGAIN_TEST_RUN"   // trace id of the new run being recorded
)

// Proxy is one case's recording proxy, as Config.Proxy sets it up.
type Proxy struct {
	// Config holds the routes, redactor, CA, logger and Sink; its SelfHosts name Listener.
	Config   proxy.Config
	Sink     *otlpclient.Client // where the new run's spans, divergences and evaluation event go
	Listener net.Listener       // the proxy the command is pointed at
	CAPath   string             // the --mitm CA file; "" without interception
	Endpoint string             // the collector's address, for messages
	// Stamp, when set, writes the proxy's settings on the new run's root span (replay, rerun and
	// test reuse them).
	Stamp func(ptrace.Traces)
	// Note says what was reused from the recording; it goes to the case's output.
	Note string
}

// Config is one `runagain test` run.
type Config struct {
	Dataset   *dataset.Manifest
	Command   []string      // the command under test and its arguments
	Parallel  int           // cases run at the same time; below 1 is 1
	Wait      time.Duration // how long a new run may take to reach the store
	Replay    proxy.ReplayOptions
	MCP       agentrun.MCPAllow
	Change    string // what changed in the agent, recorded on each new run (runagainattr.RerunChanges)
	Sandboxed bool   // run the command in the network sandbox (agentrun.Run)
	// JoinWait bounds the wait for an instrumented agent's own trace after a case's command ends
	// (agentrun.Joiner: the new run becomes that trace); 0 turns the join off.
	JoinWait time.Duration
	// View reads the cases and the new runs (prices, session keys); Rehydrate reads the new runs'
	// offloaded payloads back (payloadref.Resolver), what could not be read said on Stderr;
	// PayloadStaging is the payload store's staging area it also reads (payloadref.WithStagingDir).
	View           runview.Options
	Rehydrate      bool
	PayloadStaging string
	// Proxy sets up case c's recording proxy, logging to logger; recorded is the case's run.
	Proxy func(recorded ptrace.Traces, logger *log.Logger) (*Proxy, error)
	// OpenReader opens the store the collector writes the new runs to; Store names it in the
	// message when a run does not arrive.
	OpenReader func() (store.Reader, error)
	Store      string
	// Result, when set, gets each case's result as it ends (one call at a time).
	Result func(*dataset.CaseResult)
	Stderr io.Writer // warnings; nil: os.Stderr
}

// Run runs every case and returns their results in the cases' order. A case that could not be
// run has Status "error" and Error set; Run itself does not fail.
func Run(ctx context.Context, cfg Config, cases []*dataset.Case) []*dataset.CaseResult {
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	results := make([]*dataset.CaseResult, len(cases))
	sem := make(chan struct{}, max(cfg.Parallel, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := runCase(ctx, &cfg, c)
			results[i] = r
			if cfg.Result != nil {
				mu.Lock()
				cfg.Result(r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return results
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

func runCase(ctx context.Context, cfg *Config, c *dataset.Case) *dataset.CaseResult {
	m := cfg.Dataset
	start := time.Now()
	r := &dataset.CaseResult{Case: c.ID, Original: c.TraceID, Checked: []string{}}
	fail := func(err error) *dataset.CaseResult {
		r.Status, r.Error, r.Seconds = "error", err.Error(), time.Since(start).Seconds()
		return r
	}
	var logBuf bytes.Buffer
	var logMu sync.Mutex
	logW := writerFunc(func(p []byte) (int, error) { logMu.Lock(); defer logMu.Unlock(); return logBuf.Write(p) })
	logger := log.New(logW, "", 0)
	po, err := cfg.Proxy(c.Traces, logger)
	if err != nil {
		return fail(err)
	}
	if po.Note != "" {
		logger.Printf("runagain test: case %s: %s", c.ID, po.Note)
	}
	pcfg, sink, l := po.Config, po.Sink, po.Listener
	defer sink.Close()
	root := proxy.Root{TraceID: proxy.NewTraceID(), SpanID: proxy.NewSpanID()}
	r.New = root.TraceID.String()
	newTrace := root.TraceID // the agent's own trace once joined
	// Whatever the outcome, the result goes out as a gen_ai.evaluation.result event on the new
	// run's root span (before the deferred sink.Close above).
	defer func() {
		if err := sink.SendLogs(ctx, dataset.EvaluationLogs(m, r, newTrace, root.SpanID, time.Now())); err != nil {
			fmt.Fprintf(cfg.Stderr, "runagain test: case %s: sending its %s event to %s: %v\n", c.ID, genai.EventEvaluationResult, po.Endpoint, err)
		}
	}()
	r.DiffCmd = "runagain diff " + c.TraceID + " " + r.New
	cv, err := c.View(ctx, cfg.View)
	if err != nil {
		l.Close()
		return fail(fmt.Errorf("case %s: %w", c.ID, err))
	}

	// The replay of the case, on its own loopback listener; divergences are recorded in the new run.
	rcfg := pcfg
	rl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		l.Close()
		return fail(err)
	}
	rcfg.SelfHosts = proxy.SelfHosts(rl.Addr())
	ro := cfg.Replay
	rp, err := proxy.NewReplayer(rcfg, c.Traces, root.TraceID, ro)
	if err != nil {
		l.Close()
		rl.Close()
		return fail(fmt.Errorf("case %s: %w", c.ID, err))
	}
	broker, err := agentrun.StartMCPBroker(mcp.ModeReplay, c.Traces, pcfg, ro, cfg.MCP, true, root.TraceID)
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
	pcfg.Upstream = replayUpstream{&http.Transport{Proxy: http.ProxyURL(purl), DisableCompression: true}}
	rec := proxy.NewRecorder(pcfg, root)
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
	input := c.Input(cv)
	caseFile := filepath.Join(dir, "case.json")
	cj, _ := json.MarshalIndent(map[string]string{"dataset": m.Name, "version": m.Version, "case": c.ID, "trace_id": c.TraceID, "input": input}, "", "  ")
	if err := os.WriteFile(caseFile, cj, 0o644); err != nil {
		return fail(err)
	}
	env := append(append(agentrun.Env(l.Addr().String(), po.CAPath, root), broker.Env()...),
		EnvCaseID+"="+c.ID, EnvCaseInput+"="+input, EnvCaseFile+"="+caseFile, EnvCaseDir+"="+caseDir, EnvTestRun+"="+r.New)
	// An agent that writes its own trace but ignores TRACEPARENT: the case's exchanges, root span
	// and divergence record go into that trace once the command has ended (one run per execution).
	jn := agentrun.NewJoiner(cfg.JoinWait, root, env, cfg.OpenReader, "test")
	held := agentrun.Holders(rec, broker) // HTTP and MCP exchanges join alike
	env = jn.Hold(held, rp, env)
	var outBuf syncBuf
	runStart := time.Now()
	exit, runErr := agentrun.Run(ctx, cfg.Sandboxed, rec, logger, cfg.Command, env, &outBuf, &outBuf, jn.Started)
	code := exit.Code
	runEnd := time.Now()
	shutErr := srv.Shutdown(30 * time.Second)
	_ = broker.Close()
	mr := broker.Result()
	_ = rsrv.Shutdown(10 * time.Second) // the replay server's error, if any, is in shutErr's run already
	td := proxy.Command{Root: root, Name: "runagain test " + c.ID, Args: cfg.Command, Start: runStart, End: runEnd, ExitCode: code}.RootSpan()
	if po.Stamp != nil {
		po.Stamp(td)
	}
	sp := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	a := sp.Attributes()
	a.PutStr(runagainattr.TestDataset, m.Name)
	a.PutStr(runagainattr.TestVersion, m.Version)
	a.PutStr(runagainattr.TestCase, c.ID)
	var changes []string
	if cfg.Change != "" {
		changes = []string{cfg.Change}
	}
	if rr, ok := proxy.RerunOfView(cv, changes); ok {
		proxy.MarkRerun(sp, rr)
	}
	if t, ok := jn.Attempt(ctx, held, rp, td, runStart, logW); ok {
		newTrace, r.New = t, t.String()
		r.DiffCmd = "runagain diff " + c.TraceID + " " + r.New
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
		return fail(fmt.Errorf("sending the new run to %s: %w", po.Endpoint, closeErr))
	case sinkErr != nil:
		return fail(fmt.Errorf("sending the divergence record to %s: %w", po.Endpoint, sinkErr))
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
	run, err := cfg.waitForRun(ctx, r.New, 1+rec.Stats().Exchanges+mr.Spans, wantLogs)
	if err != nil {
		return fail(err)
	}
	facts, err := cfg.facts(ctx, run)
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

// facts reads the new run through the read model, its payloads rehydrated when cfg.Rehydrate.
func (cfg *Config) facts(ctx context.Context, run *store.Run) (*dataset.Facts, error) {
	o := cfg.View
	o.Resolver = nil
	if cfg.Rehydrate {
		res := payloadref.NewResolver(payloadref.WithStagingDir(cfg.PayloadStaging))
		defer res.Close()
		o.Resolver = res
	}
	v, err := runview.Build(ctx, run, o)
	if err != nil {
		return nil, err
	}
	if v.RehydrateErr != nil {
		fmt.Fprintf(cfg.Stderr, "runagain: some payloads stay as references: %v\n", v.RehydrateErr)
	}
	return dataset.RunFacts(v)
}

// waitForRun polls the store until the run has at least spans spans and logs log records.
func (cfg *Config) waitForRun(ctx context.Context, traceID string, spans, logs int) (*store.Run, error) {
	deadline := time.Now().Add(cfg.Wait)
	var last error
	for {
		rd, err := cfg.OpenReader()
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
			return nil, fmt.Errorf("the new run %s did not reach the store in %s (%v): is the collector running and writing to --data-dir %s?", traceID, cfg.Wait, last, cfg.Store)
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
