//go:build linux

// SPDX-License-Identifier: Apache-2.0

package proctree

import "github.com/prometheus/procfs"

// parentsOf maps each live pid to its parent's (nil when /proc cannot be read).
func parentsOf() map[int]int {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil
	}
	out := make(map[int]int, len(procs))
	for _, p := range procs {
		if st, err := p.Stat(); err == nil {
			out[p.PID] = st.PPID
		}
	}
	return out
}
