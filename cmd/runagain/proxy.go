// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/agentrun"
	"github.com/runagain/runagain/internal/mcp"
	"github.com/runagain/runagain/internal/otlpclient"
	"github.com/runagain/runagain/internal/proxy"
	"github.com/runagain/runagain/internal/redact"
)

// proxyOptions are the flags shared by `runagain proxy` and `runagain replay`.
type proxyOptions struct {
	listen    string
	routes    []string
	connectTo []string
	mitm      bool
	otlpFlags
	redactBodies bool
	hashKeyEnv   string
	sb           sandboxOptions
	joinWait     time.Duration // proxy --record, rerun: how long to wait for the agent's own trace (agentrun.Joiner)
}

func (o *proxyOptions) flags(cmd *cobra.Command, defListen string) {
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", defListen, "address to listen on (127.0.0.1:0 picks a free port)")
	f.StringArrayVar(&o.routes, "route", nil, "reverse-proxy route NAME=URL: /NAME/... goes to URL/... (repeatable; defaults: "+strings.Join(proxy.DefaultRoutes, ", ")+")")
	f.StringArrayVar(&o.connectTo, "connect-to", nil, "HOST:PORT=ADDR:PORT: connect to ADDR:PORT for requests addressed to HOST:PORT, which they and their recordings keep (a staging or local upstream; repeatable)")
	f.BoolVar(&o.mitm, "mitm", false, "intercept HTTPS (CONNECT) with a local CA kept in --data-dir (proxy-ca.pem); clients must trust it, see internal/proxy/README.md")
	o.register(cmd)
	f.StringVar(&o.hashKeyEnv, "redaction-key-env", "RUNAGAIN_REDACTION_KEY", "environment variable holding the HMAC key of hash redaction (else <data-dir>/redaction.key, as config/default.yaml's agent_redaction uses); use the processor's key so hashed values match in replay")
}

// config builds the proxy configuration (routes, redactor, CA, OTLP sink) and opens the --listen
// listener, whose addresses it puts in SelfHosts. On error nothing stays open.
func (o *proxyOptions) config(cmd *cobra.Command, logger *log.Logger) (proxy.Config, *otlpclient.Client, net.Listener, string, error) {
	routes, err := proxy.NewRoutes(o.routes)
	if err != nil {
		return proxy.Config{}, nil, nil, "", fmt.Errorf("--route: %w", err)
	}
	key := []byte(os.Getenv(o.hashKeyEnv))
	if len(key) == 0 {
		// The embedded default's agent_redaction keeps its key here (hash_key_file).
		if key, err = redact.LoadOrCreateKeyFile(filepath.Join(dataDirFlag, "redaction.key")); err != nil {
			return proxy.Config{}, nil, nil, "", err
		}
	}
	rd, err := redact.New(redact.Config{HashKey: key})
	if err != nil {
		return proxy.Config{}, nil, nil, "", err
	}
	connectTo, err := parseConnectTo(o.connectTo)
	if err != nil {
		return proxy.Config{}, nil, nil, "", err
	}
	cfg := proxy.Config{Routes: routes, Redactor: rd, RedactBodies: o.redactBodies, Logger: logger, ConnectTo: connectTo}
	caPath := ""
	if o.mitm {
		ca, p, err := proxy.LoadOrCreateCA(dataDirFlag)
		if err != nil {
			return proxy.Config{}, nil, nil, "", fmt.Errorf("--mitm: %w", err)
		}
		cfg.CA, caPath = ca, p
	}
	sink, err := o.dial(cmd, otlpclient.Options{})
	if err != nil {
		return proxy.Config{}, nil, nil, "", err
	}
	cfg.Sink = sink
	l, err := net.Listen("tcp", o.listen)
	if err != nil {
		sink.Close()
		return proxy.Config{}, nil, nil, "", fmt.Errorf("--listen %s: %w", o.listen, err)
	}
	cfg.SelfHosts = proxy.SelfHosts(l.Addr())
	return cfg, sink, l, caPath, nil
}

