// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/runagain/runagain/internal/loadgen"
)

func init() {
	rootCmd.AddCommand(newLoadgenCmd())
}

func newLoadgenCmd() *cobra.Command {
	cfg := loadgen.DefaultConfig()
	var jsonOut string
	var progress time.Duration
	cmd := &cobra.Command{
		Use:   "loadgen",
		Short: "Send realistic agent traffic to a collector over OTLP, for capacity planning",
		Long: `Loadgen simulates AI agents and sends their traces over OTLP (gRPC or HTTP/protobuf) through
the OpenTelemetry Go SDK: one TracerProvider, batch span processor and OTLP exporter per
simulated agent process (--concurrency).

Each session is a conversation (gen_ai.conversation.id) of --turns runs; each run is a trace with
an invoke_agent root, --tools-per-turn chat + execute_tool pairs and a final chat call, carrying
gen_ai.input.messages / gen_ai.output.messages JSON per the GenAI semantic conventions. With
--resend-history every chat call resends the whole conversation so far, so payloads grow.
PII and credentials are planted with --pii-rate and --secret-rate, tools fail with
--tool-error-rate, --loop-rate of the sessions contain one runaway turn of --loop-length identical
tool calls, and --length-rate of the final answers stop with finish_reason "length".

The run stops by itself when --sessions are done, before --max-spans would be exceeded, or after
--duration; everything generated is then flushed. The batch processor blocks rather than drops, so
the achieved rate is what the collector accepts. The report gives spans sent (acknowledged),
failed spans, bytes, achieved rate and the client-side latency percentiles of export requests;
--json writes it as JSON too. The same --seed gives the same content.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("endpoint") {
				// Like import, proxy and replay: the collector's OTLP gRPC address from
				// RUNAGAIN_ENDPOINT; with --protocol http, RUNAGAIN_HTTP_ENDPOINT or 127.0.0.1:4318.
				if e := os.Getenv("RUNAGAIN_ENDPOINT"); e != "" && cfg.Protocol != loadgen.ProtocolHTTP {
					cfg.Endpoint = e
				}
				if cfg.Protocol == loadgen.ProtocolHTTP {
					cfg.Endpoint = "127.0.0.1:4318"
					if e := os.Getenv("RUNAGAIN_HTTP_ENDPOINT"); e != "" {
						cfg.Endpoint = e
					}
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var pw = cmd.ErrOrStderr()
			rep, err := loadgen.Run(ctx, cfg, pw, progress)
			if rep != nil {
				rep.WriteText(cmd.OutOrStdout())
				if jsonOut != "" {
					b, jerr := json.MarshalIndent(rep, "", "  ")
					if jerr == nil {
						jerr = os.WriteFile(jsonOut, append(b, '\n'), 0o644)
					}
					if jerr != nil {
						return fmt.Errorf("--json: %w", jerr)
					}
				}
			}
			if err != nil {
				return err
			}
			if rep.SpansFailed > 0 {
				return fmt.Errorf("%d of %d spans were not accepted by %s", rep.SpansFailed, rep.SpansFailed+rep.SpansSent, cfg.Endpoint)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Int64Var(&cfg.Sessions, "sessions", cfg.Sessions, "conversations to send (0: unbounded, then --max-spans or --duration bound the run)")
	f.IntVar(&cfg.Turns, "turns", cfg.Turns, "user turns (runs, traces) per session")
	f.IntVar(&cfg.ToolsPerTurn, "tools-per-turn", cfg.ToolsPerTurn, "tool calls per turn")
	f.IntVar(&cfg.MessageBytes, "message-bytes", cfg.MessageBytes, "approximate size of each message text (user, assistant, tool result)")
	f.IntVar(&cfg.SystemPromptBytes, "system-prompt-bytes", cfg.SystemPromptBytes, "size of the system instructions sent with every chat call")
	f.BoolVar(&cfg.ResendHistory, "resend-history", cfg.ResendHistory, "every chat call carries the whole conversation so far")
	f.Float64Var(&cfg.PIIRate, "pii-rate", cfg.PIIRate, "probability that a message holds a PII value (e-mail, phone, card, IBAN)")
	f.Float64Var(&cfg.SecretRate, "secret-rate", cfg.SecretRate, "probability that a message holds a credential (OpenAI, AWS, GitHub key)")
	f.Float64Var(&cfg.ToolErrorRate, "tool-error-rate", cfg.ToolErrorRate, "probability that a tool call fails")
	f.Float64Var(&cfg.LoopRate, "loop-rate", cfg.LoopRate, "fraction of sessions with one runaway turn")
	f.IntVar(&cfg.LoopLength, "loop-length", cfg.LoopLength, "identical tool calls in a runaway turn")
	f.Float64Var(&cfg.LengthRate, "length-rate", cfg.LengthRate, "probability that a final answer stops with finish_reason length")
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "content seed: the same seed sends the same content")
	f.Int64Var(&cfg.MaxSpans, "max-spans", cfg.MaxSpans, "stop before sending more spans than this (0: no bound)")
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "stop starting new runs after this long (0: no bound)")
	f.Float64Var(&cfg.Rate, "rate", cfg.Rate, "target spans per second in total (0: as fast as the collector accepts)")
	f.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "simulated agent processes (one SDK exporter and connection each)")
	f.StringVar(&cfg.Protocol, "protocol", cfg.Protocol, "grpc or http (OTLP/HTTP protobuf)")
	f.StringVar(&cfg.Endpoint, "endpoint", cfg.Endpoint, "OTLP receiver host:port (env RUNAGAIN_ENDPOINT; with --protocol http RUNAGAIN_HTTP_ENDPOINT, default 127.0.0.1:4318)")
	f.BoolVar(&cfg.Insecure, "insecure", cfg.Insecure, "plaintext, no TLS")
	f.StringVar(&cfg.Compression, "compression", cfg.Compression, "none or gzip")
	f.IntVar(&cfg.BatchSize, "batch-size", cfg.BatchSize, "spans per export request (SDK batch span processor)")
	f.DurationVar(&cfg.ExportTimeout, "export-timeout", cfg.ExportTimeout, "timeout of one export request including the exporter's retries")
	f.StringVar(&cfg.ServiceName, "service-name", cfg.ServiceName, "resource service.name of the simulated agents")
	f.StringVar(&cfg.Provider, "provider", cfg.Provider, "gen_ai.provider.name")
	f.StringVar(&cfg.Model, "model", cfg.Model, "gen_ai.request.model")
	f.StringVar(&jsonOut, "json", "", "also write the report as JSON to this file")
	f.DurationVar(&progress, "progress", 5*time.Second, "print progress to stderr this often (0: never)")
	return cmd
}
