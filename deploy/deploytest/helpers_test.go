// SPDX-License-Identifier: Apache-2.0

package deploytest

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// -update rewrites the generated copies of config/gateway.yaml (Kubernetes ConfigMap, Helm values).
var update = flag.Bool("update", false, "rewrite generated deploy files from config/gateway.yaml")

func repoRoot(t *testing.T) string { return collectortest.RepoRoot(t) }

// collectorBin is the real otelcol-runagain binary (skips, or fails under CI, without RUNAGAIN_BIN_DIR).
func collectorBin(t *testing.T) string {
	return filepath.Join(collectortest.BinDir(t), "otelcol-runagain")
}

// envRef matches ${env:NAME} and ${env:NAME:-default} (the collector's env provider syntax).
var envRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`)

// requiredEnv lists the variables a config uses without a default, sorted.
func requiredEnv(config []byte) []string {
	seen := map[string]bool{}
	for _, m := range envRef.FindAllSubmatch(config, -1) {
		if len(m[2]) == 0 {
			seen[string(m[1])] = true
		}
	}
	var out []string
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// componentTypes maps kind (receivers, processors, ...) to the component types a config uses
// (the part of each id before '/').
func componentTypes(t *testing.T, config []byte) map[string][]string {
	t.Helper()
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal(config, &doc))
	out := map[string][]string{}
	for _, kind := range []string{"receivers", "processors", "exporters", "connectors", "extensions"} {
		m, _ := doc[kind].(map[string]any)
		for id := range m {
			typ, _, _ := strings.Cut(id, "/")
			out[kind] = append(out[kind], typ)
		}
		sort.Strings(out[kind])
	}
	return out
}

// distributionComponents runs `otelcol-runagain components` and returns kind -> set of types.
func distributionComponents(t *testing.T, bin string) map[string]map[string]bool {
	t.Helper()
	out, err := exec.Command(bin, "components").Output()
	require.NoError(t, err, "otelcol-runagain components")
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal(out, &doc))
	res := map[string]map[string]bool{}
	for _, kind := range []string{"receivers", "processors", "exporters", "connectors", "extensions"} {
		res[kind] = map[string]bool{}
		list, _ := doc[kind].([]any)
		for _, e := range list {
			if m, ok := e.(map[string]any); ok {
				res[kind][fmt.Sprint(m["name"])] = true
			}
		}
	}
	return res
}

// missingComponents names the components a config needs that the binary lacks ("processor agent_redaction").
func missingComponents(t *testing.T, bin string, config []byte) []string {
	t.Helper()
	have := distributionComponents(t, bin)
	var missing []string
	for kind, types := range componentTypes(t, config) {
		for _, typ := range types {
			if !have[kind][typ] {
				missing = append(missing, strings.TrimSuffix(kind, "s")+" "+typ)
			}
		}
	}
	sort.Strings(missing)
	return missing
}

// skipIfMissing skips t when the binary lacks components the config needs, naming them.
func skipIfMissing(t *testing.T, bin, name string, config []byte) {
	t.Helper()
	if missing := missingComponents(t, bin, config); len(missing) > 0 {
		// Every component the shipped configs name is in builder-config.yaml: a binary without one
		// is a broken build, never a reason to skip.
		t.Fatalf("%s needs components the otelcol-runagain binary does not contain: %s "+
			"(add them to builder-config.yaml and rebuild with `make build`)", name, strings.Join(missing, ", "))
	}
}

// validate runs `otelcol-runagain validate --config path` with env (KEY=VALUE) added to a
// clean environment and returns the combined output and error. Validation builds the pipelines,
// and some components create files when built (agent_redaction's hash_key_file under the data
// directory), so it runs in a temporary directory with RUNAGAIN_DATA_DIR pointing into it.
func validate(t *testing.T, bin, path string, env []string) (string, error) {
	dir := t.TempDir()
	cmd := exec.Command(bin, "validate", "--config", path)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, env...)
	cmd.Env = append(cmd.Env, "RUNAGAIN_DATA_DIR="+filepath.Join(dir, "data"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return "", err
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		err := <-done
		return out.String(), fmt.Errorf("validate did not finish within 60s; killed (%v)", err)
	}
}

// readFile reads a repository file.
func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	require.NoError(t, err)
	return b
}

// yamlDocs splits a multi-document YAML file into its non-empty documents.
func yamlDocs(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		if strings.TrimSpace(stripComments(d)) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// deployFiles lists files under deploy/ (relative to the repository root) with one of the extensions.
func deployFiles(t *testing.T, exts ...string) []string {
	t.Helper()
	root := repoRoot(t)
	var out []string
	require.NoError(t, filepath.WalkDir(filepath.Join(root, "deploy"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "deploytest" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		for _, e := range exts {
			if !d.IsDir() && strings.HasSuffix(p, e) {
				rel, _ := filepath.Rel(root, p)
				out = append(out, rel)
			}
		}
		return nil
	}))
	sort.Strings(out)
	return out
}
