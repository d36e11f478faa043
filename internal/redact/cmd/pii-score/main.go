// SPDX-License-Identifier: Apache-2.0

// Command pii-score scores the redact PII detectors on the corpus pii/ presidio records and
// prints precision and recall per entity type.
//
//	go run ./internal/redact/cmd/pii-score [-corpus DIR] [-v]
//
// The records are split in two halves (piiscore.Split): a tuning half, the only one whose misses
// -v lists, and a held-out half that nobody tunes on; both are scored and printed.
// DIR defaults to $RUNAGAIN_CORPUS or ../shared/corpus. Exit status 1 when a type falls below
// recall 0.98 or precision 0.95 in either half.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/runagain/runagain/internal/redact"
	"github.com/runagain/runagain/internal/redact/piiscore"
)

func main() {
	def := os.Getenv("RUNAGAIN_CORPUS")
	if def == "" {
		def = filepath.Join("..", "shared", "corpus")
	}
	dir := flag.String("corpus", def, "corpus directory (holds pii/)")
	verbose := flag.Bool("v", false, "list missed labels and spurious detections")
	flag.Parse()
	recs, err := piiscore.Load(filepath.Join(*dir, "pii"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "pii-score:", err)
		os.Exit(2)
	}
	r, err := redact.New(redact.Config{HashKey: []byte("pii-score")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "pii-score:", err)
		os.Exit(2)
	}
	tune, held := piiscore.Split(recs)
	fmt.Printf("%d records from %s: %d for tuning (even positions), %d held out (odd positions)\n", len(recs), filepath.Join(*dir, "pii"), len(tune), len(held))
	code := 0
	for _, half := range []struct {
		name string
		recs []piiscore.Record
	}{{"tuning half", tune}, {"held-out half", held}} {
		stats := piiscore.Score(r, half.recs)
		fmt.Printf("\n%s (%d records)\n", half.name, len(half.recs))
		piiscore.Print(os.Stdout, stats, *verbose && half.name == "tuning half")
		for n, s := range stats {
			if s.Recall() < 0.98 || s.Precision() < 0.95 {
				fmt.Fprintf(os.Stderr, "pii-score: %s: %s below target (precision %.3f, recall %.3f)\n", half.name, n, s.Precision(), s.Recall())
				code = 1
			}
		}
	}
	os.Exit(code)
}
