// SPDX-License-Identifier: Apache-2.0

package loadgen_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	_ "modernc.org/sqlite"

	"github.com/runagain/runagain/internal/loadgen"
	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestLoadgenThroughDefaultPipelineLosesNothing runs `runagain loadgen` against the real
// collector with config/default.yaml and checks that the hot tier ends up with every span and
// every session loadgen reported as sent (the zero-loss check of `make bench`, small).
func TestLoadgenThroughDefaultPipelineLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	c := collectortest.Start(t, collectortest.Options{})
	out := filepath.Join(t.TempDir(), "report.json")
	stdout, stderr, err := c.CLI("loadgen", "--endpoint", c.GRPC, "--sessions", "12", "--turns", "3",
		"--tools-per-turn", "2", "--pii-rate", "0.5", "--secret-rate", "0.5", "--loop-rate", "0.5", "--loop-length", "4",
		"--progress", "0", "--json", out)
	if err != nil {
		t.Fatalf("loadgen: %v\n%s\n%s", err, stdout, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep loadgen.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.SpansSent == 0 || rep.SpansSent != rep.Generated.Spans || rep.SpansFailed != 0 || rep.Sessions != 12 {
		t.Fatalf("report: sent %d of %d generated, failed %d, sessions %d", rep.SpansSent, rep.Generated.Spans, rep.SpansFailed, rep.Sessions)
	}

	db, err := sql.Open("sqlite", "file:"+filepath.Join(c.DataDir, "hot.db")+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n, sessions int64
	for deadline := time.Now().Add(60 * time.Second); ; {
		err = db.QueryRow(`SELECT count(*), count(DISTINCT session_id) FROM spans`).Scan(&n, &sessions)
		if (err == nil && n >= rep.SpansSent) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if n != rep.SpansSent || sessions != rep.Sessions {
		t.Fatalf("hot tier: %d spans in %d sessions; loadgen sent %d spans in %d sessions", n, sessions, rep.SpansSent, rep.Sessions)
	}
}

// TestLoadgenFaultsLandInTheirOwnPatterns sends loadgen traffic with planted faults (tool
// errors, runaway loops that agent_guard alerts on, length stops) through the real collector
// and checks the failure patterns of the hot tier against what loadgen reports it planted: each
// planted combination (FaultsAttr on the root span) is exactly one pattern, the pattern's count
// is what loadgen planted, no pattern holds runs of two combinations, and the runs without a
// planted fault are in no pattern.
func TestLoadgenFaultsLandInTheirOwnPatterns(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	c := collectortest.Start(t, collectortest.Options{})
	out := filepath.Join(t.TempDir(), "report.json")
	stdout, stderr, err := c.CLI("loadgen", "--endpoint", c.GRPC, "--sessions", "30", "--turns", "3",
		"--tools-per-turn", "2", "--tool-error-rate", "0.08", "--loop-rate", "0.3", "--loop-length", "5",
		"--length-rate", "0.1", "--pii-rate", "0", "--secret-rate", "0", "--progress", "0", "--json", out)
	if err != nil {
		t.Fatalf("loadgen: %v\n%s\n%s", err, stdout, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep loadgen.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	planted := rep.Generated.FaultRuns
	if rep.Generated.LoopTurns == 0 || rep.Generated.LengthStops == 0 || rep.Generated.ToolErrors == 0 {
		t.Fatalf("loadgen planted too little to check: %+v", rep.Generated)
	}
	db, err := sqlitestore.Open(filepath.Join(c.DataDir, "hot.db"), sqlitestore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	var why string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		why = checkPatterns(ctx, db, rep.Generated.Traces, planted)
		if why == "" {
			return
		}
	}
	t.Fatalf("patterns do not match what loadgen planted (%v): %s", planted, why)
}

// checkPatterns returns what differs between the hot tier's patterns and planted, "" for none.
func checkPatterns(ctx context.Context, db *sqlitestore.DB, traces int64, planted map[string]int64) string {
	rep, err := patterns.List(ctx, db, store.PatternFilter{})
	if err != nil {
		return err.Error()
	}
	if rep.Runs != traces {
		return fmt.Sprintf("%d runs stored of %d sent", rep.Runs, traces)
	}
	seen := map[string]string{} // planted combination -> pattern
	for _, p := range rep.Patterns {
		_, runs, err := patterns.Show(ctx, db, p.ID, store.PatternFilter{})
		if err != nil {
			return err.Error()
		}
		label := ""
		for i, r := range runs {
			run, err := db.Run(ctx, r.TraceID)
			if err != nil {
				return err.Error()
			}
			l := rootAttr(run, loadgen.FaultsAttr)
			if i > 0 && l != label {
				return fmt.Sprintf("pattern %s (%s) holds runs planted %q and %q", p.ID, p.Title, label, l)
			}
			label = l
		}
		if label == "" {
			return fmt.Sprintf("pattern %s (%s) holds runs without a planted fault", p.ID, p.Title)
		}
		if other, dup := seen[label]; dup {
			return fmt.Sprintf("planted %q is split over patterns %s and %s", label, other, p.ID)
		}
		seen[label] = p.ID
		if p.Runs != planted[label] {
			return fmt.Sprintf("pattern %s (%s): %d runs, loadgen planted %q in %d", p.ID, p.Title, p.Runs, label, planted[label])
		}
	}
	for label, n := range planted {
		if seen[label] == "" {
			return fmt.Sprintf("planted %q (%d runs) is in no pattern", label, n)
		}
	}
	return ""
}

func rootAttr(run *store.Run, key string) string {
	v := ""
	store.EachSpan(run.Traces, func(s ptrace.Span) {
		if s.ParentSpanID().IsEmpty() {
			if a, ok := s.Attributes().Get(key); ok {
				v = a.AsString()
			}
		}
	})
	return v
}
