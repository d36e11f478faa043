// SPDX-License-Identifier: Apache-2.0

// Command bench drives the same agent traffic (runagain loadgen) through collector pipelines,
// one after the other, and reports throughput, CPU, memory and storage per pipeline with the
// ratios of runagain's pipeline (c) to the others:
//
//	baseline        (a) otlp -> batch -> nop
//	contrib         (b) otlp -> contrib redaction (regexes equivalent to internal/redact) -> batch -> nop
//	runagain        (c) config/default.yaml as it is at run time (plus a pprof extension)
//	file            (d) otlp -> batch -> file (contrib file exporter, OTLP protobuf, zstd)
//	jaeger          (e) Jaeger v2 with its Badger store (bin/jaeger, built from bench/jaeger)
//	runagain-minio  (c on S3) (c) with the payload bucket on MinIO behind a counting proxy
//
// (a), (b), (c) run the otelcol-runagain binary; (d) otelcol-bench-file (bench/filecollector);
// (e) the Jaeger binary; runagain-minio needs the minio binary (as the tests find it) and is
// skipped with a note when there is none.
//
// Numbers and where they come from:
//   - spans/s, MB/s: spans acknowledged by the collector (loadgen report) and their protobuf bytes,
//     divided by the sustained time: from loadgen's first span to its last acknowledged export, or,
//     for runagain, to the last span written to the hot tier (max spans.ingested_unix_nano), if later.
//   - CPU s / 1k spans: utime+stime of the collector process (/proc/<pid>/stat) from the start of
//     the load until the process is idle again (see -idle-window): flushes, compaction and queue
//     drains after the last acknowledgement count. cpu_s_window is the old measure (the window).
//   - peak RSS: VmHWM of the collector (/proc/<pid>/status) at the end of the window.
//   - storage bytes per session (runagain only): size of the data directory without the
//     persistent queue, after the collector stopped, divided by the sessions sent.
//   - on disk (c, d, e): allocated blocks (st_blocks × 512, as du counts) of everything the
//     process left in its data directory after it stopped, queue included.
//   - zero loss (runagain: rows in the hot tier's spans table; file: spans decoded from the
//     file; jaeger: its storage exporter's otelcol_exporter_sent_spans_total) == spans acknowledged.
//
// Each row is run -runs times (3) in fresh data directories and shows the medians with min-max
// and the load average of each run; ratios are of medians. Then the growth table (growth.go,
// issue 35): -rounds (10) rounds of the same load into one runagain store, per round and last /
// first, with reads timed after round 1 and the last. -quick shrinks the load (quickDefaults).
//
// Results: <out>/bench.json, <out>/bench.md, CPU profiles <out>/<pipeline>.pprof, and
// BENCHMARKS.md (the latest table with date, machine and command; the run it replaces is
// appended to -history, bench/results/history.md).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/runagain/runagain/internal/loadgen"
	"github.com/runagain/runagain/internal/testutil/miniotest"
)

type options struct {
	bin, config, out, benchmarksMD, command, history string
	pipelines                                        string
	jaegerBin, fileBin                               string
	idle                                             idleRule
	sessions                                         int64
	turns, tools, messageBytes, concurrency          int
	maxDuration, drainTimeout                        time.Duration
	contribMaxDuration                               time.Duration
	batchSize                                        int
	profileSeconds                                   int
	seed                                             uint64
	keep                                             bool
	runs                                             int  // repetitions of each pipeline row
	rounds                                           int  // growth rounds (0: no growth table)
	growthSameSeed                                   bool // every growth round sends the same sessions
	readReps                                         int  // repetitions of each timed read
	quick                                            bool
}

