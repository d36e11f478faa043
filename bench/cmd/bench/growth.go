// SPDX-License-Identifier: Apache-2.0

package main

// The growth table (issue 35): the same load sent -rounds times, one round after the other, into
// one runagain collector and one data directory, so every round writes into a store that holds
// all earlier rounds. What grows with the store shows up as a rising column.
//
// Per round: CPU s per 1,000 spans (utime+stime from the round's first span until the process is
// idle again, the same rule as the main table), spans/s (acknowledged spans over the sustained
// window, to the last span in the hot tier), loadgen's p99 export latency, the collector's RSS
// (VmRSS now) and peak RSS (VmHWM so far), the live Go heap (inuse_space of a heap profile taken
// after a forced collection: /debug/pprof/heap?gc=1), the hot tier's spans, and the data
// directory's allocated bytes per session stored so far. Reads (runagain sessions --limit 20,
// sessions --since 2h, show, the UI's sessions page and its filters) are timed as processes
// against the store after round 1 and after the last round, median of -read-reps, with the
// process's peak RSS. CPU profiles of round 1 and the last round are kept side by side.
//
// Each round draws new sessions (loadgen --seed SEED+round-1: the same shape and sizes, other
// conversation ids and text), so the store grows like a gateway's over a week; -growth-same-seed
// sends the very same sessions every round instead (issue 35's own series: the same sessions get
// more runs, and payloads deduplicate).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/pprof/profile"

	"github.com/runagain/runagain/internal/loadgen"
)

// Round is one round of the growth table.
type Round struct {
	Round       int     `json:"round"`
	Seed        uint64  `json:"seed"`
	SpansSent   int64   `json:"spans_sent"`
	SpansFailed int64   `json:"spans_failed"`
	SpansPerSec float64 `json:"spans_per_s"`
	CPUSeconds  float64 `json:"cpu_s"`
	CPUPer1k    float64 `json:"cpu_s_per_1k_spans"`
	IdleReached bool    `json:"idle_reached"`
	P99ms       float64 `json:"export_p99_ms"`
	RSSMB       float64 `json:"rss_mb"`
	PeakRSSMB   float64 `json:"peak_rss_mb"`
	LiveHeapMB  float64 `json:"live_heap_mb"`
	HotSpans    int64   `json:"hot_spans"`
	Sessions    int64   `json:"sessions_stored"`
	DiskBytes   int64   `json:"disk_bytes"`
	DiskPerSes  float64 `json:"disk_bytes_per_session"`
	// AddedPerSes is the bytes the data directory grew by in this round over the sessions the
	// round sent: what one more session costs (DiskPerSes also spreads over the sessions the
	// files the first round creates, such as the WALs, which a growing store pays once).
	AddedPerSes float64 `json:"disk_bytes_added_per_session"`
	Load        string  `json:"load_average"`
	Reads       []Read  `json:"reads,omitempty"`
	Profile     string  `json:"profile,omitempty"`
	// Components is the round's CPU profile split by pipeline component (rounds with a profile).
	Components []componentShare `json:"components,omitempty"`
}

// Read is one read timed against the store after a round.
type Read struct {
	Name      string  `json:"name"`
	MedianMS  float64 `json:"median_ms"`
	MinMS     float64 `json:"min_ms"`
	MaxMS     float64 `json:"max_ms"`
	PeakRSSMB float64 `json:"peak_rss_mb"`
	Rows      int     `json:"rows,omitempty"` // lines printed / rows on the page (a sanity check)
	Error     string  `json:"error,omitempty"`
}

// Growth is the whole growth table.
type Growth struct {
	Rounds   []*Round           `json:"rounds"`
	Ratios   map[string]float64 `json:"ratios"` // last round / first round
	SameSeed bool               `json:"same_seed"`
	Error    string             `json:"error,omitempty"`
}

