// SPDX-License-Identifier: Apache-2.0

package benchtest // import "github.com/runagain/runagain/internal/testutil/benchtest"

import "github.com/prometheus/procfs"

// ProcIO returns the bytes this process has passed to read and write system calls (rchar and
// wchar of /proc/self/io, every thread: files, WAL frames, checkpoint copies, whether or not the
// page cache has flushed them), read with github.com/prometheus/procfs; ok is false where they
// cannot be read.
func ProcIO() (read, written int64, ok bool) {
	p, err := procfs.Self()
	if err != nil {
		return 0, 0, false
	}
	io, err := p.IO()
	if err != nil {
		return 0, 0, false
	}
	return int64(io.RChar), int64(io.WChar), true
}
