// SPDX-License-Identifier: Apache-2.0

// Command demo is `make demo`: a small scripted agent taken through runagain end to end, fully
// offline, on a fresh clone without the corpus. It starts a scripted OpenAI-compatible upstream
// on 127.0.0.1 and the collector (bin/otelcol-runagain on config/default.yaml, free loopback
// ports, its own data directory), then with bin/runagain:
//
//  1. records the agent's run (runagain proxy --record), and shows it (runagain show);
//  2. replays it offline against the recording (runagain replay): the model is not called;
//  3. reruns it with one change, the model (runagain rerun --set model=gpt-4.1);
//  4. compares the two runs (runagain diff);
//  5. freezes the recorded run into a dataset with expectations (runagain dataset add);
//  6. tests the unchanged agent against the dataset (runagain test): it passes, offline;
//
// and prints what to open in the web UI. Every command it runs is printed before its output, so
// the output reads as a walkthrough. It exits non-zero, naming the step, when a step does not do
// what it should (test/e2e TestDemo runs it).
//
//	demo [-bin bin] [-config config/default.yaml] [-data data/demo]
//	demo agent     the agent itself (runagain runs it)
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "agent" {
		os.Exit(runAgent())
	}
	var o options
	flag.StringVar(&o.bin, "bin", "bin", "directory holding otelcol-runagain and runagain (make build)")
	flag.StringVar(&o.config, "config", "config/default.yaml", "collector configuration")
	flag.StringVar(&o.data, "data", filepath.Join("data", "demo"), "data directory of the demo (emptied first; it must be the demo's own)")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

type options struct{ bin, config, data string }

// marker names the demo's data directory as its own: only a directory holding it is emptied.
const marker = ".runagain-demo"

type demo struct {
	o        options
	self     string   // this executable: `self agent` is the agent
	env      []string // environment of the collector and the CLI
	upstream *upstream
	out      io.Writer
}

func run(o options) error {
	var err error
	for _, p := range []*string{&o.bin, &o.config, &o.data} {
		if *p, err = filepath.Abs(*p); err != nil {
			return err
		}
	}
	for _, b := range []string{"otelcol-runagain", "runagain"} {
		if _, err := os.Stat(filepath.Join(o.bin, b)); err != nil {
			return fmt.Errorf("%s not found in %s: run `make build` first (make demo does)", b, o.bin)
		}
	}
	if err := freshDataDir(o.data); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	d := &demo{o: o, self: self, out: os.Stdout}
	if d.upstream, err = startUpstream(); err != nil {
		return err
	}
	defer d.upstream.close()
	ports, err := freePorts(5)
	if err != nil {
		return err
	}
	grpc := fmt.Sprintf("127.0.0.1:%d", ports[0])
	health := fmt.Sprintf("127.0.0.1:%d", ports[2])
	d.env = append(os.Environ(),
		"RUNAGAIN_DATA_DIR="+o.data,
		"RUNAGAIN_OTLP_GRPC_ENDPOINT="+grpc,
		fmt.Sprintf("RUNAGAIN_OTLP_HTTP_ENDPOINT=127.0.0.1:%d", ports[1]),
		"RUNAGAIN_HEALTH_ENDPOINT="+health,
		fmt.Sprintf("RUNAGAIN_PROMETHEUS_ENDPOINT=127.0.0.1:%d", ports[3]),
		fmt.Sprintf("RUNAGAIN_TELEMETRY_PORT=%d", ports[4]),
		"RUNAGAIN_ENDPOINT="+grpc,
		"OPENAI_API_KEY=sk-demo-not-a-real-key", // the scripted upstream ignores it; openai-go wants one
	)
	fmt.Fprintf(d.out, "runagain demo: scripted OpenAI-compatible model on %s, data in %s\n\n", d.upstream.url, o.data)
	stop, err := d.startCollector(health)
	if err != nil {
		return err
	}
	err = d.walkthrough()
	if serr := stop(); err == nil {
		err = serr
	}
	return err
}

