//go:build unix

// SPDX-License-Identifier: Apache-2.0

package benchtest // import "github.com/runagain/runagain/internal/testutil/benchtest"

import (
	"syscall"
	"time"
)

// CPUTime is the CPU time (user and system, every thread: GC included) the process has used;
// 0 when getrusage(2) fails. Benchmarks report per-operation CPU beside wall time: on a shared
// machine wall time counts the waits for a core, CPU time does not.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
