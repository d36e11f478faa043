//go:build !unix

package redact

import "time"

// cpuTime is not measured here (0): the cpu metrics of the benchmarks read 0.
func cpuTime() time.Duration { return 0 }