// walkthrough runs the six steps and prints what to open in the UI.
func (d *demo) walkthrough() error {
	route := "openai=" + d.upstream.url
	agent := []string{"--", d.self, "agent"}

	d.heading("1. Record a run of the agent (its HTTP exchanges become spans of its trace)")
	_, errOut, err := d.runagain(append([]string{"proxy", "--record", "--listen", "127.0.0.1:0", "--route", route}, agent...)...)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	orig := match(`run trace ([0-9a-f]{32})`, errOut)
	if orig == "" {
		return errors.New("record: runagain proxy printed no run trace id")
	}
	if err := d.waitRun(orig, 3); err != nil {
		return err
	}
	out, _, err := d.runagainQuiet("show", orig)
	if err != nil {
		return fmt.Errorf("show: %w", err)
	}
	d.cmdLine("show", orig)
	fmt.Fprint(d.out, firstLines(out, 14))

	d.heading("2. Replay it offline: every request is answered from the recording")
	before := d.upstream.calls.Load()
	if _, _, err := d.runagain(append([]string{"replay", orig}, agent...)...); err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if n := d.upstream.calls.Load() - before; n != 0 {
		return fmt.Errorf("replay: the model was called %d times, want 0", n)
	}
	fmt.Fprintln(d.out, "(the model was not called)")

	d.heading("3. Rerun it with one change: the model (changed LLM calls go live to the model)")
	_, errOut, err = d.runagain(append([]string{"rerun", orig, "--set", "model=gpt-4.1", "--route", route}, agent...)...)
	if err != nil {
		return fmt.Errorf("rerun: %w", err)
	}
	rerun := match(`new run ([0-9a-f]{32}) \(rerun of`, errOut)
	if rerun == "" {
		return errors.New("rerun: runagain rerun printed no new run id")
	}
	if err := d.waitRun(rerun, 3); err != nil {
		return err
	}

	d.heading("4. Compare the two runs step by step")
	out, _, err = d.runagain("diff", orig, rerun)
	if err != nil && !strings.Contains(out, "gpt-4.1") {
		return fmt.Errorf("diff: %w", err)
	}

	d.heading("5. Freeze the recorded run into a dataset, with expectations")
	if _, _, err := d.runagain("dataset", "add", "demo-weather", orig, "--note", "make demo",
		"--expect", "output~sunny", "--expect", "tools=recorded", "--expect", "max_steps=2"); err != nil {
		return fmt.Errorf("dataset add: %w", err)
	}

	d.heading("6. Test the unchanged agent against the dataset (a CI gate, offline)")
	before = d.upstream.calls.Load()
	out, _, err = d.runagain(append([]string{"test", "demo-weather"}, agent...)...)
	if err != nil || !strings.Contains(out, "1 passed, 0 failed") {
		return fmt.Errorf("test: the unchanged agent must pass (%v)", err)
	}
	if n := d.upstream.calls.Load() - before; n != 0 {
		return fmt.Errorf("test: the model was called %d times, want 0", n)
	}

	cli := filepath.Join(d.o.bin, "runagain")
	fmt.Fprintf(d.out, "\nDone. Open the web UI over the demo's store:\n\n  %s ui --data-dir %s\n\n", rel(cli), rel(d.o.data))
	fmt.Fprintf(d.out, "then, on http://127.0.0.1:7600/ :\n")
	fmt.Fprintf(d.out, "  the recorded run   http://127.0.0.1:7600/runs/%s\n", orig)
	fmt.Fprintf(d.out, "  its first LLM call http://127.0.0.1:7600/runs/%s/steps/1\n", orig)
	fmt.Fprintf(d.out, "  the rerun's diff   http://127.0.0.1:7600/diff?a=%s&b=%s\n", orig, rerun)
	fmt.Fprintf(d.out, "  the dataset        http://127.0.0.1:7600/datasets\n")
	fmt.Fprintf(d.out, "\nThe CLI reads the same store: %s sessions --data-dir %s\n", rel(cli), rel(d.o.data))
	return nil
}

