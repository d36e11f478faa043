// Command bench drives the same agent traffic (runagain loadgen) through three collector
// pipelines of the otelcol-runagain distribution, one after the other, and reports throughput,
// CPU, memory and storage per pipeline with the ratios of runagain's pipeline to the others:
//
//	baseline  otlp -> batch -> nop
//	contrib   otlp -> contrib redaction (regexes equivalent to internal/redact) -> batch -> nop
//	runagain  config/default.yaml as it is at run time (plus a pprof extension)
//
// Numbers and where they come from:
//   - spans/s, MB/s: spans acknowledged by the collector (loadgen report) and their protobuf bytes,
//     divided by the sustained time: from loadgen's first span to its last acknowledged export, or,
//     for runagain, to the last span written to the hot tier (max spans.ingested_unix_nano), if later.
//   - CPU s / 1k spans: utime+stime of the collector process (/proc/<pid>/stat) over that window.
//   - peak RSS: VmHWM of the collector (/proc/<pid>/status) at the end of the window.
//   - storage bytes per session (runagain only): size of the data directory without the
//     persistent queue, after the collector stopped, divided by the sessions sent.
//   - zero loss (runagain only): rows in the hot tier's spans table == spans acknowledged.
//
// Results: <out>/bench.json, <out>/bench.md, CPU profiles <out>/<pipeline>.pprof, and
// BENCHMARKS.md (the latest table with date, machine and command).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/runagain/runagain/internal/loadgen"
)

