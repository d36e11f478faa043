// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/runagain/runagain/internal/loadgen"
)

// The contrib pipeline must catch what loadgen plants: every planted PII and secret value is
// matched by at least one of the blocked_values regexes.
func TestContribRegexesCatchPlantedValues(t *testing.T) {
	var res []*regexp.Regexp
	for i, p := range contribBlockedValues {
		re, err := regexp.Compile(p)
		if err != nil {
			t.Fatalf("blocked_values[%d]: %v", i, err)
		}
		res = append(res, re)
	}
	cfg := loadgen.DefaultConfig()
	cfg.PIIRate, cfg.SecretRate, cfg.SystemPromptBytes = 1, 1, 0
	s := loadgen.NewSession(&cfg, 0)
	planted := []*regexp.Regexp{
		regexp.MustCompile(`4\d{3} \d{4} \d{4} \d{4}`), regexp.MustCompile(`DE\d{20}`),
		regexp.MustCompile(`[a-z]+\.\d+@[a-z.]+`), regexp.MustCompile(`\+1 202 \d{3} \d{4}`),
		regexp.MustCompile(`sk-proj-[A-Za-z0-9]{48}`), regexp.MustCompile(`AKIA[A-Z2-7]{16}`), regexp.MustCompile(`ghp_[A-Za-z0-9]{36}`),
	}
	found := make([]int, len(planted))
	for !s.Done() {
		for _, sp := range s.NextTurn(time.Now()) {
			for _, kv := range sp.Attrs {
				v := kv.Value.String()
				for i, p := range planted {
					for _, m := range p.FindAllString(v, -1) {
						found[i]++
						caught := false
						for _, re := range res {
							if re.MatchString(m) {
								caught = true
								break
							}
						}
						if !caught {
							t.Fatalf("planted value %q (pattern %s) matches no blocked_values regex", m, p)
						}
					}
				}
			}
		}
	}
	for i, n := range found {
		if n == 0 {
			t.Errorf("pattern %s: nothing planted to check", planted[i])
		}
	}
}

