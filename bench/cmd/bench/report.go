// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/runagain/runagain/bench/internal/profsplit"
)

// componentShare is the part of a CPU profile spent in one pipeline component.
type componentShare struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"cpu_s"`
	Percent float64 `json:"percent"`
}

// analyzeProfile splits a CPU profile by pipeline component (profsplit.Components, the same
// splitter as bench/cmd/profareas) and lists the top functions by flat time (go tool pprof -top).
func analyzeProfile(path string) ([]componentShare, []string, error) {
	p, err := profsplit.Read(path)
	if err != nil {
		return nil, nil, err
	}
	vi, scale, unit, err := profsplit.Value(p, "")
	if err != nil {
		return nil, nil, err
	}
	split := profsplit.Components.Split(p, vi, scale, unit, nil)
	var shares []componentShare
	for _, r := range split.Rows {
		shares = append(shares, componentShare{Name: r.Name, Seconds: r.Value, Percent: split.Share(r)})
	}

	top, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=15", path).Output()
	if err != nil {
		return shares, nil, fmt.Errorf("go tool pprof -top: %w", err)
	}
	lines := pprofTable(string(top), nil, 0)
	// our own code by cumulative time: the call paths to look at first
	cum, err := exec.Command("go", "tool", "pprof", "-top", "-cum", "-nodecount=200", path).Output()
	if err != nil {
		return shares, lines, fmt.Errorf("go tool pprof -top -cum: %w", err)
	}
	own := pprofTable(string(cum), func(l string) bool {
		return strings.Contains(l, "github.com/runagain/runagain/") || strings.Contains(l, "gocloud.dev/blob")
	}, 16)
	if len(own) > 1 {
		lines = append(append(lines, "", "runagain code (and the blob library it calls) by cumulative time:"), own...)
	}
	return shares, lines, nil
}

// pprofTable returns the header and the rows of a `go tool pprof -top` listing, keeping rows
// for which keep is true (all if nil), at most limit rows (0: all).
func pprofTable(out string, keep func(string) bool, limit int) []string {
	var lines []string
	started := false
	rows := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "flat%") {
			started = true
			lines = append(lines, l)
			continue
		}
		if !started || strings.TrimSpace(l) == "" || (keep != nil && !keep(l)) {
			continue
		}
		if limit > 0 && rows >= limit {
			break
		}
		lines = append(lines, l)
		rows++
	}
	return lines
}

// pipelineComponents lists the pipelines of a collector config as "name: a -> b -> [x, y]".
func pipelineComponents(b []byte) []string {
	var cfg struct {
		Service struct {
			Pipelines map[string]struct {
				Receivers  []string `yaml:"receivers"`
				Processors []string `yaml:"processors"`
				Exporters  []string `yaml:"exporters"`
			} `yaml:"pipelines"`
		} `yaml:"service"`
	}
	if yaml.Unmarshal(b, &cfg) != nil {
		return nil
	}
	var out []string
	for name, p := range cfg.Service.Pipelines {
		chain := append([]string{strings.Join(p.Receivers, ", ")}, p.Processors...)
		out = append(out, fmt.Sprintf("%s: %s -> [%s]", name, strings.Join(chain, " -> "), strings.Join(p.Exporters, ", ")))
	}
	sort.Strings(out)
	return out
}

func writeResults(o *options, res *Results) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, "bench.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	table := markdownTable(res)
	if err := os.WriteFile(filepath.Join(o.out, "bench.md"), []byte(table), 0o644); err != nil {
		return err
	}
	fmt.Print(table)
	measured := false
	for _, r := range res.Pipelines {
		measured = measured || r.SpansSent > 0
	}
	if o.benchmarksMD == "" || !measured {
		return nil // keep the last good table
	}
	md := benchmarksMD(o, res, table)
	// sections measured by other commands (component benchmarks) survive a new load run
	if old, err := os.ReadFile(o.benchmarksMD); err == nil {
		top := string(old)
		if i := strings.Index(top, keptSectionMarker); i >= 0 {
			md = strings.TrimRight(md, "\n") + "\n\n" + string(old[i:])
			top = top[:i]
		}
		// the replaced run moves to the history (oldest first), so BENCHMARKS.md stays short
		if o.history != "" && strings.TrimSpace(top) != "" {
			if err := appendHistory(o.history, top); err != nil {
				return err
			}
		}
	}
	return os.WriteFile(o.benchmarksMD, []byte(md), 0o644)
}

// keptSectionMarker starts the part of BENCHMARKS.md that make bench keeps as it is: results of
// component benchmarks, written by hand with their command.
const keptSectionMarker = "<!-- kept by make bench -->"

func markdownTable(res *Results) string {
	var sb strings.Builder
	if res.Runs > 1 {
		fmt.Fprintf(&sb, "Each row is the median of %d runs, with (min–max) for the main columns; ratios are of medians. Load average (1, 5, 15 min) at the start of each run in the last column.\n\n", res.Runs)
	}
	sb.WriteString("| row | pipeline | spans sent (stopped by) | spans/s | MB/s | CPU s / 1k spans (to idle) | idle after s | CPU s / 1k spans (to exit) | peak RSS MB | on disk MB | on disk bytes / session | spans stored | export p50 / p99 ms | loadgen CPU s | load average |\n")
	sb.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range res.Pipelines {
		disk, perSes, stored := "–", "–", "–"
		if r.Disk != nil {
			disk = fmt.Sprintf("%.1f", float64(r.Disk.Disk)/1e6)
			perSes = fmt.Sprintf("%.0f", r.DiskPerSesB)
		}
		if r.ZeroLoss != nil {
			stored = fmt.Sprintf("%d", r.StoredSpans)
			if *r.ZeroLoss {
				stored += " (= sent)"
			} else {
				stored += " (LOSS)"
			}
		}
		idle := fmt.Sprintf("%.1f", r.IdleWaitS)
		if !r.IdleReached {
			idle += " (not idle)"
		}
		letter := rowLetters[r.Pipeline]
		if r.Pipeline == "runagain-minio" {
			letter = "c on S3"
		}
		toExit := "–"
		if r.CPUToExit > 0 && r.SpansSent > 0 {
			toExit = fmt.Sprintf("%.3f", r.CPUToExit/float64(r.SpansSent)*1000)
		}
		if r.Disk != nil {
			perSes = withSpread(r, "disk_bytes_per_session", "%.0f", r.DiskPerSesB)
		}
		fmt.Fprintf(&sb, "| %s | %s (%s) | %d (%s) | %s | %.2f | %s | %s | %s | %s | %s | %s | %s | %.0f / %s | %.1f | %s |\n",
			letter, r.Pipeline, r.Description, r.SpansSent, r.StoppedBy, withSpread(r, "spans_per_s", "%.0f", r.SpansPerSec), r.MBPerSec,
			withSpread(r, "cpu_s_per_1k_spans", "%.3f", r.CPUPer1k), idle, toExit, withSpread(r, "peak_rss_mb", "%.0f", r.PeakRSSMB),
			disk, perSes, stored, r.Latency.P50, withSpread(r, "export_p99_ms", "%.0f", r.Latency.P99), r.LoadgenCPUSeconds, dash(r.Load))
	}
	sb.WriteString("\n")
	keys := make([]string, 0, len(res.Ratios))
	for k := range res.Ratios {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > 0 {
		sb.WriteString("| ratio | value |\n|---|---:|\n")
		for _, k := range keys {
			fmt.Fprintf(&sb, "| %s | %.2f |\n", k, res.Ratios[k])
		}
		sb.WriteString("\n")
	}
	for _, r := range res.Pipelines {
		if r.S3 == nil {
			continue
		}
		s3 := r.S3
		puts := s3.Put + s3.Post
		sb.WriteString("| S3 requests (" + r.Pipeline + ", counting proxy in front of MinIO) | value |\n|---|---:|\n")
		fmt.Fprintf(&sb, "| PUT-class requests (PUT %d + POST %d) | %d |\n", s3.Put, s3.Post, puts)
		if r.SpansSent > 0 {
			fmt.Fprintf(&sb, "| PUT-class requests per 1,000 spans | %.2f |\n", float64(puts)/float64(r.SpansSent)*1000)
		}
		fmt.Fprintf(&sb, "| bytes PUT | %d |\n", s3.PutBytes)
		if s3.Put > 0 {
			fmt.Fprintf(&sb, "| bytes per PUT | %.0f |\n", float64(s3.PutBytes)/float64(s3.Put))
		}
		if s3.PutBytes > 0 {
			fmt.Fprintf(&sb, "| PUT-class requests per 8 MiB PUT | %.2f |\n", float64(puts)/(float64(s3.PutBytes)/(8<<20)))
		}
		fmt.Fprintf(&sb, "| GET / HEAD / LIST / DELETE | %d / %d / %d / %d |\n", s3.Get, s3.Head, s3.List, s3.Delete)
		fmt.Fprintf(&sb, "| bucket on disk (MinIO data directory, allocated) | %.1f MB in %d files |\n", float64(s3.BucketDisk.Disk)/1e6, s3.BucketDisk.Files)
		if s3.Errors5xx > 0 {
			fmt.Fprintf(&sb, "| 5xx answers | %d |\n", s3.Errors5xx)
		}
		sb.WriteString("\n")
	}
	if res.Growth != nil {
		sb.WriteString(growthTable(res.Growth))
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(&sb, "**Skipped:** %s\n\n", s)
	}
	for _, r := range res.Pipelines {
		if r.Error != "" {
			fmt.Fprintf(&sb, "**%s failed:** %s\n\n", r.Pipeline, r.Error)
		}
	}
	return sb.String()
}

func benchmarksMD(o *options, res *Results, table string) string {
	var sb strings.Builder
	m := res.Machine
	sb.WriteString("# Benchmarks\n\n")
	sb.WriteString("Written by `make bench` (bench/cmd/bench); the previous run is in git history. How to read and rerun it: [docs/loadgen.md](docs/loadgen.md).\n\n")
	fmt.Fprintf(&sb, "- Date: %s (the whole run took %.0f s)\n", res.Date, res.DurationS)
	fmt.Fprintf(&sb, "- Machine: %d cores (%s), %.1f GB memory, Linux %s, %s; load average %s at start, %s at end (the machine is shared: absolute rates vary with the load, ratios less)\n",
		m.Cores, m.CPUModel, m.MemoryGB, m.Kernel, m.GoVer, m.Load1, m.LoadEnd)
	fmt.Fprintf(&sb, "- Command: `%s`\n", res.Command)
	fmt.Fprintf(&sb, "- Load (the same for every pipeline, OTLP gRPC through the OTel Go SDK): %s sessions × %s turns × %s tools per turn, %s-byte messages, %s agent processes, batches of %s spans, seed %s; %s. The contrib pipeline is capped at %s: when it reaches the cap its row says \"stopped by duration\" and it got a prefix of the same sessions.\n",
		res.Load["sessions"], res.Load["turns"], res.Load["tools_per_turn"], res.Load["message_bytes"], res.Load["concurrency"], res.Load["batch_size"], res.Load["seed"], res.Load["other"], res.Load["contrib_max_duration"])
	if len(res.Components) > 0 {
		fmt.Fprintf(&sb, "- runagain pipelines (%s at run time): `%s`\n", res.Config, strings.Join(res.Components, "`; `"))
	}
	sb.WriteString("\n")
	sb.WriteString(table)
	sb.WriteString(`Definitions: spans/s and MB/s are spans acknowledged by the collector and their protobuf bytes