// parseConnectTo reads --connect-to HOST:PORT=ADDR:PORT values.
func parseConnectTo(vals []string) (map[string]string, error) {
	m := map[string]string{}
	for _, v := range vals {
		from, to, ok := strings.Cut(v, "=")
		_, _, e1 := net.SplitHostPort(from)
		_, _, e2 := net.SplitHostPort(to)
		if !ok || e1 != nil || e2 != nil {
			return nil, fmt.Errorf("--connect-to %q: want HOST:PORT=ADDR:PORT", v)
		}
		m[strings.ToLower(from)] = to
	}
	return m, nil
}

func init() {
	rootCmd.AddCommand(newProxyCmd())
}

func newProxyCmd() *cobra.Command {
	o := &proxyOptions{}
	var record bool
	cmd := &cobra.Command{
		Use:   "proxy --record [flags] [-- COMMAND...]",
		Short: "Record every outbound HTTP exchange of an agent as fixture spans in its trace",
		Long: `proxy --record forwards an agent's HTTP calls and records each exchange as an HTTP client span
(HTTP semantic conventions) under the caller's span (W3C traceparent), with redacted headers and the
full request and response bodies (http.request.body, http.response.body; SSE streams chunk by chunk
as http.response.chunk events), sent to the collector over OTLP.

Point an agent at it in one of three ways:
  base URL     OPENAI_BASE_URL=http://127.0.0.1:8765/openai/v1   (routes: --route NAME=URL)
  HTTP proxy   HTTP_PROXY=http://127.0.0.1:8765
  HTTPS proxy  HTTPS_PROXY=http://127.0.0.1:8765 with --mitm and the CA in --data-dir trusted

With -- COMMAND, the command runs with all of these set, its exchanges share one trace (a root
span "runagain record"), and the trace id is printed when it ends; the exit code is the
command's. Without a command the proxy serves until interrupted.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !record {
				return errors.New("--record is required (replay a run with `runagain replay TRACE_ID -- COMMAND`)")
			}
			return runProxyRecord(cmd, o, args)
		},
	}
	cmd.Flags().BoolVar(&record, "record", false, "record exchanges (the only proxy mode; replay with: runagain replay TRACE_ID -- COMMAND)")
	o.joinFlag(cmd)
	cmd.Flags().BoolVar(&o.redactBodies, "redact-bodies", false, "also redact bodies in the proxy (by default the collector's agent_redaction processor does)")
	o.flags(cmd, "127.0.0.1:8765")
	o.sb.flags(cmd, false)
	return cmd
}

// commandFound fails, naming the command, when COMMAND cannot be started (not found on PATH, or
// not an executable file), before anything listens or records: without it a missing command
// stored an empty run first.
func commandFound(verb, name string) error {
	if _, err := exec.LookPath(name); err != nil {
		return fmt.Errorf("%s: cannot run %q: %w", verb, name, err)
	}
	return nil
}

// joinFlag registers --join-wait (proxy --record, replay, rerun, test), refused when negative
// before anything starts.
func (o *proxyOptions) joinFlag(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&o.joinWait, "join-wait", 10*time.Second, "with -- COMMAND whose environment configures an OTLP exporter (OTEL_EXPORTER_OTLP_*ENDPOINT, OTEL_TRACES_EXPORTER): wait up to this long after it ends for its own trace in the store, and place the exchanges that carried no traceparent in it, under the calls they belong to (inferred by resource or process, time, model and body); 0 turns the join off")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		_, err := agentrun.CheckJoinWait(cmd.Name(), o.joinWait, nil)
		return err
	}
}

// newJoiner is agentrun.NewJoiner for the command's environment env, saying first when
// --join-wait 0 leaves an instrumented agent's trace unjoined (agentrun.CheckJoinWait).
func (o *proxyOptions) newJoiner(verb string, root proxy.Root, env []string, errOut io.Writer) *agentrun.Joiner {
	if w, _ := agentrun.CheckJoinWait(verb, o.joinWait, env); w != "" {
		fmt.Fprintln(errOut, w)
	}
	return agentrun.NewJoiner(o.joinWait, root, env, openReader, verb)
}

func runProxyRecord(cmd *cobra.Command, o *proxyOptions, args []string) error {
	errOut := cmd.ErrOrStderr()
	logger := log.New(errOut, "", 0)
	sandboxed := false
	if len(args) > 0 {
		if err := commandFound("proxy", args[0]); err != nil {
			return err
		}
		var err error
		if sandboxed, err = o.sb.enabled("proxy", errOut); err != nil {
			return err
		}
	}
	cfg, sink, l, caPath, err := o.config(cmd, logger)
	if err != nil {
		return err
	}
	defer sink.Close()
	cfg.SpillPath = filepath.Join(dataDirFlag, "proxy-unsent.otlp.jsonl")
	var root proxy.Root
	if len(args) > 0 {
		root = proxy.Root{TraceID: proxy.NewTraceID(), SpanID: proxy.NewSpanID()}
	}
	rec := proxy.NewRecorder(cfg, root)
	srv := proxy.Serve(l, rec)
	addr := l.Addr().String()
	fmt.Fprintf(errOut, "runagain proxy: recording on http://%s (routes: %s), spans to %s\n", addr, strings.Join(cfg.Routes.Names(), ", "), o.endpoint)
	if caPath != "" {
		fmt.Fprintf(errOut, "runagain proxy: intercepting HTTPS with the CA %s\n", caPath)
	}
	if sandboxed {
		fmt.Fprintf(errOut, "runagain proxy: network sandbox: every TCP connection and DNS query of the command goes through the proxy\n")
	}
	ctx, stop := signal.NotifyContext(contextOf(cmd), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var exit agentrun.Exit
	start := time.Now()
	var mcpRes mcp.Result
	var joined *proxy.Join
	var end time.Time // when the command ended
	if len(args) > 0 {
		// The agent's stdio MCP servers, started as `runagain mcp`, record through this command.
		broker, berr := agentrun.StartMCPBroker(mcp.ModeRecord, ptrace.NewTraces(), cfg, proxy.ReplayOptions{}, agentrun.MCPAllow{}, true, root.TraceID)
		if berr != nil {
			return berr
		}
		env := append(agentrun.Env(addr, caPath, root), broker.Env()...)
		jn := o.newJoiner("proxy", root, env, errOut)
		held := agentrun.Holders(rec, broker) // HTTP and MCP exchanges join alike
		env = jn.Hold(held, nil, env)
		exit, err = agentrun.Run(ctx, sandboxed, rec, logger, args, env, cmd.OutOrStdout(), errOut, jn.Started)
		end = time.Now()
		_ = broker.Close()
		mcpRes = broker.Result()
		joined = jn.Join(ctx, held, start, errOut)
	} else {
		<-ctx.Done()
	}
	shutErr := srv.Shutdown(30 * time.Second)
	var startErr *agentrun.StartError
	if errors.As(err, &startErr) {
		// Nothing ran: no run is stored for it (README Guarantees, "A command that cannot run").
		_ = rec.Close()
		return fmt.Errorf("proxy: %w", err)
	}
	if len(args) > 0 {
		td := proxy.Command{Root: root, Args: args, Start: start, End: end, ExitCode: exit.Code}.RootSpan()
		o.stamp(td) // replay, rerun and test reuse the routes and --mitm
		if joined != nil {
			joined.PlaceRoot(td)
		}
		rec.Emit(td)
	}
	closeErr := rec.Close()
	st := rec.Stats()
	if len(args) > 0 {
		runTrace := root.TraceID
		if joined != nil {
			runTrace = joined.Trace
		}
		fmt.Fprintf(errOut, "runagain proxy: recorded %s%s; run trace %s\n", counted(st.Exchanges, "exchange"), mcpRecorded(mcpRes), runTrace)
	} else {
		fmt.Fprintf(errOut, "runagain proxy: recorded %s in %s\n", counted(st.Exchanges, "exchange"), counted(len(st.Traces), "trace"))
	}
	switch {
	case err != nil:
		return err
	case exit.Code != 0:
		// The command's status wins (CI wrappers read it); what else failed is still said.
		for _, e := range []error{closeErr, shutErr} {
			if e != nil {
				fmt.Fprintf(errOut, "runagain proxy: %v\n", e)
			}
		}
		return &commandExit{exit}
	case closeErr != nil:
		return closeErr
	case shutErr != nil:
		return shutErr
	}
	return nil
}

func contextOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
