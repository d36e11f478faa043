// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/runagain/runagain/internal/otlpclient"
)

// otlpFlags are the collector connection flags of every command that sends OTLP (import, proxy,
// replay, rerun, test): one endpoint syntax, one TLS rule, the same headers.
type otlpFlags struct {
	endpoint string
	insecure bool
	headers  []string
}

// register adds --endpoint (env RUNAGAIN_ENDPOINT, default 127.0.0.1:4317), --insecure and
// --header (env RUNAGAIN_OTLP_HEADERS).
func (o *otlpFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	endpoint := os.Getenv("RUNAGAIN_ENDPOINT")
	if endpoint == "" {
		endpoint = "127.0.0.1:4317"
	}
	f.StringVar(&o.endpoint, "endpoint", endpoint, "collector OTLP gRPC endpoint host:port, https:// prefix for TLS (env RUNAGAIN_ENDPOINT)")
	f.BoolVar(&o.insecure, "insecure", true, "plaintext gRPC (default: true for a loopback endpoint, TLS otherwise)")
	f.StringArrayVar(&o.headers, "header", nil, "KEY=VALUE gRPC metadata sent with every export request, e.g. authorization=Bearer TOKEN for a gateway behind authentication (repeatable; env RUNAGAIN_OTLP_HEADERS as key=value,key2=value2, values URL-encoded, as OTEL_EXPORTER_OTLP_HEADERS)")
}

// dial connects with o's endpoint, TLS rule (plaintext by default only for a loopback endpoint)
// and headers (--header, else RUNAGAIN_OTLP_HEADERS). Errors name the flag or the variable.
func (o *otlpFlags) dial(cmd *cobra.Command, opts otlpclient.Options) (*otlpclient.Client, error) {
	opts.Insecure = o.insecure
	if !cmd.Flags().Changed("insecure") {
		opts.Insecure = otlpclient.IsLoopback(o.endpoint)
	}
	if len(o.headers) > 0 {
		opts.Headers = map[string]string{}
		for _, h := range o.headers {
			k, v, ok := strings.Cut(h, "=")
			if k = strings.TrimSpace(k); !ok || k == "" {
				return nil, fmt.Errorf("--header %q: want KEY=VALUE", h)
			}
			opts.Headers[strings.ToLower(k)] = strings.TrimSpace(v)
		}
	} else if env := os.Getenv("RUNAGAIN_OTLP_HEADERS"); env != "" {
		h, err := otlpclient.ParseHeaders(env)
		if err != nil {
			return nil, fmt.Errorf("RUNAGAIN_OTLP_HEADERS: %w", err)
		}
		opts.Headers = h
	}
	c, err := otlpclient.Dial(o.endpoint, opts)
	if err != nil {
		return nil, fmt.Errorf("--endpoint: %w", err)
	}
	return c, nil
}
