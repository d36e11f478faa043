// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"maps"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/spf13/pflag"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/importer"
	"github.com/runagain/runagain/internal/otlpclient/otlptest"
)

func fixture(name string) string {
	return filepath.Join("..", "..", "internal", "importer", "testdata", name)
}

// runCLI executes the real root command with args and returns stdout, stderr and the error.
func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&errOut)
	rootCmd.SetArgs(args)
	defer rootCmd.SetArgs(nil)
	err := rootCmd.Execute()
	return out.String(), errOut.String(), err
}

// spanKeys maps "traceid/spanid" to the protobuf of the span alone with its resource and scope
// (otlptest.SpanBytes), over all of tds.
func spanKeys(t *testing.T, tds ...ptrace.Traces) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, td := range tds {
		maps.Copy(out, otlptest.SpanBytes(t, td))
	}
	return out
}

func parseAll(t *testing.T, files []string) []ptrace.Traces {
	t.Helper()
	var out []ptrace.Traces
	for _, f := range files {
		res, err := importer.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res.Traces)
	}
	return out
}

func TestImportCommandSendsEveryFile(t *testing.T) {
	srv := otlptest.Start(t, 0)
	files := []string{fixture("otlp_lines.json"), fixture("otlp_whole.json"), fixture("langfuse_small.json"), fixture("anyagent_small.json")}
	files = append(files, corpus.Walk(t, "langfuse", func(p string) bool { return strings.HasSuffix(p, ".trace.json") })...)
	files = append(files, corpus.Walk(t, "any-agent", func(p string) bool { return strings.HasSuffix(p, "_trace.json") })...)

	out, _, err := runCLI(t, append([]string{"import", "--endpoint", srv.Addr, "--timeout", "20s"}, files...)...)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	runLines := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if id, ok := strings.CutPrefix(l, "  run "); ok {
			runLines[strings.Fields(id)[0]] = true // each stored run's trace id, for show/replay
			continue
		}
		lines = append(lines, l)
	}
	for _, td := range parseAll(t, files) {
		for _, r := range runsOf("", td) {
			if !runLines[r.traceID] {
				t.Errorf("import did not list run %s", r.traceID)
			}
		}
	}
	if len(lines) != len(files) {
		t.Fatalf("%d summary lines for %d files:\n%s", len(lines), len(files), out)
	}
	re := regexp.MustCompile(`^(.+): (otlp-json|langfuse|any-agent), (\d+) spans?, (\d+) traces? sent to `)
	for i, l := range lines {
		m := re.FindStringSubmatch(l)
		if m == nil || m[1] != files[i] {
			t.Errorf("summary line %q for %s", l, files[i])
		}
	}
	want := spanKeys(t, parseAll(t, files)...)
	got := spanKeys(t, srv.Traces(t)...)
	if len(got) != len(want) {
		t.Fatalf("received %d spans, want %d", len(got), len(want))
	}
	for k, w := range want {
		if !bytes.Equal(got[k], w) {
			t.Errorf("span %s: received bytes differ from the parsed file", k)
		}
	}
}

func TestImportMalformedFileSendsNothing(t *testing.T) {
	srv := otlptest.Start(t, 0)
	bad := fixture("bad_langfuse_time.json")

	_, _, err := runCLI(t, "import", "--endpoint", srv.Addr, bad)
	if err == nil || !strings.Contains(err.Error(), bad+":5:19: ") {
		t.Fatalf("error %v does not name %s:5:19", err, bad)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent for a malformed file", n)
	}

	// Between good files: the good ones arrive, nothing of the bad one.
	good := []string{fixture("otlp_whole.json"), fixture("anyagent_small.json")}
	out, _, err := runCLI(t, "import", "--endpoint", srv.Addr, good[0], bad, fixture("bad_truncated.json"), good[1])
	if err == nil || !strings.Contains(err.Error(), "2 of 4 files failed") || !strings.Contains(err.Error(), fixture("bad_truncated.json")+":1:102: ") {
		t.Fatalf("error %v", err)
	}
	if n := len(regexp.MustCompile(` traces? sent to `).FindAllString(out, -1)); n != 2 {
		t.Errorf("want 2 summary lines, got %d:\n%s", n, out)
	}
	want := spanKeys(t, parseAll(t, good)...)
	got := spanKeys(t, srv.Traces(t)...)
	if len(got) != len(want) {
		t.Fatalf("received %d spans, want %d (the good files only)", len(got), len(want))
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("span %s of a good file missing", k)
		}
	}
}

