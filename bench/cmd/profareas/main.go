// SPDX-License-Identifier: Apache-2.0

// Command profareas splits a profile of otelcol-runagain (bench -profile-seconds, or the pprof
// extension) with bench/internal/profsplit, the splitter behind bench's BENCHMARKS.md table too.
// By default it splits by the session's work areas, one owner each (profsplit.Areas: the hot
// SQLite write, payload offload, the warm and cold tiers, redaction, agent_guard, the tiered
// exporter, the otlp receiver, the background garbage collector, telemetry and the rest); with
// -table components by BENCHMARKS.md's pipeline components (profsplit.Components). For every row
// it also reports the part of its samples whose leaf is a system call, a lock or scheduler wait
// (spinning, futex), allocation (mallocgc and below), GC assists and zstd.
//
//	go run ./bench/cmd/profareas [-cpu S] bench/results/runagain.pprof
//	go run ./bench/cmd/profareas -sample alloc_space bench/results/runagain.heap.pprof
//
// With -sample it reads another sample type (a heap profile's alloc_space or inuse_space, in MB).
// With -cpu (the run's CPU s per 1,000 spans, from bench) each row's share is also given as CPU
// microseconds per span (share × the run's CPU per span; the profile covers only part of the run).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/runagain/runagain/bench/internal/profsplit"
)

func main() {
	cpuPer1k := flag.Float64("cpu", 0, "the run's CPU s per 1,000 spans (bench), to give each area in µs per span")
	sample := flag.String("sample", "", "sample type to split (default: the profile's last, CPU time; heap: alloc_space, inuse_space)")
	table := flag.String("table", "areas", "areas (per owner) or components (BENCHMARKS.md's table)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: profareas [-cpu S] [-sample TYPE] [-table areas|components] FILE.pprof")
		os.Exit(2)
	}
	t := profsplit.Areas
	switch *table {
	case "areas":
	case "components":
		t = profsplit.Components
	default:
		fmt.Fprintf(os.Stderr, "-table %q: want areas or components\n", *table)
		os.Exit(2)
	}
	p, err := profsplit.Read(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	vi, scale, unit, err := profsplit.Value(p, *sample)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", flag.Arg(0), err)
		os.Exit(1)
	}
	s := t.Split(p, vi, scale, unit, profsplit.LeafKinds)
	fmt.Printf("profile %s: %.2f %s of samples over %.0f s\n", flag.Arg(0), s.Total, unit, float64(p.DurationNanos)/1e9)
	fmt.Print(s.Markdown(profsplit.LeafKinds, *cpuPer1k))
}
