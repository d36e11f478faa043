// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"runtime/pprof"
)

// startProfile writes a CPU profile of the process (the UI server runs in it) to path until
// the returned function is called.
func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
