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
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/runagain/runagain/internal/agentrun"
	"github.com/runagain/runagain/internal/mcp"
	"github.com/runagain/runagain/internal/otlpclient"
)

func init() {
	rootCmd.AddCommand(newMCPCmd())
}

func newMCPCmd() *cobra.Command {
	var name string
	o := &otlpFlags{}
	cmd := &cobra.Command{
		Use:   "mcp --name NAME -- SERVER_COMMAND [ARGS...]",
		Short: "Stand between an agent and a stdio MCP server: record each exchange, replay it without the server",
		Long: `mcp is started by the agent in place of a stdio MCP server (its MCP client configuration names
"runagain" with args ["mcp", "--name", NAME, "--", SERVER_COMMAND, ARGS...]). Every JSON-RPC line
passes through unchanged (the MCP stdio transport), and every exchange becomes a span of the caller's
run (MCP semantic conventions: mcp.method.name, mcp.session.id, jsonrpc.request.id, gen_ai.tool.name,
gen_ai.tool.call.arguments and .result), placed in the trace of TRACEPARENT.

Under runagain proxy --record the spans go through the runagain command to the collector; alone,
to --endpoint. Under runagain replay, rerun and test the server is not started: each request is
answered from the recording of server NAME; one that matches nothing gets a JSON-RPC error naming
the field (expected, got) and fails the command; an unrecorded tools/call is refused unless the
command was given --allow-live-writes NAME (other requests go live with --allow-mcp NAME).
The exit code is the server's.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 || len(args) < 1 {
				return errors.New("usage: runagain mcp --name NAME -- SERVER_COMMAND [ARGS...]")
			}
			if strings.TrimSpace(name) == "" {
				return errors.New("--name is required: the server's name, under which its exchanges are recorded and replayed")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runMCP(cmd, o, name, args) },
	}
	cmd.Flags().StringVar(&name, "name", "", "the server's name: its exchanges are recorded and replayed under it (required)")
	o.register(cmd)
	return cmd
}

func runMCP(cmd *cobra.Command, o *otlpFlags, name string, args []string) error {
	ctx, stop := signal.NotifyContext(contextOf(cmd), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := log.New(cmd.ErrOrStderr(), "", 0)
	opts := mcp.Options{Name: name, Command: args, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: cmd.ErrOrStderr(), Logger: logger}
	if tp, _ := mcp.Lookup("TRACEPARENT"); tp != "" {
		if sc := parseTraceparent(tp); sc.IsValid() {
			opts.TraceID, opts.ParentID = pcommon.TraceID(sc.TraceID()), pcommon.SpanID(sc.SpanID())
		}
	}
	if path, _ := mcp.Lookup(mcp.EnvBroker); path != "" {
		c := mcp.Dial(path)
		opts.Broker, opts.Sink = c, c
	} else {
		logger.Printf("runagain mcp %s: no runagain command around the agent (%s is in neither this nor an ancestor's environment): recording to the collector", name, mcp.EnvBroker)
		if !cmd.Flags().Changed("endpoint") { // the agent's environment, when the MCP client reduced the server's
			if v, _ := mcp.Lookup("RUNAGAIN_ENDPOINT"); v != "" {
				o.endpoint = v
			}
		}
		sink, err := o.dial(cmd, otlpclient.Options{})
		if err != nil {
			return err
		}
		defer sink.Close()
		opts.Sink = sink
	}
	st, err := mcp.Run(ctx, opts)
	if err != nil {
		return err
	}
	if st.SendErrs > 0 {
		return fmt.Errorf("runagain mcp %s: %d exchange spans could not be sent", name, st.SendErrs)
	}
	if st.ExitCode != 0 {
		return &commandExit{agentrun.Exit{Code: st.ExitCode}} // the server's status is this command's
	}
	return nil
}

func parseTraceparent(tp string) trace.SpanContext {
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp})
	return trace.SpanContextFromContext(ctx)
}

// mcpFlags are the MCP and firewall flags of replay, rerun and test.
type mcpFlags struct {
	allowMCP    []string
	allowWrites []string
}

func (f *mcpFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVar(&f.allowMCP, "allow-mcp", nil, "MCP server NAME (runagain mcp --name) whose unrecorded requests other than tools/call go to the real server (repeatable)")
	fl.StringArrayVar(&f.allowWrites, "allow-live-writes", nil, "HOST or MCP server NAME whose unrecorded writes go live: HTTP requests of any method, MCP tools/call (repeatable; the side-effect firewall refuses them otherwise)")
}

// allow is the firewall's MCP part these flags give.
func (f *mcpFlags) allow() agentrun.MCPAllow {
	return agentrun.MCPAllow{Servers: f.allowMCP, Writes: f.allowWrites}
}

// mcpSummary is the MCP half of a command's summary line ("" when no MCP server took part).
func mcpSummary(r mcp.Result) string {
	if len(r.Servers) == 0 && r.Recorded == 0 {
		return ""
	}
	return fmt.Sprintf("MCP (%s): %d served from the recording, %d refused, %d sent live (%d recorded requests not asked for)",
		orNone(strings.Join(uniq(r.Servers), ", ")), r.Served, r.Refused, r.Live, r.Unserved)
}

func uniq(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// printMCPDivergence prints the broker's first divergence, if any, and returns it as an error part.
func printMCPDivergence(w io.Writer, r mcp.Result) string {
	if r.Divergence == nil {
		return ""
	}
	fmt.Fprintln(w, r.Divergence.Message())
	return fmt.Sprintf("at MCP request %d: %s", r.Divergence.Request, r.Divergence.Diff)
}

// mcpRecorded is the MCP part of proxy --record's summary line.
func mcpRecorded(r mcp.Result) string {
	if r.Spans == 0 && len(r.Servers) == 0 {
		return ""
	}
	return fmt.Sprintf(" and %d MCP exchanges (servers: %s)", r.Spans, orNone(strings.Join(uniq(r.Servers), ", ")))
}
