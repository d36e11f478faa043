// SPDX-License-Identifier: Apache-2.0

// Package benchtest holds what benchmarks and allocation tests of several packages share:
// the process's CPU time (CPUTime), its bytes read and written (ProcIO) and whether the race
// detector is on (RaceEnabled).
package benchtest // import "github.com/runagain/runagain/internal/testutil/benchtest"