// quickDefaults are the flags -quick changes (unless given explicitly): a smaller load with every
// row, three runs each and the growth table, so the whole bench fits well within 20 minutes on 2
// quiet cores after the build.
var quickDefaults = map[string]string{
	"sessions": "400", "contrib-max-duration": "20s", "profile-seconds": "5", "rounds": "10",
	"idle-timeout": "60s", "read-reps": "3",
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin", "directory with otelcol-runagain and runagain (make build)")
	flag.StringVar(&o.config, "config", "config/default.yaml", "runagain pipeline configuration (c)")
	flag.StringVar(&o.out, "out", "bench/results", "directory for bench.json, bench.md and profiles")
	flag.StringVar(&o.benchmarksMD, "benchmarks-md", "BENCHMARKS.md", "file to write the latest table to ('' to skip)")
	flag.StringVar(&o.command, "command", "make bench", "the command recorded in BENCHMARKS.md")
	flag.StringVar(&o.history, "history", "bench/results/history.md", "file the replaced BENCHMARKS.md run is appended to ('' to drop it)")
	flag.StringVar(&o.pipelines, "pipelines", "baseline,contrib,runagain,file,jaeger,runagain-minio", "pipelines to run, in order (runagain-minio is skipped when no minio binary is found)")
	flag.StringVar(&o.fileBin, "file-collector", "", "collector for pipeline file (default: <bin>/otelcol-bench-file, built by make bench from bench/filecollector)")
	flag.StringVar(&o.jaegerBin, "jaeger", "", "Jaeger v2 binary for pipeline jaeger (default: <bin>/jaeger, built by make bench from bench/jaeger)")
	flag.DurationVar(&o.idle.Window, "idle-window", 3*time.Second, "a process is idle when its CPU time grew by at most -idle-fraction of a core over this window")
	flag.Float64Var(&o.idle.Fraction, "idle-fraction", 0.03, "see -idle-window")
	flag.DurationVar(&o.idle.Timeout, "idle-timeout", 90*time.Second, "longest wait for a process to become idle after the load")
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
	flag.IntVar(&o.runs, "runs", 3, "runs of each pipeline row (the table shows the median with min-max; ratios are of medians)")
	flag.IntVar(&o.rounds, "rounds", 10, "growth table: rounds of the same load into one runagain store (0: none)")
	flag.BoolVar(&o.growthSameSeed, "growth-same-seed", false, "growth table: send the very same sessions every round (default: seed+round-1, new sessions of the same shape)")
	flag.IntVar(&o.readReps, "read-reps", 5, "growth table: runs of each timed read (median)")
	flag.BoolVar(&o.quick, "quick", false, "smaller load, for a bench well within 20 minutes on 2 quiet cores: "+quickSummary())
	flag.Parse()
	if o.quick {
		given := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
		for k, v := range quickDefaults {
			if !given[k] {
				if err := flag.Set(k, v); err != nil {
					fmt.Fprintln(os.Stderr, "bench: -quick:", err)
					os.Exit(2)
				}
			}
		}
	}
	if o.runs < 1 || o.rounds < 0 || o.readReps < 1 {
		fmt.Fprintln(os.Stderr, "bench: -runs and -read-reps must be at least 1, -rounds at least 0")
		os.Exit(2)
	}
	o.idle.Interval = 250 * time.Millisecond

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
	CPUSeconds  float64 `json:"cpu_s"` // from the start of the load until idle
	CPUPer1k    float64 `json:"cpu_s_per_1k_spans"`
	// CPUWindow is the CPU over the sustained window only (the measure before the idle wait).
	CPUWindow float64 `json:"cpu_s_window"`
	// IdleWaitS is how long after the window the process took to become idle (IdleReached false:
	// the -idle-timeout ended the wait).
	IdleWaitS   float64 `json:"idle_wait_s"`
	IdleReached bool    `json:"idle_reached"`
	// CPUToExit is the CPU from the start of the load until the process exited (shutdown
	// flushes included), from the kernel's accounting of the whole process.
	CPUToExit float64 `json:"cpu_s_to_exit,omitempty"`
	PeakRSSMB float64 `json:"peak_rss_mb"`
	// Disk is everything the process left in its data directory after it stopped (c, d, e).
	Disk          *usage  `json:"disk,omitempty"`
	DiskPerSesB   float64 `json:"disk_bytes_per_session,omitempty"`
	StoredSpans   int64   `json:"stored_spans,omitempty"` // hot tier (c) or file (d)
	StoredChecked bool    `json:"stored_checked,omitempty"`
	// S3 is what the payload store asked of MinIO (runagain-minio).
	S3 *s3Counts `json:"s3,omitempty"`
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
	StorageHot         *usage  `json:"storage_hot,omitempty"`
	StorageOther       *usage  `json:"storage_other,omitempty"`
	StorageQueue       *usage  `json:"storage_queue,omitempty"`
	StorageBytesPerSes float64 `json:"storage_bytes_per_session,omitempty"`
	Profile            string  `json:"profile,omitempty"`
	// Components is the CPU profile split by pipeline component (percent of samples).
	Components []componentShare `json:"components,omitempty"`
	TopFuncs   []string         `json:"top_functions,omitempty"`
	Error      string           `json:"error,omitempty"`
	// Runs are the row's single runs when -runs > 1: the row itself holds the median of each
	// number (Spread: min, median, max of the main columns), the rest from the median-CPU run.
	Runs   []*Result             `json:"runs,omitempty"`
	Spread map[string][3]float64 `json:"spread,omitempty"`
	Load   string                `json:"load_average,omitempty"` // at the start of the run; rows: one per run
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
	Skipped    []string           `json:"skipped,omitempty"`
	Idle       string             `json:"idle_rule"`
	Runs       int                `json:"runs_per_row"`
	Growth     *Growth            `json:"growth,omitempty"`
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
	"baseline":       "otlp -> batch -> nop",
	"contrib":        "otlp -> redaction (contrib, equivalent regexes) -> batch -> nop",
	"runagain":       "config/default.yaml",
	"file":           "otlp -> memory_limiter -> batch -> file (contrib file exporter v0.161.0, proto, zstd)",
	"jaeger":         "Jaeger v2 v1.76.0, Badger store, memory_limiter, sending queue of 10 consumers",
	"runagain-minio": "config/default.yaml, payloads on MinIO (S3)",
}