type options struct {
	bin, config, out, benchmarksMD, command string
	pipelines                               string
	sessions                                int64
	turns, tools, messageBytes, concurrency int
	maxDuration, drainTimeout               time.Duration
	contribMaxDuration                      time.Duration
	batchSize                               int
	profileSeconds                          int
	seed                                    uint64
	keep                                    bool
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin", "directory with otelcol-runagain and runagain (make build)")
	flag.StringVar(&o.config, "config", "config/default.yaml", "runagain pipeline configuration (c)")
	flag.StringVar(&o.out, "out", "bench/results", "directory for bench.json, bench.md and profiles")
	flag.StringVar(&o.benchmarksMD, "benchmarks-md", "BENCHMARKS.md", "file to write the latest table to ('' to skip)")
	flag.StringVar(&o.command, "command", "make bench", "the command recorded in BENCHMARKS.md")
	flag.StringVar(&o.pipelines, "pipelines", "baseline,contrib,runagain", "pipelines to run, in order")
	flag.Int64Var(&o.sessions, "sessions", 1200, "loadgen --sessions (the same load for every pipeline)")
	flag.IntVar(&o.turns, "turns", 5, "loadgen --turns")
	flag.IntVar(&o.tools, "tools-per-turn", 3, "loadgen --tools-per-turn")
	flag.IntVar(&o.messageBytes, "message-bytes", 512, "loadgen --message-bytes")
	flag.IntVar(&o.concurrency, "concurrency", 4, "loadgen --concurrency")
	flag.Uint64Var(&o.seed, "seed", 1, "loadgen --seed")
	flag.DurationVar(&o.maxDuration, "max-duration", 120*time.Second, "loadgen --duration: safety cap per pipeline")
	flag.DurationVar(&o.contribMaxDuration, "contrib-max-duration", 60*time.Second, "loadgen --duration for the contrib pipeline, whose regexes run on whole values (it is cut short, so it gets a prefix of the same load)")
	flag.IntVar(&o.batchSize, "batch-size", 256, "loadgen --batch-size")
	flag.DurationVar(&o.drainTimeout, "drain-timeout", 90*time.Second, "how long to wait for the hot tier to catch up after loadgen ends")
	flag.IntVar(&o.profileSeconds, "profile-seconds", 15, "CPU profile length per pipeline (0: none)")
	flag.BoolVar(&o.keep, "keep", false, "keep the collectors' data directories and logs")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, &o)
	if res != nil {
		if werr := writeResults(&o, res); werr != nil {
			fmt.Fprintln(os.Stderr, "bench:", werr)
			err = errors.Join(err, werr)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// Result is one pipeline's measurement.
type Result struct {
	Pipeline    string  `json:"pipeline"`
	Description string  `json:"description"`
	SpansSent   int64   `json:"spans_sent"`
	SpansFailed int64   `json:"spans_failed"`
	Sessions    int64   `json:"sessions"`
	Bytes       int64   `json:"bytes"`
	SustainedS  float64 `json:"sustained_s"`
	SpansPerSec float64 `json:"spans_per_s"`
	MBPerSec    float64 `json:"mb_per_s"`
	CPUSeconds  float64 `json:"cpu_s"`
	CPUPer1k    float64 `json:"cpu_s_per_1k_spans"`
	PeakRSSMB   float64 `json:"peak_rss_mb"`
	// loadgen's own view
	LoadgenSpansPerSec float64         `json:"loadgen_spans_per_s"`
	LoadgenCPUSeconds  float64         `json:"loadgen_cpu_s"`
	Latency            loadgen.Latency `json:"export_latency"`
	StoppedBy          string          `json:"stopped_by"`
	// runagain only
	HotSpans           int64   `json:"hot_spans,omitempty"`
	HotSessions        int64   `json:"hot_sessions,omitempty"`
	ZeroLoss           *bool   `json:"zero_loss,omitempty"`
	DrainS             float64 `json:"drain_after_loadgen_s,omitempty"`
	StorageHotBytes    int64   `json:"storage_hot_bytes,omitempty"`
	StorageOtherBytes  int64   `json:"storage_other_bytes,omitempty"` // payload blobs and other stores
	StorageQueueBytes  int64   `json:"storage_queue_bytes,omitempty"`
	StorageBytesPerSes float64 `json:"storage_bytes_per_session,omitempty"`
	Profile            string  `json:"profile,omitempty"`
	// Components is the CPU profile split by pipeline component (percent of samples).
	Components []componentShare `json:"components,omitempty"`
	TopFuncs   []string         `json:"top_functions,omitempty"`
	Error      string           `json:"error,omitempty"`
}

// Results is the whole run.
type Results struct {
	Date       string             `json:"date"`
	Command    string             `json:"command"`
	Machine    machine            `json:"machine"`
	Load       map[string]string  `json:"load"`
	Pipelines  []*Result          `json:"pipelines"`
	Ratios     map[string]float64 `json:"ratios"`
	Config     string             `json:"runagain_config"`
	Components []string           `json:"runagain_components"`
	DurationS  float64            `json:"bench_duration_s"`
}

type machine struct {
	Cores    int     `json:"cores"`
	MemoryGB float64 `json:"memory_gb"`
	CPUModel string  `json:"cpu_model"`
	Load1    string  `json:"load_average_at_start"`
	LoadEnd  string  `json:"load_average_at_end"`
	Kernel   string  `json:"kernel"`
	GoVer    string  `json:"go"`
}

var descriptions = map[string]string{
	"baseline": "otlp -> batch -> nop",
	"contrib":  "otlp -> redaction (contrib, equivalent regexes) -> batch -> nop",
	"runagain": "config/default.yaml",
}

func run(ctx context.Context, o *options) (*Results, error) {
	t0 := time.Now()
	// absolute: the collectors run in their own working directories
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return nil, err
	}
	col := filepath.Join(bin, "otelcol-runagain")
	cli := filepath.Join(bin, "runagain")
	for _, b := range []string{col, cli} {
		if _, err := os.Stat(b); err != nil {
			return nil, fmt.Errorf("%s: %w (run make build)", b, err)
		}
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	res := &Results{
		Date:    time.Now().UTC().Format("2006-01-02 15:04 MST"),
		Command: o.command,
		Machine: machineInfo(),
		Load: map[string]string{
			"sessions": strconv.FormatInt(o.sessions, 10), "turns": strconv.Itoa(o.turns),
			"tools_per_turn": strconv.Itoa(o.tools), "message_bytes": strconv.Itoa(o.messageBytes),
			"concurrency": strconv.Itoa(o.concurrency), "seed": strconv.FormatUint(o.seed, 10),
			"batch_size": strconv.Itoa(o.batchSize), "contrib_max_duration": o.contribMaxDuration.String(),
			"protocol": "grpc", "other": "loadgen defaults (resend history, pii 0.05, secrets 0.02, tool errors 0.05, loops 0.02, length 0.03)",
		},
		Ratios: map[string]float64{},
		Config: o.config,
	}
	if b, err := os.ReadFile(o.config); err == nil {
		res.Components = pipelineComponents(b)
	}
	work, err := os.MkdirTemp("", "runagain-bench-")
	if err != nil {
		return nil, err
	}
	if !o.keep {
		defer os.RemoveAll(work)
	} else {
		fmt.Fprintln(os.Stderr, "bench: work directory", work)
	}
	var errs []error
	for _, name := range strings.Split(o.pipelines, ",") {
		name = strings.TrimSpace(name)
		if _, ok := descriptions[name]; !ok {
			return res, fmt.Errorf("-pipelines: unknown pipeline %q (want baseline, contrib, runagain)", name)
		}
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(os.Stderr, "bench: %s (%s)\n", name, descriptions[name])
		r, err := runPipeline(ctx, o, name, col, cli, filepath.Join(work, name))
		if err != nil {
			r.Error = err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		res.Pipelines = append(res.Pipelines, r)
		fmt.Fprintf(os.Stderr, "bench: %s: %.0f spans/s, %.2f MB/s, %.3f CPU s/1k spans, peak RSS %.0f MB\n",
			name, r.SpansPerSec, r.MBPerSec, r.CPUPer1k, r.PeakRSSMB)
	}
	by := map[string]*Result{}
	for _, r := range res.Pipelines {
		by[r.Pipeline] = r
	}
	if c := by["runagain"]; c != nil && c.SpansPerSec > 0 {
		for _, other := range []string{"baseline", "contrib"} {
			if r := by[other]; r != nil && r.SpansPerSec > 0 {
				k := "c/a"
				if other == "contrib" {
					k = "c/b"
				}
				res.Ratios[k+" spans_per_s"] = c.SpansPerSec / r.SpansPerSec
				if r.CPUPer1k > 0 {
					res.Ratios[k+" cpu_per_span"] = c.CPUPer1k / r.CPUPer1k
				}
				if r.PeakRSSMB > 0 {
					res.Ratios[k+" peak_rss"] = c.PeakRSSMB / r.PeakRSSMB
				}
			}
		}
	}
	res.DurationS = time.Since(t0).Seconds()
	res.Machine.LoadEnd = machineInfo().Load1
	return res, errors.Join(errs...)
}

func runPipeline(ctx context.Context, o *options, name, col, cli, dir string) (*Result, error) {
	r := &Result{Pipeline: name, Description: descriptions[name]}
	dataDir := filepath.Join(dir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return r, err
	}
	p, err := freePorts()
	if err != nil {
		return r, err
	}
	var cfg map[string]any
	var extraEnv []string
	switch name {
	case "baseline":
		cfg = plainConfig(p, false)
	case "contrib":
		cfg = plainConfig(p, true)
	case "runagain":
		if cfg, extraEnv, err = runagainConfig(o.config, p, freePort); err != nil {
			return r, err
		}
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := writeYAML(cfgPath, cfg); err != nil {
		return r, err
	}
	c, err := startCollector(col, cfgPath, dir, append(p.env(dataDir), extraEnv...))
	if err != nil {
		return r, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = c.stop(30 * time.Second)
		}
	}()
	grpcAddr := fmt.Sprintf("127.0.0.1:%d", p.grpc)
	if err := c.waitReady(grpcAddr, 60*time.Second); err != nil {
		return r, err
	}
	time.Sleep(time.Second) // let start-up work (SQLite open, queue recovery) settle
	pid := c.cmd.Process.Pid
	cpu0, err := cpuSeconds(pid)
	if err != nil {
		return r, err
	}

	// CPU profile of the steady state, in the background
	var pwg sync.WaitGroup
	var profErr error
	profPath := filepath.Join(o.out, name+".pprof")
	if o.profileSeconds > 0 {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			select {
			case <-time.After(500 * time.Millisecond):
			case <-ctx.Done():
				return
			}
			profErr = fetchProfile(ctx, fmt.Sprintf("127.0.0.1:%d", p.pprof), o.profileSeconds, profPath)
		}()
	}

	lgJSON := filepath.Join(dir, "loadgen.json")
	maxDur := o.maxDuration
	if name == "contrib" {
		maxDur = min(maxDur, o.contribMaxDuration)
	}
	lg := exec.CommandContext(ctx, cli, "loadgen",
		"--endpoint", grpcAddr, "--protocol", "grpc",
		"--sessions", strconv.FormatInt(o.sessions, 10), "--turns", strconv.Itoa(o.turns),
		"--tools-per-turn", strconv.Itoa(o.tools), "--message-bytes", strconv.Itoa(o.messageBytes),
		"--concurrency", strconv.Itoa(o.concurrency), "--seed", strconv.FormatUint(o.seed, 10),
		"--batch-size", strconv.Itoa(o.batchSize), "--export-timeout", "120s",
		"--duration", maxDur.String(), "--progress", "10s", "--json", lgJSON)
	lg.Stdout, lg.Stderr = os.Stderr, os.Stderr
	lgErr := lg.Run()
	if lg.ProcessState != nil {
		r.LoadgenCPUSeconds = (lg.ProcessState.UserTime() + lg.ProcessState.SystemTime()).Seconds()
	}
	rep, err := readLoadgen(lgJSON)
	if err != nil {
		return r, errors.Join(fmt.Errorf("loadgen: %v", lgErr), err)
	}
	r.SpansSent, r.SpansFailed, r.Sessions, r.Bytes = rep.SpansSent, rep.SpansFailed, rep.Sessions, rep.UncompressedBytes
	r.LoadgenSpansPerSec, r.Latency, r.StoppedBy = rep.SpansPerSec, rep.Latency, rep.StoppedBy
	end := time.Unix(0, rep.EndUnixNano)

	var runErr error
	if lgErr != nil {
		runErr = fmt.Errorf("loadgen: %w", lgErr)
	}
	hotPath := filepath.Join(dataDir, "hot.db")
	if name == "runagain" {
		// wait until the hot tier holds everything acknowledged
		deadline := time.Now().Add(o.drainTimeout)
		var n, last int64
		for {
			n, _, last, err = hotCount(ctx, hotPath, false)
			if (err == nil && n >= r.SpansSent) || time.Now().After(deadline) || ctx.Err() != nil || !c.alive() {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("hot tier %s: %w", hotPath, err))
		}
		if n < r.SpansSent {
			runErr = errors.Join(runErr, fmt.Errorf("hot tier holds %d spans of %d acknowledged after waiting %v", n, r.SpansSent, o.drainTimeout))
		}
		if t := time.Unix(0, last); t.After(end) {
			r.DrainS = t.Sub(end).Seconds()
			end = t
		}
	}
	cpu1, err := cpuSeconds(pid)
	if err != nil {
		return r, err
	}
	rssKB, err := statusKB(pid, "VmHWM")
	if err != nil {
		return r, err
	}
	r.CPUSeconds = cpu1 - cpu0
	r.PeakRSSMB = float64(rssKB) / 1024
	r.SustainedS = end.Sub(time.Unix(0, rep.StartUnixNano)).Seconds()
	if r.SustainedS > 0 {
		r.SpansPerSec = float64(r.SpansSent) / r.SustainedS
		r.MBPerSec = float64(r.Bytes) / 1e6 / r.SustainedS
	}
	if r.SpansSent > 0 {
		r.CPUPer1k = r.CPUSeconds / float64(r.SpansSent) * 1000
	}

	pwg.Wait()
	stopped = true
	if err := c.stop(60 * time.Second); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("stopping the collector: %w", err))
	}
	if name == "runagain" {
		n, ns, _, err := hotCount(ctx, hotPath, true)
		if err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("counting the hot tier: %w", err))
		}
		r.HotSpans, r.HotSessions = n, ns
		ok := err == nil && n == r.SpansSent && r.SpansFailed == 0
		r.ZeroLoss = &ok
		if !ok {
			runErr = errors.Join(runErr, fmt.Errorf("data loss: hot tier holds %d spans, loadgen had %d acknowledged and %d failed", n, r.SpansSent, r.SpansFailed))
		}
		r.StorageHotBytes, r.StorageQueueBytes, r.StorageOtherBytes = dirSizes(dataDir)
		if r.Sessions > 0 {
			r.StorageBytesPerSes = float64(r.StorageHotBytes+r.StorageOtherBytes) / float64(r.Sessions)
		}
	}
	if o.profileSeconds > 0 {
		if profErr != nil {
			runErr = errors.Join(runErr, fmt.Errorf("CPU profile: %w", profErr))
		} else {
			r.Profile = profPath
			r.Components, r.TopFuncs, err = analyzeProfile(profPath)
			if err != nil {
				runErr = errors.Join(runErr, fmt.Errorf("reading the CPU profile: %w", err))
			}
		}
	}
	if o.keep {
		fmt.Fprintln(os.Stderr, "bench: kept", dir)
	}
	return r, runErr
}

func readLoadgen(path string) (*loadgen.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep loadgen.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &rep, nil
}

func machineInfo() machine {
	m := machine{Cores: runtime.NumCPU(), GoVer: runtime.Version()}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
				m.MemoryGB = kb / 1024 / 1024
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(l, "model name"); ok {
				m.CPUModel = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.Load1 = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}