over the sustained window, from loadgen's first span to its last acknowledged export or, for
runagain, to the last span written to the SQLite hot tier if that is later (the persistent queue
drains after loadgen ends). CPU is utime+stime of the process (/proc/<pid>/stat) from the start
of the load until the process is idle again (` + res.Idle + `;
"idle after" is that wait past the window), so flushes, compactions and queue drains after the
last acknowledgement count; "to exit" goes on to the process's exit after SIGTERM (shutdown
flushes, e.g. Badger's memtables, which the bytes on disk include); bench.json also has the CPU
over the window alone. Peak RSS is VmHWM. On disk is the allocated size (st_blocks × 512, as du counts:
every file takes whole blocks) of everything the process left in its data directory after it
stopped (for runagain: hot.db, warm.db, cold Parquet, payload blobs and the persistent queue;
on S3, MinIO's data directory too); per session is that over the sessions sent. Spans stored
are counted in the hot tier (runagain), decoded from the file (file exporter), or, for Jaeger,
the spans its storage exporter wrote without error (otelcol_exporter_sent_spans_total). The file exporter and Jaeger acknowledge at their batch processor, before
the write; runagain acknowledges after its persistent queue holds the request. Loadgen runs
on the same 2 cores, so every pipeline competes with the same client load.

`)
	var c *Result
	for _, r := range res.Pipelines {
		if r.Pipeline == "runagain" {
			c = r
		}
	}
	if c != nil {
		sb.WriteString(targets(res))
		if c.StorageBytesPerSes > 0 && c.Sessions > 0 && c.Bytes > 0 {
			fmt.Fprintf(&sb, "**Storage:** %.0f bytes per session (hot.db %d, payload blobs and other stores %d, persistent queue %d after draining), %.0f%% of the OTLP bytes received.",
				c.StorageBytesPerSes, c.StorageHotBytes, c.StorageOtherBytes, c.StorageQueueBytes,
				100*float64(c.StorageHotBytes+c.StorageOtherBytes)/float64(c.Bytes))
			if c.StorageHot != nil && c.StorageOther != nil && c.StorageQueue != nil {
				fmt.Fprintf(&sb, " On disk (allocated): hot.db %.1f MB, other stores %.1f MB in %d files, queue %.1f MB.",
					float64(c.StorageHot.Disk)/1e6, float64(c.StorageOther.Disk)/1e6, c.StorageOther.Files, float64(c.StorageQueue.Disk)/1e6)
			}
			sb.WriteString("\n\n")
		}
		if c.ZeroLoss != nil {
			if *c.ZeroLoss {
				fmt.Fprintf(&sb, "**Zero loss:** the hot tier holds %d spans in %d sessions, exactly the %d spans loadgen sent.\n\n", c.HotSpans, c.HotSessions, c.SpansSent)
			} else {
				fmt.Fprintf(&sb, "**Data loss:** the hot tier holds %d spans, loadgen sent %d (failed %d).\n\n", c.HotSpans, c.SpansSent, c.SpansFailed)
			}
		}
		if len(c.Components) > 0 {
			fmt.Fprintf(&sb, "## Where the time goes (runagain, CPU profile of %d s from the pprof extension)\n\n", o.profileSeconds)
			if ratio, ok := res.Ratios["c/a spans_per_s"]; ok && ratio < 0.5 {
				var names []string
				for _, s := range c.Components {
					if len(names) < 3 && s.Percent >= 5 {
						names = append(names, fmt.Sprintf("%s (%.0f%%)", s.Name, s.Percent))
					}
				}
				fmt.Fprintf(&sb, "runagain reaches %.2f of the baseline; most of its CPU goes to %s. The call paths are below.\n\n", ratio, strings.Join(names, ", "))
			}
			sb.WriteString("Each sample is charged to the most specific component on its stack (leaf to root).\n\n| component | CPU s | share |\n|---|---:|---:|\n")
			for _, s := range c.Components {
				fmt.Fprintf(&sb, "| %s | %.2f | %.1f%% |\n", s.Name, s.Seconds, s.Percent)
			}
			sb.WriteString("\nTop functions (flat):\n\n```\n")
			sb.WriteString(strings.Join(c.TopFuncs, "\n"))
			sb.WriteString("\n```\n\n")
		}
	}
	for _, r := range res.Pipelines {
		if r.Pipeline != "runagain" && len(r.Components) > 0 {
			fmt.Fprintf(&sb, "%s profile by component: ", r.Pipeline)
			var parts []string
			for _, s := range r.Components {
				if s.Percent >= 3 {
					parts = append(parts, fmt.Sprintf("%s %.0f%%", s.Name, s.Percent))
				}
			}
			sb.WriteString(strings.Join(parts, ", ") + ".\n\n")
		}
	}
	fmt.Fprintf(&sb, "Raw results: `%s/bench.json`; profiles: `%s/<pipeline>.pprof` (`go tool pprof -top FILE`).\n", o.out, o.out)
	return sb.String()
}

