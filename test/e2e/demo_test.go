// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestDemo runs `make demo`'s program (examples/demo) on the real binaries, on a data directory
// of its own, as a fresh clone without the corpus would: a scripted agent recorded, replayed
// offline, rerun with another model, diffed, frozen into a dataset and tested. It fails when a
// step of the README's walkthrough stops doing what the README says.
func TestDemo(t *testing.T) {
	bin := collectortest.BinDir(t)
	root := collectortest.RepoRoot(t)
	demo := filepath.Join(t.TempDir(), "runagain-demo")
	build := exec.Command("go", "build", "-o", demo, "./examples/demo")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/demo: %v\n%s", err, out)
	}
	data := filepath.Join(t.TempDir(), "demo")
	cmd := exec.Command(demo, "-bin", bin, "-config", filepath.Join(root, "config", "default.yaml"), "-data", data)
	cmd.Env = append(cmd.Environ(), "RUNAGAIN_CORPUS=/nonexistent") // the demo needs nothing beside the repository
	out, err := cmd.CombinedOutput()
	t.Logf("make demo:\n%s", out)
	if err != nil {
		t.Fatalf("the demo failed: %v", err)
	}
	s := string(out)
	for _, want := range []string{
		"It is sunny in Paris, 21 C.",
		"runagain proxy: recorded 2 exchanges; run trace ",
		"(the model was not called)",
		"changes: model=gpt-4.1",
		"first difference: step 1",
		"request model gpt-4o-mini -> gpt-4.1",
		"1 cases (new version)",
		"1 passed, 0 failed",
		"ui --data-dir " + data,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the demo's output lacks %q", want)
		}
	}
	if !regexp.MustCompile(`http://127\.0\.0\.1:7600/diff\?a=[0-9a-f]{32}&b=[0-9a-f]{32}`).MatchString(s) {
		t.Error("the demo does not print the UI's diff page of the two runs")
	}
	// A directory that is not the demo's own is refused: the demo never deletes data it did not write.
	if out, err := exec.Command(demo, "-bin", bin, "-config", filepath.Join(root, "config", "default.yaml"), "-data", t.TempDir()).CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "is not the demo's data directory") {
		t.Errorf("the demo on a directory that is not its own: %v\n%s", err, out)
	}
}
