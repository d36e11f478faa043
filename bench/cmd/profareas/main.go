// Command profareas splits a CPU profile of otelcol-runagain (bench -profile-seconds, or the
// pprof extension) by the session's work areas: the hot SQLite write, payload offload, the warm
// and cold tiers, redaction, agent_guard, the otlp receiver, the background garbage collector and
// the rest. Each sample is charged to the area of the first frame, walking from the leaf to the
// root, that belongs to one (so SQLite or zstd under the hot write is hot, under the warm write
// warm). For every area it also reports the part of its samples whose leaf is a system call, a
// lock or scheduler wait (spinning, futex), allocation (mallocgc and below) and GC assists.
//
//	go run ./bench/cmd/profareas [-cpu S] bench/results/runagain.pprof
//	go run ./bench/cmd/profareas -sample alloc_space bench/results/runagain.heap.pprof
//
// With -sample it reads another sample type (a heap profile's alloc_space or inuse_space, in MB).
// With -cpu (the run's CPU s per 1,000 spans, from bench) each area's share is also given as CPU
// microseconds per span (share × the run's CPU per span; the profile covers only part of the run).
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// areas in the order they are tried on each frame; the first pattern found in a frame's
// function name names the area.
var areas = []struct {
	name     string
	patterns []string
}{
	{"guard", []string{"connector/agentguardconnector"}},
	{"redact", []string{"processor/agentredactionprocessor", "runagain/internal/redact"}},
	{"offload", []string{"processor/payloadoffloadprocessor", "runagain/internal/payloadref"}},
	{"warm", []string{"sqlitestore.(*WarmDB)", "runagainstorageextension.(*warmSQLite)", "runagainstorageextension.(*cold",
		"runagain/internal/store.", "runagain/internal/store/parquet", "exporter/tieredexporter.records",
		"go.etcd.io/bbolt", "extension/storage/filestorage", "persistentQueue", "parquet-go"}},
	{"hot", []string{"runagain/internal/store/sqlitestore", "runagainstorageextension.(*hotSQLite)"}},
	{"tiered", []string{"exporter/tieredexporter", "exporter/exporterhelper"}},
	{"receiver", []string{"receiver/otlpreceiver", "ptraceotlp", "plogotlp", "google.golang.org/grpc", "golang.org/x/net/http2", "pdata/internal"}},
	{"GC", []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge"}},
	{"telemetry", []string{"prometheus/client_golang", "go.opentelemetry.io/otel/sdk"}},
}

// kinds of leaf work, reported per area.
var kinds = []struct {
	name     string
	patterns []string
}{
	{"syscall", []string{"syscall.Syscall", "syscall.RawSyscall", "internal/runtime/syscall", "modernc.org/libc.___syscall"}},
	{"lock/sched", []string{"runtime.futex", "runtime.lock2", "runtime.unlock2", "runtime.procyield", "runtime.osyield",
		"sync.(*Mutex).lockSlow", "sync.(*Mutex).unlockSlow", "runtime.semacquire", "runtime.semrelease", "runtime.schedule",
		"runtime.findRunnable", "runtime.usleep"}},
	{"gcassist", []string{"runtime.gcAssistAlloc"}},
	{"malloc", []string{"runtime.mallocgc"}},
	{"zstd", []string{"klauspost/compress/zstd"}},
}

func main() {
	cpuPer1k := flag.Float64("cpu", 0, "the run's CPU s per 1,000 spans (bench), to give each area in µs per span")
	sample := flag.String("sample", "", "sample type to split (default: the profile's last, CPU time; heap: alloc_space, inuse_space)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: profareas [-cpu S] FILE.pprof")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	p, err := profile.Parse(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	vi := len(p.SampleType) - 1 // cpu nanoseconds
	scale, unit := 1e9, "s"
	if *sample != "" {
		vi = -1
		for i, st := range p.SampleType {
			if st.Type == *sample {
				vi = i
			}
		}
		if vi < 0 {
			fmt.Fprintf(os.Stderr, "no sample type %q in %s\n", *sample, flag.Arg(0))
			os.Exit(1)
		}
		if p.SampleType[vi].Unit == "bytes" {
			scale, unit = 1<<20, "MB"
		} else {
			scale, unit = 1, p.SampleType[vi].Unit
		}
	}
	rows, total := split(p, vi, scale)
	names := make([]string, 0, len(rows))
	for n := range rows {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return rows[names[i]].total > rows[names[j]].total })
	fmt.Printf("profile %s: %.2f %s of samples over %.0f s\n", flag.Arg(0), total, unit, float64(p.DurationNanos)/1e9)
	hdr := "| area | " + unit + " | share |"
	sep := "|---|---:|---:|"
	if *cpuPer1k > 0 {
		hdr += " µs/span |"
		sep += "---:|"
	}
	for _, k := range kinds {
		hdr += " " + k.name + " " + unit + " |"
		sep += "---:|"
	}
	fmt.Println(hdr)
	fmt.Println(sep)
	sum := &row{kind: map[string]float64{}}
	for _, n := range names {
		r := rows[n]
		line := fmt.Sprintf("| %s | %.2f | %.1f%% |", n, r.total, 100*r.total/total)
		if *cpuPer1k > 0 {
			line += fmt.Sprintf(" %.0f |", r.total/total**cpuPer1k*1000)
		}
		for _, k := range kinds {
			line += fmt.Sprintf(" %.2f |", r.kind[k.name])
			sum.kind[k.name] += r.kind[k.name]
		}
		fmt.Println(line)
	}
	line := fmt.Sprintf("| all | %.2f | 100%% |", total)
	if *cpuPer1k > 0 {
		line += fmt.Sprintf(" %.0f |", *cpuPer1k*1000)
	}
	for _, k := range kinds {
		line += fmt.Sprintf(" %.2f |", sum.kind[k.name])
	}
	fmt.Println(line)
}

// row is one area's part of a profile: its total and, per kind of leaf work, how much of it.
type row struct {
	total float64
	kind  map[string]float64
}

// split charges every sample of p (its value vi, divided by scale) to an area and returns the
// areas and the total.
func split(p *profile.Profile, vi int, scale float64) (map[string]*row, float64) {
	rows := map[string]*row{}
	var total float64
	for _, s := range p.Sample {
		v := float64(s.Value[vi]) / scale
		total += v
		var frames []string
		for _, loc := range s.Location {
			for _, ln := range loc.Line { // innermost (inlined) first, its caller last
				if ln.Function != nil {
					frames = append(frames, ln.Function.Name)
				}
			}
		}
		area := "other"
	find:
		for _, fr := range frames { // leaf first
			for _, a := range areas {
				for _, pat := range a.patterns {
					if strings.Contains(fr, pat) {
						area = a.name
						// generic sqlitestore code (runIndex, codec) under the warm write is warm
						if area == "hot" {
							for _, up := range frames {
								if strings.Contains(up, "sqlitestore.(*WarmDB)") || strings.Contains(up, "(*warmSQLite)") {
									area = "warm"
								}
							}
						}
						break find
					}
				}
			}
		}
		r := rows[area]
		if r == nil {
			r = &row{kind: map[string]float64{}}
			rows[area] = r
		}
		r.total += v
		for _, k := range kinds {
			hit := false
			for _, fr := range frames {
				for _, pat := range k.patterns {
					if strings.Contains(fr, pat) {
						hit = true
					}
				}
				if k.name == "syscall" || k.name == "lock/sched" {
					break // leaf frame only
				}
			}
			if hit {
				r.kind[k.name] += v
			}
		}
	}
	return rows, total
}