// growthRatios are last/first for the columns the goals name.
func growthRatios(rounds []*Round) map[string]float64 {
	out := map[string]float64{}
	if len(rounds) < 2 {
		return out
	}
	f, l := rounds[0], rounds[len(rounds)-1]
	div := func(k string, a, b float64) {
		if b > 0 {
			out[k] = a / b
		}
	}
	div("cpu_per_span", l.CPUPer1k, f.CPUPer1k)
	div("spans_per_s", l.SpansPerSec, f.SpansPerSec)
	div("p99_export", l.P99ms, f.P99ms)
	div("rss", l.RSSMB, f.RSSMB)
	div("live_heap", l.LiveHeapMB, f.LiveHeapMB)
	div("disk_per_session", l.DiskPerSes, f.DiskPerSes)
	if len(rounds) >= 3 {
		// from round 2 (see Round.AddedPerSes), means of the first and the last third of the
		// rounds after it: one round's figure swings with the granularity at which the files
		// and packs grow (53-99 KB per session between rounds of one run)
		e, l := addedWindows(len(rounds))
		div("added_per_session", meanAdded(rounds[l[0]:l[1]]), meanAdded(rounds[e[0]:e[1]]))
	}
	byName := map[string]Read{}
	for _, r := range f.Reads {
		byName[r.Name] = r
	}
	for _, r := range l.Reads {
		if r0, ok := byName[r.Name]; ok && r.Error == "" && r0.Error == "" {
			div("read "+r.Name, r.MedianMS, r0.MedianMS)
		}
	}
	return out
}

// addedWindows returns the rounds (as [from, to) indexes) whose bytes added per session are
// compared: the first and the last k of the rounds after round 1, k a third of them (at least 1).
func addedWindows(n int) (early, late [2]int) {
	k := max(1, (n-1)/3)
	return [2]int{1, 1 + k}, [2]int{n - k, n}
}

// meanAdded is the mean of the rounds' bytes added per session.
func meanAdded(rs []*Round) float64 {
	if len(rs) == 0 {
		return 0
	}
	s := 0.0
	for _, r := range rs {
		s += r.AddedPerSes
	}
	return s / float64(len(rs))
}

