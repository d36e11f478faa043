package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// componentShare is the part of a CPU profile spent in one pipeline component.
type componentShare struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"cpu_s"`
	Percent float64 `json:"percent"`
}

// components attribute profile samples: each sample goes to the first of these whose pattern
// occurs in a frame, walking the stack from the leaf to the root, so a library call is charged
// to the most specific part that made it (a regexp inside internal/redact to agent_redaction,
// a protobuf marshal inside the tiered exporter to the tiered exporter).
var components = []struct {
	name     string
	patterns []string
}{
	{"SQLite engine (modernc.org/sqlite)", []string{"modernc.org/sqlite", "modernc.org/libc"}},
	{"tiered exporter (row encoding, batching)", []string{"exporter/tieredexporter", "internal/store/sqlitestore"}},
	{"persistent queue (file_storage, bbolt)", []string{"go.etcd.io/bbolt", "extension/storage/filestorage", "persistentQueue"}},
	{"agent_redaction", []string{"processor/agentredactionprocessor", "runagain/internal/redact"}},
	{"payload_offload", []string{"processor/payloadoffloadprocessor", "runagain/internal/payloadref", "gocloud.dev/blob"}},
	{"agent_guard", []string{"connector/agentguardconnector"}},
	{"contrib redaction", []string{"processor/redactionprocessor"}},
	{"batch processor", []string{"processor/batchprocessor"}},
	{"memory_limiter", []string{"memorylimiter"}},
	{"otlp receiver (gRPC, protobuf decode)", []string{"receiver/otlpreceiver", "google.golang.org/grpc", "golang.org/x/net/http2"}},
	{"exporter helper / queue batching", []string{"exporter/exporterhelper"}},
	{"collector telemetry (prometheus, otel sdk)", []string{"prometheus/client_golang", "go.opentelemetry.io/otel/sdk"}},
	{"GC (background)", []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge"}},
}

const otherComponent = "other (scheduler, syscalls, idle work)"

// analyzeProfile splits a CPU profile by component (go tool pprof -traces) and lists the top
// functions by flat time (go tool pprof -top).
func analyzeProfile(path string) ([]componentShare, []string, error) {
	out, err := exec.Command("go", "tool", "pprof", "-traces", path).Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go tool pprof -traces: %w", err)
	}
	secs := map[string]float64{}
	var total float64
	var cur float64
	var charged bool
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	flush := func() {
		if cur > 0 && !charged {
			secs[otherComponent] += cur
		}
		cur, charged = 0, false
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "-----------+") {
			flush()
			continue
		}
		if cur == 0 && !charged {
			// first line of a sample: "      10ms   function"
			f := strings.Fields(line)
			if len(f) >= 2 {
				if d, err := time.ParseDuration(f[0]); err == nil {
					cur = d.Seconds()
					total += cur
					line = strings.Join(f[1:], " ")
				}
			}
			if cur == 0 {
				continue
			}
		}
		if charged {
			continue
		}
		frame := strings.TrimSpace(line)
		for _, c := range components {
			for _, p := range c.patterns {
				if strings.Contains(frame, p) {
					secs[c.name] += cur
					charged = true
					break
				}
			}
			if charged {
				break
			}
		}
	}
	flush()
	var shares []componentShare
	for n, s := range secs {
		shares = append(shares, componentShare{Name: n, Seconds: s, Percent: 100 * s / max(total, 1e-9)})
	}
	sort.Slice(shares, func(i, j int) bool { return shares[i].Seconds > shares[j].Seconds })

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
		if i := strings.Index(string(old), keptSectionMarker); i >= 0 {
			md = strings.TrimRight(md, "\n") + "\n\n" + string(old[i:])
		}
	}
	return os.WriteFile(o.benchmarksMD, []byte(md), 0o644)
}

// keptSectionMarker starts the part of BENCHMARKS.md that make bench keeps as it is: results of
// component benchmarks, written by hand with their command.
const keptSectionMarker = "<!-- kept by make bench -->"

func markdownTable(res *Results) string {
	var sb strings.Builder
	sb.WriteString("| pipeline | spans sent (stopped by) | spans/s | MB/s | CPU s / 1k spans | peak RSS MB | storage bytes / session | hot-tier spans | export p50 / p99 ms | loadgen CPU s |\n")
	sb.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range res.Pipelines {
		storage, hot := "–", "–"
		if r.Pipeline == "runagain" {
			storage = fmt.Sprintf("%.0f", r.StorageBytesPerSes)
			hot = fmt.Sprintf("%d", r.HotSpans)
			if r.ZeroLoss != nil && *r.ZeroLoss {
				hot += " (= sent)"
			} else {
				hot += " (LOSS)"
			}
		}
		fmt.Fprintf(&sb, "| %s (%s) | %d (%s) | %.0f | %.2f | %.3f | %.0f | %s | %s | %.0f / %.0f | %.1f |\n",
			r.Pipeline, r.Description, r.SpansSent, r.StoppedBy, r.SpansPerSec, r.MBPerSec, r.CPUPer1k, r.PeakRSSMB, storage, hot,
			r.Latency.P50, r.Latency.P99, r.LoadgenCPUSeconds)
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
drains after loadgen ends). CPU is utime+stime of the collector process (/proc/<pid>/stat) over
that window; peak RSS is VmHWM. Storage per session is the data directory (hot.db and payload
blobs, without the persistent queue) after the collector stopped, over the sessions sent.
Loadgen runs on the same 2 cores, so every pipeline competes with the same client load.

`)
	var c *Result
	for _, r := range res.Pipelines {
		if r.Pipeline == "runagain" {
			c = r
		}
	}
	if c != nil {
		ratio, ok := res.Ratios["c/a spans_per_s"]
		if ok {
			verdict := "meets"
			if ratio < 0.5 {
				verdict = "falls short of"
			}
			fmt.Fprintf(&sb, "**Target c/a >= 0.5:** runagain sustains %.2f of the baseline's spans/s: it %s the target.\n\n", ratio, verdict)
		}
		if c.StorageBytesPerSes > 0 && c.Sessions > 0 && c.Bytes > 0 {
			fmt.Fprintf(&sb, "**Storage:** %.0f bytes per session (hot.db %d, payload blobs and other stores %d, persistent queue %d after draining), %.0f%% of the OTLP bytes received.\n\n",
				c.StorageBytesPerSes, c.StorageHotBytes, c.StorageOtherBytes, c.StorageQueueBytes,
				100*float64(c.StorageHotBytes+c.StorageOtherBytes)/float64(c.Bytes))
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