func TestRunagainConfigAddsPprofAndMovesLiteralEndpoints(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	src := `
extensions:
  health_check:
    endpoint: ${env:RUNAGAIN_HEALTH_ENDPOINT:-127.0.0.1:13133}
exporters:
  prometheus:
    endpoint: 127.0.0.1:8889
  prometheus/env:
    endpoint: ${env:RUNAGAIN_PROMETHEUS_ENDPOINT:-127.0.0.1:8889}
  nop:
service:
  extensions: [health_check]
  pipelines:
    traces: {receivers: [otlp], processors: [memory_limiter, agent_redaction], exporters: [nop]}
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	next := 50000
	cfg, env, err := runagainConfig(path, ports{pprof: 41000}, func() (int, error) { next++; return next, nil })
	if err != nil {
		t.Fatal(err)
	}
	// two free ports were taken (in map order): one for the literal endpoint, one for the env one
	lit := cfg["exporters"].(map[string]any)["prometheus"].(map[string]any)["endpoint"]
	if len(env) != 1 || (lit != "127.0.0.1:50001" && lit != "127.0.0.1:50002") ||
		env[0] == "RUNAGAIN_PROMETHEUS_ENDPOINT="+lit.(string) || !strings.HasPrefix(env[0], "RUNAGAIN_PROMETHEUS_ENDPOINT=127.0.0.1:5000") {
		t.Errorf("literal endpoint moved to %v, environment for env-given endpoints %q", lit, env)
	}
	out, _ := yaml.Marshal(cfg)
	for _, want := range []string{"${env:RUNAGAIN_HEALTH_ENDPOINT:-127.0.0.1:13133}", "${env:RUNAGAIN_PROMETHEUS_ENDPOINT:-127.0.0.1:8889}", "pprof/bench", "127.0.0.1:41000"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("rewritten config lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "endpoint: 127.0.0.1:8889") {
		t.Errorf("literal endpoint 127.0.0.1:8889 was not moved:\n%s", out)
	}
	exts := cfg["service"].(map[string]any)["extensions"].([]any)
	if fmt.Sprint(exts) != "[health_check pprof/bench]" {
		t.Errorf("service.extensions = %v", exts)
	}
	if got := pipelineComponents([]byte(src)); len(got) != 1 || got[0] != "traces: otlp -> memory_limiter -> agent_redaction -> [nop]" {
		t.Errorf("pipelineComponents = %q", got)
	}

	// the real default configuration parses and keeps its pipelines
	def, _, err := runagainConfig(filepath.Join("..", "..", "..", "config", "default.yaml"), ports{pprof: 41000}, func() (int, error) { next++; return next, nil })
	if err != nil {
		t.Fatalf("config/default.yaml: %v", err)
	}
	if _, ok := def["service"].(map[string]any)["pipelines"].(map[string]any)["traces"]; !ok {
		t.Fatal("config/default.yaml: no traces pipeline after rewriting")
	}
}

func TestCPUSecondsAndStatusOfThisProcess(t *testing.T) {
	pid := os.Getpid()
	c0, err := cpuSeconds(pid)
	if err != nil {
		t.Fatal(err)
	}
	// burn a bounded amount of CPU
	x := 0
	for i := 0; i < 200_000_000; i++ {
		x += i ^ (x >> 3)
	}
	_ = x
	c1, err := cpuSeconds(pid)
	if err != nil {
		t.Fatal(err)
	}
	if c1 <= c0 {
		t.Fatalf("CPU seconds did not grow: %v then %v", c0, c1)
	}
	hwm, err := statusKB(pid, "VmHWM")
	if err != nil || hwm <= 0 {
		t.Fatalf("VmHWM = %d, %v", hwm, err)
	}
}

func TestPprofTable(t *testing.T) {
	out := `File: x
Showing nodes
      flat  flat%   sum%        cum   cum%
     1.44s 64.86% 64.86%      1.44s 64.86%  syscall.Syscall6
         0     0%     0%      1.87s 84.23%  github.com/runagain/runagain/processor/payloadoffloadprocessor.(*batch).run
         0     0%     0%      1.86s 83.78%  github.com/runagain/runagain/internal/payloadref.(*Store).Put
`
	all := pprofTable(out, nil, 0)
	if len(all) != 4 || !strings.Contains(all[0], "flat%") {
		t.Fatalf("all rows: %q", all)
	}
	own := pprofTable(out, func(l string) bool { return strings.Contains(l, "runagain/runagain/") }, 1)
	if len(own) != 2 || !strings.Contains(own[1], "payloadoffloadprocessor") {
		t.Fatalf("own rows limited to 1: %q", own)
	}
}

// analyzeProfile on a real CPU profile of this test: the shares add up to 100% and the top
// listing keeps its header.
func TestAnalyzeProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(contribBlockedValues[len(contribBlockedValues)-1])
	text := strings.Repeat("call +1 202 555 0100 about the order 4111 1111 1111 1111 ", 2000)
	var garbage [][]byte
	for t0 := time.Now(); time.Since(t0) < 400*time.Millisecond; {
		_ = re.FindAllStringIndex(text, -1)
		garbage = append(garbage, make([]byte, 1<<16))
		if len(garbage) > 64 {
			garbage = nil
		}
	}
	pprof.StopCPUProfile()
	f.Close()
	shares, top, err := analyzeProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, s := range shares {
		sum += s.Percent
	}
	if len(shares) == 0 || sum < 99.9 || sum > 100.1 {
		t.Fatalf("shares %+v add up to %.1f%%", shares, sum)
	}
	if len(top) < 2 || !strings.Contains(top[0], "flat%") {
		t.Fatalf("top functions: %q", top)
	}
}
