// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runagain/runagain/internal/importer"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestWireMockImportThenReplayAtOnce: the real binaries. `runagain import` of a WireMock stub
// mapping returns only once the run is readable, so `runagain replay` run right after it (no
// polling in between) finds the run and serves the stub's response to the openai-go client.
func TestWireMockImportThenReplayAtOnce(t *testing.T) {
	col := collectortest.Start(t, collectortest.Options{})
	file, err := filepath.Abs("../../internal/importer/testdata/wiremock/chat_completion.json")
	if err != nil {
		t.Fatal(err)
	}
	res, err := importer.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	traceID := res.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID().String()
	out, errOut, err := col.CLI("import", "--endpoint", col.GRPC, file)
	if err != nil || !strings.Contains(out, "wiremock, 2 spans") {
		t.Fatalf("import: %v\n%s%s", err, out, errOut)
	}
	cmd := exec.Command(filepath.Join(collectortest.BinDir(t), "runagain"), append([]string{"replay", traceID, "--"}, helperArgs()...)...)
	cmd.Env = append(append([]string(nil), col.Env...), "RUNAGAIN_ENDPOINT="+col.GRPC, helperEnv+"=1", "RUNAGAIN_TEST_STREAM=0",
		"OPENAI_API_KEY=test_openai_api_key", "RUNAGAIN_TEST_PROMPT=Which ocean contains Bouvet Island?")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("replay right after import: %v\nstdout:\n%s\nstderr:\n%s", err, o.String(), e.String())
	}
	if !strings.Contains(o.String(), `"content":"The Southern Ocean."`) {
		t.Errorf("client did not get the stub's response:\n%s", o.String())
	}
}