// rowLetters are the rows' names in issue 17 (ratios are c/a, c/b, c/d, c/e).
var rowLetters = map[string]string{"baseline": "a", "contrib": "b", "runagain": "c", "file": "d", "jaeger": "e"}

// isRunagain tells the pipelines that run a runagain configuration (hot tier, zero-loss check).
func isRunagain(name string) bool { return name == "runagain" || name == "runagain-minio" }

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
	if o.jaegerBin == "" {
		o.jaegerBin = filepath.Join(bin, "jaeger")
	}
	if o.fileBin == "" {
		o.fileBin = filepath.Join(bin, "otelcol-bench-file")
	}
	// absolute, like bin: the processes run in their own working directories
	for _, p := range []*string{&o.jaegerBin, &o.fileBin} {
		if *p, err = filepath.Abs(*p); err != nil {
			return nil, err
		}
	}
	var names []string
	for _, name := range strings.Split(o.pipelines, ",") {
		name = strings.TrimSpace(name)
		if _, ok := descriptions[name]; !ok {
			return nil, fmt.Errorf("-pipelines: unknown pipeline %q (want one of baseline, contrib, runagain, file, jaeger, runagain-minio)", name)
		}
		names = append(names, name)
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
		Runs:   o.runs,
		Idle: fmt.Sprintf("CPU grew by at most %.0f%% of one core over %v, sampled every %v, waited at most %v",
			100*o.idle.Fraction, o.idle.Window, o.idle.Interval, o.idle.Timeout),
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
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		if name == "runagain-minio" {
			if _, err := miniotest.Binary(); err != nil {
				res.Skipped = append(res.Skipped, fmt.Sprintf("runagain-minio: %v", err))
				fmt.Fprintf(os.Stderr, "bench: skipping runagain-minio: %v\n", err)
				continue
			}
		}
		var runs []*Result
		for k := 1; k <= o.runs && ctx.Err() == nil; k++ {
			load := loadAverage()
			fmt.Fprintf(os.Stderr, "bench: %s (%s), run %d of %d, load average %s\n", name, descriptions[name], k, o.runs, load)
			r, err := runPipeline(ctx, o, name, col, cli, filepath.Join(work, fmt.Sprintf("%s-%d", name, k)))
			r.Load = load
			if err != nil {
				r.Error = err.Error()
				errs = append(errs, fmt.Errorf("%s run %d: %w", name, k, err))
			}
			runs = append(runs, r)
			fmt.Fprintf(os.Stderr, "bench: %s: %.0f spans/s, %.2f MB/s, %.3f CPU s/1k spans (idle after %.1f s), peak RSS %.0f MB\n",
				name, r.SpansPerSec, r.MBPerSec, r.CPUPer1k, r.IdleWaitS, r.PeakRSSMB)
		}
		if len(runs) > 0 {
			res.Pipelines = append(res.Pipelines, medianRow(runs))
		}
	}
	if o.rounds > 0 && ctx.Err() == nil && strings.Contains(","+o.pipelines+",", ",runagain,") {
		fmt.Fprintf(os.Stderr, "bench: growth table: %d rounds into one store\n", o.rounds)
		g, err := runGrowth(ctx, o, col, cli, filepath.Join(work, "growth"))
		if err != nil {
			g.Error = err.Error()
			errs = append(errs, fmt.Errorf("growth: %w", err))
		}
		g.Ratios = growthRatios(g.Rounds)
		res.Growth = g
	}
	res.Ratios = ratios(res.Pipelines)
	res.DurationS = time.Since(t0).Seconds()
	res.Machine.LoadEnd = machineInfo().Load1
	return res, errors.Join(errs...)
}

