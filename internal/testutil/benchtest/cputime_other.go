//go:build !unix

// SPDX-License-Identifier: Apache-2.0

package benchtest // import "github.com/runagain/runagain/internal/testutil/benchtest"

import "time"

// CPUTime is not measured here (0): the cpu metrics of the benchmarks read 0.
func CPUTime() time.Duration { return 0 }
