package loadgen_test

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/runagain/runagain/internal/loadgen"
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