func runGrowth(ctx context.Context, o *options, col, cli, dir string) (*Growth, error) {
	g := &Growth{SameSeed: o.growthSameSeed}
	dataDir := filepath.Join(dir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return g, err
	}
	p, err := freePorts()
	if err != nil {
		return g, err
	}
	cfg, extraEnv, err := runagainConfig(o.config, p, freePort)
	if err != nil {
		return g, err
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := writeYAML(cfgPath, cfg); err != nil {
		return g, err
	}
	c, err := startCollector(col, cfgPath, dir, append(p.env(dataDir), extraEnv...))
	if err != nil {
		return g, err
	}
	defer func() { _ = c.stop(60 * time.Second) }()
	grpcAddr := fmt.Sprintf("127.0.0.1:%d", p.grpc)
	pprofAddr := fmt.Sprintf("127.0.0.1:%d", p.pprof)
	if err := c.waitReady(grpcAddr, 60*time.Second); err != nil {
		return g, err
	}
	time.Sleep(time.Second)
	pid := c.cmd.Process.Pid
	hotPath := filepath.Join(dataDir, "hot.db")
	var sentSoFar, sessionsSoFar int64
	var lastTrace string
	prevDisk := dirUsage(dataDir).Disk // the files the collector created at start
	for i := 1; i <= o.rounds && ctx.Err() == nil; i++ {
		r := &Round{Round: i, Seed: o.seed, Load: loadAverage()}
		if !o.growthSameSeed {
			r.Seed = o.seed + uint64(i-1)
		}
		g.Rounds = append(g.Rounds, r)
		cpu0, err := cpuSeconds(pid)
		if err != nil {
			return g, err
		}
		profiled := o.profileSeconds > 0 && (i == 1 || i == o.rounds)
		profDone := make(chan error, 1)
		profPath := filepath.Join(o.out, fmt.Sprintf("growth-round%d.pprof", i))
		if profiled {
			go func() {
				time.Sleep(300 * time.Millisecond)
				profDone <- fetchProfile(ctx, pprofAddr, o.profileSeconds, profPath)
			}()
		}
		rep, _, lgErr := runLoadgen(ctx, o, cli, grpcAddr, dir, r.Seed, o.maxDuration)
		if rep == nil {
			return g, fmt.Errorf("round %d: loadgen: %w", i, lgErr)
		}
		r.SpansSent, r.SpansFailed, r.P99ms = rep.SpansSent, rep.SpansFailed, rep.Latency.P99
		sentSoFar += rep.SpansSent
		if !o.growthSameSeed || i == 1 {
			sessionsSoFar += rep.Sessions
		}
		end := time.Unix(0, rep.EndUnixNano)
		deadline := time.Now().Add(o.drainTimeout)
		var n, last int64
		for {
			n, _, last, err = hotCount(ctx, hotPath, false)
			if (err == nil && n >= sentSoFar) || time.Now().After(deadline) || ctx.Err() != nil || !c.alive() {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if t := time.Unix(0, last); t.After(end) {
			end = t
		}
		r.HotSpans = n
		cpuIdle, _, idle, err := cpuUntilIdle(ctx, pid, o.idle)
		if err != nil {
			return g, err
		}
		r.CPUSeconds, r.IdleReached = cpuIdle-cpu0, idle
		if rep.SpansSent > 0 {
			r.CPUPer1k = r.CPUSeconds / float64(rep.SpansSent) * 1000
		}
		if s := end.Sub(time.Unix(0, rep.StartUnixNano)).Seconds(); s > 0 {
			r.SpansPerSec = float64(rep.SpansSent) / s
		}
		if profiled {
			if err := <-profDone; err == nil {
				r.Profile = profPath
				r.Components, _, _ = analyzeProfile(profPath)
			} else {
				fmt.Fprintf(os.Stderr, "bench: growth round %d: CPU profile: %v\n", i, err)
			}
		}
		// measured after the CPU: the forced collection and the dump cost the process CPU
		heapPath := ""
		if i == 1 || i == o.rounds {
			heapPath = filepath.Join(o.out, fmt.Sprintf("growth-round%d.heap.pprof", i))
		}
		if mb, err := liveHeapMB(ctx, pprofAddr, heapPath); err == nil {
			r.LiveHeapMB = mb
		} else {
			fmt.Fprintf(os.Stderr, "bench: growth round %d: heap: %v\n", i, err)
		}
		if kb, err := statusKB(pid, "VmRSS"); err == nil {
			r.RSSMB = float64(kb) / 1024
		}
		if kb, err := statusKB(pid, "VmHWM"); err == nil {
			r.PeakRSSMB = float64(kb) / 1024
		}
		u := dirUsage(dataDir)
		r.DiskBytes, r.Sessions = u.Disk, sessionsSoFar
		if sessionsSoFar > 0 {
			r.DiskPerSes = float64(u.Disk) / float64(sessionsSoFar)
		}
		if rep.Sessions > 0 {
			r.AddedPerSes = float64(u.Disk-prevDisk) / float64(rep.Sessions)
		}
		prevDisk = u.Disk
		var runErr error
		if lgErr != nil {
			runErr = fmt.Errorf("loadgen: %w", lgErr)
		}
		if n < sentSoFar || rep.SpansFailed > 0 {
			runErr = errors.Join(runErr, fmt.Errorf("data loss: hot tier holds %d spans after %d acknowledged (%d failed this round)", n, sentSoFar, rep.SpansFailed))
		}
		if i == 1 || i == o.rounds {
			if lastTrace == "" || i == o.rounds {
				lastTrace = newestTrace(ctx, cli, dataDir)
			}
			r.Reads = timeReads(ctx, o, cli, dataDir, lastTrace)
		}
		fmt.Fprintf(os.Stderr, "bench: growth round %d/%d: %.0f spans/s, %.3f CPU s/1k spans, p99 %.0f ms, RSS %.0f MB, live heap %.0f MB, %.0f bytes/session, load %s\n",
			i, o.rounds, r.SpansPerSec, r.CPUPer1k, r.P99ms, r.RSSMB, r.LiveHeapMB, r.DiskPerSes, r.Load)
		if runErr != nil {
			return g, fmt.Errorf("round %d: %w", i, runErr)
		}
	}
	return g, ctx.Err()
}

// runLoadgen runs `runagain loadgen` once with o's load against grpcAddr and reads its report.
func runLoadgen(ctx context.Context, o *options, cli, grpcAddr, dir string, seed uint64, maxDur time.Duration) (*loadgen.Report, float64, error) {
	lgJSON := filepath.Join(dir, "loadgen.json")
	_ = os.Remove(lgJSON)
	lg := exec.CommandContext(ctx, cli, "loadgen",
		"--endpoint", grpcAddr, "--protocol", "grpc",
		"--sessions", strconv.FormatInt(o.sessions, 10), "--turns", strconv.Itoa(o.turns),
		"--tools-per-turn", strconv.Itoa(o.tools), "--message-bytes", strconv.Itoa(o.messageBytes),
		"--concurrency", strconv.Itoa(o.concurrency), "--seed", strconv.FormatUint(seed, 10),
		"--batch-size", strconv.Itoa(o.batchSize), "--export-timeout", "120s",
		"--duration", maxDur.String(), "--progress", "10s", "--json", lgJSON)
	lg.Stdout, lg.Stderr = os.Stderr, os.Stderr
	lgErr := lg.Run()
	var cpu float64
	if lg.ProcessState != nil {
		cpu = (lg.ProcessState.UserTime() + lg.ProcessState.SystemTime()).Seconds()
	}
	rep, err := readLoadgen(lgJSON)
	if err != nil {
		return nil, cpu, errors.Join(lgErr, err)
	}
	return rep, cpu, lgErr
}

// liveHeapMB is the collector's live heap: the in-use bytes of a heap profile taken right after
// a forced garbage collection (net/http/pprof's ?gc=1). With keep, the profile is saved there
// too (go tool pprof -sample_index=inuse_space -diff_base ROUND1 ROUNDN).
func liveHeapMB(ctx context.Context, addr, keep string) (float64, error) {
	path := keep
	if path == "" {
		f, err := os.CreateTemp("", "runagain-bench-heap-")
		if err != nil {
			return 0, err
		}
		path = f.Name()
		f.Close()
		defer os.Remove(path)
	}
	if err := fetchPprof(ctx, "http://"+addr+"/debug/pprof/heap?gc=1", path); err != nil {
		return 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return inuseMB(f)
}

// inuseMB sums the inuse_space samples of a heap profile, in MB (10^6 bytes).
func inuseMB(r io.Reader) (float64, error) {
	p, err := profile.Parse(r)
	if err != nil {
		return 0, err
	}
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "inuse_space" {
			idx = i
		}
	}
	if idx < 0 {
		return 0, errors.New("heap profile has no inuse_space")
	}
	var sum int64
	for _, s := range p.Sample {
		sum += s.Value[idx]
	}
	return float64(sum) / 1e6, nil
}

// newestTrace is the trace id of the newest run (`runagain sessions --limit 1 --json`).
func newestTrace(ctx context.Context, cli, dataDir string) string {
	out, err := exec.CommandContext(ctx, cli, "--data-dir", dataDir, "sessions", "--limit", "1", "--json").Output()
	if err != nil {
		return ""
	}
	const key = `"trace_id":`
	s := string(out)
	i := strings.Index(s, key)
	if i < 0 {
		return ""
	}
	s = strings.TrimLeft(s[i+len(key):], " \"")
	if j := strings.IndexByte(s, '"'); j > 0 {
		return s[:j]
	}
	return ""
}

// uiFilters are the sessions-page queries the growth table times: the plain page and every
// filter of the page (internal/ui SessionsFilter).
var uiFilters = []string{"/", "/?errors=1", "/?alerts=1", "/?model=gpt", "/?agent=support", "/?since=2h", "/?cost_min=0.01", "/?q=refund", "/?sort=cost"}

// timeReads times the reads of the growth table against dataDir: CLI commands as processes
// (wall time, peak RSS from the kernel's rusage) and UI pages through one `runagain ui`.
func timeReads(ctx context.Context, o *options, cli, dataDir, trace string) []Read {
	var out []Read
	cmds := [][]string{{"sessions", "--limit", "20"}, {"sessions", "--since", "2h"}}
	if trace != "" {
		cmds = append(cmds, []string{"show", trace})
	}
	for _, args := range cmds {
		rd := Read{Name: "runagain " + strings.Join(args, " ")}
		if args[0] == "show" {
			rd.Name = "runagain show (newest run)"
		}
		var ds []float64
		for k := 0; k < o.readReps; k++ {
			cmd := exec.CommandContext(ctx, cli, append([]string{"--data-dir", dataDir}, args...)...)
			var lines countWriter
			cmd.Stdout = &lines
			t0 := time.Now()
			err := cmd.Run()
			ds = append(ds, float64(time.Since(t0).Microseconds())/1000)
			if err != nil {
				rd.Error = err.Error()
				break
			}
			rd.Rows = lines.n
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				rd.PeakRSSMB = max(rd.PeakRSSMB, float64(ru.Maxrss)/1024)
			}
		}
		rd.MedianMS, rd.MinMS, rd.MaxMS = spread(ds)
		out = append(out, rd)
	}
	return append(out, timeUI(ctx, o, cli, dataDir)...)
}

func timeUI(ctx context.Context, o *options, cli, dataDir string) []Read {
	port, err := freePort()
	if err != nil {
		return []Read{{Name: "ui", Error: err.Error()}}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ui := exec.CommandContext(ctx, cli, "--data-dir", dataDir, "ui", "--listen", addr)
	ui.Stdout, ui.Stderr = io.Discard, io.Discard
	if err := ui.Start(); err != nil {
		return []Read{{Name: "ui", Error: err.Error()}}
	}
	defer func() { _ = ui.Process.Signal(syscall.SIGTERM); _ = ui.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			return []Read{{Name: "ui", Error: "runagain ui did not listen within 30s"}}
		}
		time.Sleep(100 * time.Millisecond)
	}
	var out []Read
	for _, q := range uiFilters {
		rd := Read{Name: "ui " + q}
		var ds []float64
		for k := 0; k < o.readReps; k++ {
			t0 := time.Now()
			n, err := getCount(ctx, "http://"+addr+q)
			ds = append(ds, float64(time.Since(t0).Microseconds())/1000)
			if err != nil {
				rd.Error = err.Error()
				break
			}
			rd.Rows = n
		}
		rd.MedianMS, rd.MinMS, rd.MaxMS = spread(ds)
		if kb, err := statusKB(ui.Process.Pid, "VmHWM"); err == nil {
			rd.PeakRSSMB = float64(kb) / 1024 // the UI process's peak so far
		}
		out = append(out, rd)
	}
	return out
}

// getCount GETs url and returns the number of table rows (<tr) on the page.
func getCount(ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return strings.Count(string(b), "<tr"), nil
}

// countWriter counts the lines written to it.
type countWriter struct{ n int }

func (w *countWriter) Write(p []byte) (int, error) {
	for _, c := range p {
		if c == '\n' {
			w.n++
		}
	}
	return len(p), nil
}

// spread is the median, minimum and maximum of xs (zeros for none).
func spread(xs []float64) (med, lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}

// loadAverage is /proc/loadavg's three load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// quickSummary says what -quick sets, for the flag's help.
func quickSummary() string {
	keys := make([]string, 0, len(quickDefaults))
	for k := range quickDefaults {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = "-" + k + " " + quickDefaults[k]
	}
	return strings.Join(parts, " ")
}

// medianRow folds a row's runs into one: each number is the median of the runs (Spread keeps
// min, median and max of the main columns); everything else (profile, storage detail, zero
// loss) comes from the run whose CPU per span is the median. A run that failed still counts
// (its error is kept), and zero loss holds only if it held in every run.
func medianRow(runs []*Result) *Result {
	if len(runs) == 1 {
		return runs[0]
	}
	byCPU := append([]*Result(nil), runs...)
	sort.SliceStable(byCPU, func(i, j int) bool { return byCPU[i].CPUPer1k < byCPU[j].CPUPer1k })
	row := *byCPU[(len(byCPU)-1)/2]
	row.Runs = runs
	row.Spread = map[string][3]float64{}
	col := func(name string, get func(*Result) float64, set func(float64)) {
		xs := make([]float64, len(runs))
		for i, r := range runs {
			xs[i] = get(r)
		}
		med, lo, hi := spread(xs)
		set(med)
		row.Spread[name] = [3]float64{lo, med, hi}
	}
	col("spans_per_s", func(r *Result) float64 { return r.SpansPerSec }, func(v float64) { row.SpansPerSec = v })
	col("mb_per_s", func(r *Result) float64 { return r.MBPerSec }, func(v float64) { row.MBPerSec = v })
	col("cpu_s_per_1k_spans", func(r *Result) float64 { return r.CPUPer1k }, func(v float64) { row.CPUPer1k = v })
	col("cpu_s_to_exit", func(r *Result) float64 { return r.CPUToExit }, func(v float64) { row.CPUToExit = v })
	col("idle_wait_s", func(r *Result) float64 { return r.IdleWaitS }, func(v float64) { row.IdleWaitS = v })
	col("peak_rss_mb", func(r *Result) float64 { return r.PeakRSSMB }, func(v float64) { row.PeakRSSMB = v })
	col("disk_bytes_per_session", func(r *Result) float64 { return r.DiskPerSesB }, func(v float64) { row.DiskPerSesB = v })
	col("export_p50_ms", func(r *Result) float64 { return r.Latency.P50 }, func(v float64) { row.Latency.P50 = v })
	col("export_p99_ms", func(r *Result) float64 { return r.Latency.P99 }, func(v float64) { row.Latency.P99 = v })
	col("loadgen_cpu_s", func(r *Result) float64 { return r.LoadgenCPUSeconds }, func(v float64) { row.LoadgenCPUSeconds = v })
	var loads, errs []string
	for i, r := range runs {
		loads = append(loads, r.Load)
		if r.Error != "" {
			errs = append(errs, fmt.Sprintf("run %d: %s", i+1, r.Error))
		}
		if r.ZeroLoss != nil && !*r.ZeroLoss {
			f := false
			row.ZeroLoss = &f
		}
		row.IdleReached = row.IdleReached && r.IdleReached
	}
	row.Load = strings.Join(loads, "; ")
	row.Error = strings.Join(errs, "; ")
	return &row
}

// withSpread formats v, followed by "(min–max)" when the row has a spread for key.
func withSpread(r *Result, key, format string, v float64) string {
	out := fmt.Sprintf(format, v)
	if sp, ok := r.Spread[key]; ok && sp[0] != sp[2] {
		out += " (" + fmt.Sprintf(format, sp[0]) + "–" + fmt.Sprintf(format, sp[2]) + ")"
	}
	return out
}

func dash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// Issue 35's goals for the growth table, last round against the first.
const (
	growthCPUTolerance  = 0.10 // CPU per span and spans/s within 10%
	growthFlatTolerance = 0.10 // live heap and bytes per session "flat": within 10%
)

// growthTable is the Markdown of the growth table: one row per round, the ratio row last/first,
// the reads after round 1 and the last round, and the verdicts against issue 35's goals.
func growthTable(g *Growth) string {
	var sb strings.Builder
	if len(g.Rounds) == 0 {
		if g.Error != "" {
			return "**Growth table failed:** " + g.Error + "\n\n"
		}
		return ""
	}
	seeds := "a new seed each round (new sessions of the same shape)"
	if g.SameSeed {
		seeds = "the same seed every round (the same sessions again)"
	}
	fmt.Fprintf(&sb, "**Growth: the same load %d times into one collector and one data directory** (%s):\n\n", len(g.Rounds), seeds)
	sb.WriteString("| round | spans in store | spans/s | CPU s / 1k spans (to idle) | export p99 ms | RSS MB (peak) | live heap MB | on disk bytes / session | bytes added / session sent | load average |\n")
	sb.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range g.Rounds {
		cpu := fmt.Sprintf("%.3f", r.CPUPer1k)
		if !r.IdleReached {
			cpu += " (not idle)"
		}
		fmt.Fprintf(&sb, "| %d | %d | %.0f | %s | %.0f | %.0f (%.0f) | %.1f | %.0f | %.0f | %s |\n",
			r.Round, r.HotSpans, r.SpansPerSec, cpu, r.P99ms, r.RSSMB, r.PeakRSSMB, r.LiveHeapMB, r.DiskPerSes, r.AddedPerSes, r.Load)
	}
	rt := g.Ratios
	fmt.Fprintf(&sb, "| last / first | | %s | %s | %s | %s | %s | %s | %s (means: the verdicts below) | |\n\n",
		ratioCell(rt, "spans_per_s"), ratioCell(rt, "cpu_per_span"), ratioCell(rt, "p99_export"), ratioCell(rt, "rss"),
		ratioCell(rt, "live_heap"), ratioCell(rt, "disk_per_session"), ratioCell(rt, "added_per_session"))

	first, last := g.Rounds[0], g.Rounds[len(g.Rounds)-1]
	if len(first.Reads) > 0 && len(last.Reads) > 0 && first != last {
		fmt.Fprintf(&sb, "Reads against the store after round 1 (%d spans) and round %d (%d spans), median of the repetitions (min–max), with the process's peak RSS:\n\n",
			first.HotSpans, last.Round, last.HotSpans)
		sb.WriteString("| read | after round 1 ms | after last round ms | last / first | peak RSS MB (last) | rows (last) |\n|---|---:|---:|---:|---:|---:|\n")
		by := map[string]Read{}
		for _, r := range first.Reads {
			by[r.Name] = r
		}
		for _, r := range last.Reads {
			r0 := by[r.Name]
			cell := func(x Read) string {
				if x.Error != "" {
					return "error: " + x.Error
				}
				return fmt.Sprintf("%.0f (%.0f–%.0f)", x.MedianMS, x.MinMS, x.MaxMS)
			}
			fmt.Fprintf(&sb, "| `%s` | %s | %s | %s | %.0f | %d |\n", r.Name, cell(r0), cell(r), ratioCell(rt, "read "+r.Name), r.PeakRSSMB, r.Rows)
		}
		sb.WriteString("\n")
	}
	if len(first.Components) > 0 && len(last.Components) > 0 && first != last {
		fmt.Fprintf(&sb, "CPU profiles of round 1 and round %d side by side (share of samples by component; files %s, %s):\n\n", last.Round, first.Profile, last.Profile)
		sb.WriteString("| component | round 1 CPU s | share | last round CPU s | share |\n|---|---:|---:|---:|---:|\n")
		lastBy := map[string]componentShare{}
		for _, c := range last.Components {
			lastBy[c.Name] = c
		}
		seen := map[string]bool{}
		row := func(name string, a, b componentShare) {
			seen[name] = true
			fmt.Fprintf(&sb, "| %s | %.2f | %.1f%% | %.2f | %.1f%% |\n", name, a.Seconds, a.Percent, b.Seconds, b.Percent)
		}
		for _, c := range first.Components {
			row(c.Name, c, lastBy[c.Name])
		}
		for _, c := range last.Components {
			if !seen[c.Name] {
				row(c.Name, componentShare{}, c)
			}
		}
		sb.WriteString("\n")
	}
	var lines []string
	// within: the "within 10%" both ways (CPU per span, spans/s); with flat, what the
	// store holds (heap, bytes per session) may fall: only growing past the tolerance misses
	within := func(name, key string, tol float64, from string, flat bool) {
		v, ok := rt[key]
		if !ok {
			return
		}
		verdict, how := "met", fmt.Sprintf("within %.0f%%", 100*tol)
		if flat {
			how = fmt.Sprintf("at most %.0f%% above", 100*tol)
		}
		if v > 1+tol || !flat && v < 1-tol {
			verdict = "MISSED"
		}
		if from == "" {
			lines = append(lines, fmt.Sprintf("%s %s: %.2f, %s", name, how, v, verdict))
			return
		}
		lines = append(lines, fmt.Sprintf("%s %s from %s to round %d: %.2f, %s", name, how, from, last.Round, v, verdict))
	}
	within("CPU per span", "cpu_per_span", growthCPUTolerance, "round 1", false)
	within("spans/s", "spans_per_s", growthCPUTolerance, "round 1", false)
	within("live heap after the round", "live_heap", growthFlatTolerance, "round 1", true)
	within("bytes on disk per session", "disk_per_session", growthFlatTolerance, "round 1", true)
	if e, l := addedWindows(len(g.Rounds)); len(g.Rounds) >= 3 {
		within(fmt.Sprintf("bytes added per session (mean of %s against %s; round 1 also creates the WALs and fixed files)",
			roundSpan(l), roundSpan(e)), "added_per_session", growthFlatTolerance, "", true)
	}
	if len(lines) > 0 {
		sb.WriteString("**Issue 35 goals (growth):**\n\n- " + strings.Join(lines, "\n- ") + "\n\n")
	}
	if g.Error != "" {
		sb.WriteString("**Growth table stopped:** " + g.Error + "\n\n")
	}
	return sb.String()
}

// roundSpan names the rounds of [from, to) indexes: "round 2" or "rounds 2-4".
func roundSpan(w [2]int) string {
	if w[1]-w[0] == 1 {
		return fmt.Sprint("round ", w[0]+1)
	}
	return fmt.Sprintf("rounds %d-%d", w[0]+1, w[1])
}

func ratioCell(rt map[string]float64, k string) string {
	if v, ok := rt[k]; ok {
		return fmt.Sprintf("%.2f", v)
	}
	return "–"
}