func (d *demo) heading(s string) { fmt.Fprintf(d.out, "\n== %s\n", s) }

func (d *demo) cmdLine(args ...string) {
	shown := make([]string, len(args))
	for i, a := range args {
		switch {
		case a == d.self:
			a = "<demo agent>"
		case strings.ContainsAny(a, " &?"):
			a = "'" + a + "'"
		}
		shown[i] = a
	}
	fmt.Fprintf(d.out, "$ runagain %s\n", strings.Join(shown, " "))
}

// runagain runs bin/runagain with args, printing the command line and its output as it goes, and
// returns its stdout and stderr; a non-zero exit is an error.
func (d *demo) runagain(args ...string) (string, string, error) {
	d.cmdLine(args...)
	var o, e bytes.Buffer
	err := d.exec(io.MultiWriter(&o, d.out), io.MultiWriter(&e, d.out), args...)
	return o.String(), e.String(), err
}

// runagainQuiet is runagain without printing anything.
func (d *demo) runagainQuiet(args ...string) (string, string, error) {
	var o, e bytes.Buffer
	err := d.exec(&o, &e, args...)
	return o.String(), e.String(), err
}

func (d *demo) exec(stdout, stderr io.Writer, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(d.o.bin, "runagain"), args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = d.env, stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("runagain %s: %w", args[0], err)
	}
	return nil
}

// waitRun waits until `runagain show --json` has at least n spans of the run (the tiers write in
// batches).
func (d *demo) waitRun(traceID string, n int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _, err := d.runagainQuiet("show", "--json", traceID)
		if err == nil && strings.Count(out, `"spanId"`) >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("run %s did not reach %d stored spans within 30 s (collector log: %s)", traceID, n,
				filepath.Join(d.o.data, "collector.log"))
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// startCollector starts bin/otelcol-runagain with its log in the data directory and waits for
// its health check; stop ends it (SIGTERM, so it flushes and uploads what it holds).
func (d *demo) startCollector(health string) (stop func() error, err error) {
	logPath := filepath.Join(d.o.data, "collector.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(d.o.bin, "otelcol-runagain"), "--config", d.o.config)
	cmd.Env, cmd.Stdout, cmd.Stderr = d.env, logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop = func() error {
		defer logf.Close()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				return err
			}
			return nil
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			return fmt.Errorf("the collector did not stop within 30 s (log: %s)", logPath)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			logf.Close()
			return nil, fmt.Errorf("the collector exited at start (%v); its log, %s:\n%s", err, logPath, tail(logPath))
		default:
		}
		if resp, err := http.Get("http://" + health + "/"); err == nil { //nolint:noctx // a local health probe
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				fmt.Fprintf(d.out, "collector started (%s --config %s; log %s)\n", rel(filepath.Join(d.o.bin, "otelcol-runagain")), rel(d.o.config), rel(logPath))
				return stop, nil
			}
		}
		if time.Now().After(deadline) {
			_ = stop()
			return nil, fmt.Errorf("the collector was not healthy within 60 s; its log, %s:\n%s", logPath, tail(logPath))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// freshDataDir empties dir when it is the demo's own (it holds marker) or does not exist, and
// refuses any other directory: the demo never deletes data it did not write.
func freshDataDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		if _, err := os.Stat(filepath.Join(dir, marker)); err != nil {
			return fmt.Errorf("%s exists and is not the demo's data directory (no %s in it): give another with -data", dir, marker)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, marker), []byte("written by make demo: emptied at its next run\n"), 0o644)
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func match(re, s string) string {
	if m := regexp.MustCompile(re).FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "") + fmt.Sprintf("... (%d more lines: runagain show prints every attribute in full)\n", len(lines)-n)
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// rel is p relative to the working directory when it is under it (shorter commands to copy).
func rel(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}