func TestImportReportsRejectedSpans(t *testing.T) {
	srv := otlptest.Start(t, 0)
	srv.SetReply(func(req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
		resp := ptraceotlp.NewExportResponse()
		resp.PartialSuccess().SetRejectedSpans(1)
		resp.PartialSuccess().SetErrorMessage("span has an empty trace id")
		return resp, nil
	})
	f := fixture("otlp_whole.json")
	_, _, err := runCLI(t, "import", "--endpoint", srv.Addr, f)
	if err == nil || !strings.Contains(err.Error(), f+": sent 1 of 2 spans: collector rejected 1 spans: span has an empty trace id") {
		t.Fatalf("error %v", err)
	}
}

func TestImportNeedsFiles(t *testing.T) {
	if _, _, err := runCLI(t, "import"); err == nil {
		t.Fatal("import without files must fail")
	}
}

// TestImportInsecureFlag: --insecure=false makes the client speak TLS, which a plaintext
// receiver refuses; nothing is delivered and the error says which request failed.
func TestImportInsecureFlag(t *testing.T) {
	srv := otlptest.Start(t, 0)
	cmd := newImportCmd() // a fresh command: flag state does not leak into other tests
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	f := fixture("otlp_whole.json")
	cmd.SetArgs([]string{"--endpoint", srv.Addr, "--insecure=false", "--timeout", "5s", f})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), f+": sent 0 of 2 spans: export request 1 of 1") {
		t.Fatalf("error %v", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests delivered over a refused TLS connection", n)
	}
}

// TestImportHeaders: --header (else RUNAGAIN_OTLP_HEADERS) goes with every export request, for
// a collector behind an authenticator; a malformed one fails naming the flag or the variable.
func TestImportHeaders(t *testing.T) {
	srv := otlptest.Start(t, 0)
	t.Cleanup(func() { resetFlags(t, "import") })
	if _, _, err := runCLI(t, "import", "--endpoint", srv.Addr, "--wait", "0", "--header", "Authorization=Bearer t0k", fixture("otlp_whole.json")); err != nil {
		t.Fatal(err)
	}
	resetFlags(t, "import")
	t.Setenv("RUNAGAIN_OTLP_HEADERS", "x-tenant=team%20a")
	if _, _, err := runCLI(t, "import", "--endpoint", srv.Addr, "--wait", "0", fixture("otlp_whole.json")); err != nil {
		t.Fatal(err)
	}
	mds := srv.Metadata()
	if len(mds) != 2 || strings.Join(mds[0].Get("authorization"), "") != "Bearer t0k" || strings.Join(mds[1].Get("x-tenant"), "") != "team a" {
		t.Fatalf("metadata received: %v", mds)
	}
	if _, _, err := runCLI(t, "import", "--endpoint", srv.Addr, "--header", "novalue", fixture("otlp_whole.json")); err == nil || !strings.Contains(err.Error(), `--header "novalue"`) {
		t.Errorf("bad --header: %v", err)
	}
	resetFlags(t, "import")
	t.Setenv("RUNAGAIN_OTLP_HEADERS", "k=%zz")
	if _, _, err := runCLI(t, "import", "--endpoint", srv.Addr, fixture("otlp_whole.json")); err == nil || !strings.Contains(err.Error(), "RUNAGAIN_OTLP_HEADERS") {
		t.Errorf("bad RUNAGAIN_OTLP_HEADERS: %v", err)
	}
}

// resetFlags puts every flag of the named subcommand back to its default: rootCmd is one value
// for the whole test binary, and cobra keeps flag values between Execute calls.
func resetFlags(t *testing.T, name string) {
	t.Helper()
	cmd, _, err := rootCmd.Find([]string{name})
	if err != nil {
		t.Fatal(err)
	}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			_ = sv.Replace(nil)
		} else if err := f.Value.Set(f.DefValue); err != nil {
			t.Errorf("resetting --%s: %v", f.Name, err)
		}
		f.Changed = false
	})
}
