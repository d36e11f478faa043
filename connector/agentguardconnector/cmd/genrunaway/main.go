// SPDX-License-Identifier: Apache-2.0

// Command genrunaway writes a runaway agent session (the same tool with the same arguments,
// 20 times by default) as OTLP/JSON in the collector file exporter format (one
// ExportTraceServiceRequest per line), for `runagain import` and the make-run end-to-end check.
//
//	go run ./connector/agentguardconnector/cmd/genrunaway -o runaway.json [-calls 20] [-session id] [-now]
package main

import (
	"flag"
	"log"
	"os"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/connector/agentguardconnector/internal/runaway"
)

func main() {
	o := runaway.Default()
	out := flag.String("o", "-", "output file (- for stdout)")
	flag.IntVar(&o.Calls, "calls", o.Calls, "number of identical tool calls")
	flag.StringVar(&o.Session, "session", o.Session, "gen_ai.conversation.id of the session")
	flag.StringVar(&o.Service, "service", o.Service, "service.name")
	flag.Uint64Var(&o.Seed, "seed", o.Seed, "seed of trace and span ids")
	now := flag.Bool("now", false, "start the session at the current time instead of the fixed 2026-11-01T12:00:00Z")
	flag.Parse()
	if *now {
		o.Start = time.Now().UTC().Add(-time.Duration(o.Calls)*o.Step - 2*time.Second)
	}
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(runaway.Generate(o))
	if err != nil {
		log.Fatal(err)
	}
	b = append(b, '\n')
	if *out == "-" {
		_, err = os.Stdout.Write(b)
	} else {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		log.Fatal(err)
	}
}