// ratios are runagain's row (c) over each other row: c/a, c/b, c/d, c/e for spans/s, CPU per
// span and peak RSS; c/d and c/e also for bytes on disk.
func ratios(rows []*Result) map[string]float64 {
	out := map[string]float64{}
	by := map[string]*Result{}
	for _, r := range rows {
		by[r.Pipeline] = r
	}
	c := by["runagain"]
	if c == nil || c.SpansPerSec <= 0 {
		return out
	}
	for _, other := range []string{"baseline", "contrib", "file", "jaeger"} {
		r := by[other]
		if r == nil || r.SpansPerSec <= 0 {
			continue
		}
		k := "c/" + rowLetters[other]
		out[k+" spans_per_s"] = c.SpansPerSec / r.SpansPerSec
		if r.CPUPer1k > 0 {
			out[k+" cpu_per_span"] = c.CPUPer1k / r.CPUPer1k
		}
		if r.PeakRSSMB > 0 {
			out[k+" peak_rss"] = c.PeakRSSMB / r.PeakRSSMB
		}
		if c.Disk != nil && r.Disk != nil && r.Disk.Disk > 0 && c.Sessions > 0 && r.Sessions > 0 {
			// per session: a row cut short by its duration cap got fewer sessions
			out[k+" disk_per_session"] = c.DiskPerSesB / r.DiskPerSesB
		}
	}
	return out
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
	bin := col
	var proxy *countingProxy
	var minio *minioServer
	switch name {
	case "baseline":
		cfg = plainConfig(p, false)
	case "contrib":
		cfg = plainConfig(p, true)
	case "file":
		bin = o.fileBin
		if _, err := os.Stat(bin); err != nil {
			return r, fmt.Errorf("%s: %w (make bench builds it from bench/filecollector)", bin, err)
		}
		cfg = fileConfig(p, dataDir)
	case "jaeger":
		bin = o.jaegerBin
		if _, err := os.Stat(bin); err != nil {
			return r, fmt.Errorf("%s: %w (make bench builds it from bench/jaeger)", bin, err)
		}
		if cfg, err = jaegerConfig(p, dataDir, freePort); err != nil {
			return r, err
		}
	case "runagain", "runagain-minio":
		if cfg, extraEnv, err = runagainConfig(o.config, p, freePort); err != nil {
			return r, err
		}
		if name == "runagain-minio" {
			if minio, err = startMinio(ctx, dir); err != nil {
				return r, err
			}
			defer minio.stop()
			if proxy, err = startCountingProxy(minio.endpoint); err != nil {
				return r, err
			}
			defer proxy.close()
			if err := setPayloadURL(cfg, s3URL(proxy.addr, "payloads/")); err != nil {
				return r, fmt.Errorf("%s: %w", o.config, err)
			}
			extraEnv = append(extraEnv, s3Env(dir)...)
		}
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := writeYAML(cfgPath, cfg); err != nil {
		return r, err
	}
	c, err := startCollector(bin, cfgPath, dir, append(p.env(dataDir), extraEnv...))
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

	maxDur := o.maxDuration
	if name == "contrib" {
		maxDur = min(maxDur, o.contribMaxDuration)
	}
	rep, lgCPU, lgErr := runLoadgen(ctx, o, cli, grpcAddr, dir, o.seed, maxDur)
	r.LoadgenCPUSeconds = lgCPU
	if rep == nil {
		return r, fmt.Errorf("loadgen: %w", lgErr)
	}
	r.SpansSent, r.SpansFailed, r.Sessions, r.Bytes = rep.SpansSent, rep.SpansFailed, rep.Sessions, rep.UncompressedBytes
	r.LoadgenSpansPerSec, r.Latency, r.StoppedBy = rep.SpansPerSec, rep.Latency, rep.StoppedBy
	end := time.Unix(0, rep.EndUnixNano)

	var runErr error
	if lgErr != nil {
		runErr = fmt.Errorf("loadgen: %w", lgErr)
	}
	hotPath := filepath.Join(dataDir, "hot.db")
	if isRunagain(name) {
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
	r.CPUWindow = cpu1 - cpu0
	// CPU until idle: what the process still does after acknowledging (flushes, compaction)
	cpuIdle, waited, idle, err := cpuUntilIdle(ctx, pid, o.idle)
	if err != nil {
		return r, errors.Join(runErr, err)
	}
	r.CPUSeconds, r.IdleWaitS, r.IdleReached = cpuIdle-cpu0, waited.Seconds(), idle
	if o.profileSeconds > 0 {
		// heap profile after the CPU is measured (the dump costs the process CPU): its
		// alloc_space covers the whole run (go tool pprof -sample_index=alloc_space FILE)
		heapPath := filepath.Join(o.out, name+".heap.pprof")
		if err := fetchPprof(ctx, fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap", p.pprof), heapPath); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: heap profile: %v\n", name, err)
		}
	}
	var jaegerSent int64
	var jaegerErr error
	if name == "jaeger" {
		jaegerSent, jaegerErr = exporterSentSpans(ctx, fmt.Sprintf("127.0.0.1:%d", p.telemetry), "jaeger_storage_exporter")
	}
	rssKB, err := statusKB(pid, "VmHWM")
	if err != nil {
		return r, err
	}
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
	if ps := c.cmd.ProcessState; ps != nil {
		r.CPUToExit = (ps.UserTime() + ps.SystemTime()).Seconds() - cpu0
	}
	if proxy != nil {
		// the collector is gone: every request it made has been counted
		cnt := proxy.counts()
		cnt.BucketDisk = dirUsage(minio.dir)
		r.S3 = &cnt
	}
	switch {
	case isRunagain(name):
		n, ns, _, err := hotCount(ctx, hotPath, true)
		if err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("counting the hot tier: %w", err))
		}
		r.HotSpans, r.HotSessions = n, ns
		r.StoredSpans, r.StoredChecked = n, err == nil
		ok := err == nil && n == r.SpansSent && r.SpansFailed == 0
		r.ZeroLoss = &ok
		if !ok {
			runErr = errors.Join(runErr, fmt.Errorf("data loss: hot tier holds %d spans, loadgen had %d acknowledged and %d failed", n, r.SpansSent, r.SpansFailed))
		}
		hot, queue, other := dirSizes(dataDir)
		r.StorageHot, r.StorageQueue, r.StorageOther = &hot, &queue, &other
		r.StorageHotBytes, r.StorageQueueBytes, r.StorageOtherBytes = hot.Apparent, queue.Apparent, other.Apparent
		if r.Sessions > 0 {
			r.StorageBytesPerSes = float64(r.StorageHotBytes+r.StorageOtherBytes) / float64(r.Sessions)
		}
		all := hot.plus(queue).plus(other)
		if r.S3 != nil {
			all = all.plus(r.S3.BucketDisk) // the payloads live in MinIO's data directory
		}
		r.Disk = &all
	case name == "file":
		n, ns, err := countFileSpans(filepath.Join(dataDir, fileSpansName))
		if err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("reading the file exporter's output: %w", err))
		}
		r.StoredSpans, r.HotSessions, r.StoredChecked = n, ns, err == nil
		ok := err == nil && n == r.SpansSent && r.SpansFailed == 0
		r.ZeroLoss = &ok
		if !ok {
			runErr = errors.Join(runErr, fmt.Errorf("data loss: the file holds %d spans, loadgen had %d acknowledged and %d failed", n, r.SpansSent, r.SpansFailed))
		}
		u := dirUsage(dataDir)
		r.Disk = &u
	case name == "jaeger":
		if jaegerErr != nil {
			runErr = errors.Join(runErr, fmt.Errorf("jaeger's exporter metrics: %w", jaegerErr))
		}
		r.StoredSpans, r.StoredChecked = jaegerSent, jaegerErr == nil
		ok := jaegerErr == nil && jaegerSent == r.SpansSent && r.SpansFailed == 0
		r.ZeroLoss = &ok
		if !ok {
			runErr = errors.Join(runErr, fmt.Errorf("data loss: jaeger's storage exporter wrote %d spans, loadgen had %d acknowledged and %d failed", jaegerSent, r.SpansSent, r.SpansFailed))
		}
		u := dirUsage(dataDir)
		r.Disk = &u
	}
	if r.Disk != nil && r.Sessions > 0 {
		r.DiskPerSesB = float64(r.Disk.Disk) / float64(r.Sessions)
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
