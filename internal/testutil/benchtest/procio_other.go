//go:build !linux

// SPDX-License-Identifier: Apache-2.0

package benchtest // import "github.com/runagain/runagain/internal/testutil/benchtest"

// ProcIO is not measured here (ok false): there is no /proc/self/io.
func ProcIO() (read, written int64, ok bool) { return 0, 0, false }
