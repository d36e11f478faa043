// Command pii-score scores the redact PII detectors on the corpus pii/ presidio records and
// prints precision and recall per entity type.
//
//	go run ./internal/redact/cmd/pii-score [-corpus DIR] [-v]
//
// DIR defaults to $RUNAGAIN_CORPUS or ../shared/corpus. Exit status 1 when a type falls below
// recall 0.98 or precision 0.95.
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
	stats := piiscore.Score(r, recs)
	fmt.Printf("%d records from %s\n", len(recs), filepath.Join(*dir, "pii"))
	piiscore.Print(os.Stdout, stats, *verbose)
	for n, s := range stats {
		if s.Recall() < 0.98 || s.Precision() < 0.95 {
			fmt.Fprintf(os.Stderr, "pii-score: %s below target (precision %.3f, recall %.3f)\n", n, s.Precision(), s.Recall())
			defer os.Exit(1)
		}
	}
}
