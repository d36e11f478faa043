//go:build unix

package redact

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system, every thread: GC included) the process has used.
// Benchmarks report per-operation CPU beside wall time: on a shared machine wall time counts
// the waits for a core, CPU time does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