// Issue 17's targets for runagain's row (c), measured in the same run.
const (
	targetSpansRatio   = 0.25 // c/a spans/s at least (goal 0.5)
	targetCPUxBaseline = 8.0  // CPU s per 1k spans at most this times the baseline's, and below Jaeger's
	targetDiskVsJaeger = 0.25 // bytes on disk at most this part of Jaeger's
	targetPeakRSSMB    = 346  // peak RSS no higher than before the redesign
	// storage bytes per session (hot.db and other stores, apparent, without the queue) no larger
	// than before the redesign: BENCHMARKS.md of 2026-11-29, 1,200 sessions
	targetStoragePerSession = 160270
)

// targets is the issue 17 verdict block: each target with the measured value, met or missed.
func targets(res *Results) string {
	by := map[string]*Result{}
	for _, r := range res.Pipelines {
		by[r.Pipeline] = r
	}
	c := by["runagain"]
	if c == nil {
		return ""
	}
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	var lines []string
	if v, ok := res.Ratios["c/a spans_per_s"]; ok {
		lines = append(lines, fmt.Sprintf("c/a spans/s >= %.2f (goal 0.5): %.2f, %s", targetSpansRatio, v, verdict(v >= targetSpansRatio)))
	}
	if v, ok := res.Ratios["c/a cpu_per_span"]; ok {
		lines = append(lines, fmt.Sprintf("CPU s / 1k spans <= %.0f× baseline: %.3f = %.1f× the baseline's %.3f, %s",
			targetCPUxBaseline, c.CPUPer1k, v, by["baseline"].CPUPer1k, verdict(v <= targetCPUxBaseline)))
	}
	if e := by["jaeger"]; e != nil && e.CPUPer1k > 0 {
		line := fmt.Sprintf("CPU s / 1k spans below Jaeger's: %.3f against %.3f, %s", c.CPUPer1k, e.CPUPer1k, verdict(c.CPUPer1k < e.CPUPer1k))
		if c.CPUToExit > 0 && e.CPUToExit > 0 && c.SpansSent > 0 && e.SpansSent > 0 {
			line += fmt.Sprintf(" (counted to exit: %.3f against %.3f)", c.CPUToExit/float64(c.SpansSent)*1000, e.CPUToExit/float64(e.SpansSent)*1000)
		}
		lines = append(lines, line)
	}
	if v, ok := res.Ratios["c/e disk_per_session"]; ok {
		lines = append(lines, fmt.Sprintf("bytes on disk <= 1/4 of Jaeger's: %.0f against %.0f bytes per session (c/e %.2f), %s",
			c.DiskPerSesB, by["jaeger"].DiskPerSesB, v, verdict(v <= targetDiskVsJaeger)))
	}
	if c.PeakRSSMB > 0 {
		lines = append(lines, fmt.Sprintf("peak RSS <= %d MB: %.0f MB, %s", targetPeakRSSMB, c.PeakRSSMB, verdict(c.PeakRSSMB <= targetPeakRSSMB)))
	}
	if c.StorageBytesPerSes > 0 {
		lines = append(lines, fmt.Sprintf("storage per session <= %d bytes (before the redesign): %.0f, %s",
			targetStoragePerSession, c.StorageBytesPerSes, verdict(c.StorageBytesPerSes <= targetStoragePerSession)))
	}
	if c.ZeroLoss != nil {
		lines = append(lines, fmt.Sprintf("zero loss (hot tier holds every span sent): %d of %d, %s", c.HotSpans, c.SpansSent, verdict(*c.ZeroLoss)))
	}
	if m := by["runagain-minio"]; m != nil && m.S3 != nil && m.S3.PutBytes > 0 {
		puts := float64(m.S3.Put + m.S3.Post)
		per8 := puts / (float64(m.S3.PutBytes) / (8 << 20))
		// one PUT may carry up to 8 MiB: a run that wrote less than 8 MiB in all may make one
		allowed := math.Ceil(float64(m.S3.PutBytes) / (8 << 20))
		lines = append(lines, fmt.Sprintf("on MinIO, at most 1 PUT per 8 MiB of new payload bytes: %.0f PUT-class requests for %.1f MiB (at most %.0f allowed; %.2f per 8 MiB, %.2f per 1,000 spans), %s",
			puts, float64(m.S3.PutBytes)/(1<<20), allowed, per8, puts/float64(max(m.SpansSent, 1))*1000, verdict(puts <= allowed)))
	}
	if len(lines) == 0 {
		return ""
	}
	return "**Issue 17 targets (runagain, row c):**\n\n- " + strings.Join(lines, "\n- ") + "\n\n"
}

// appendHistory appends the replaced top part of BENCHMARKS.md to the history file as one
// section, its headings moved one level down.
func appendHistory(path, top string) error {
	lines := strings.Split(strings.TrimSpace(top), "\n")
	title := "make bench run (replaced by a newer run)"
	for _, l := range lines {
		if d, ok := strings.CutPrefix(l, "- Date: "); ok {
			title = "make bench of " + d
			break
		}
	}
	var sb strings.Builder
	sb.WriteString("\n## " + title + "\n\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "# ") {
			continue // the file's own title
		}
		if strings.HasPrefix(l, "#") {
			l = "#" + l
		}
		sb.WriteString(l + "\n")
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(sb.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
