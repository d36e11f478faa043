// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/runagain/runagain/internal/sandbox"
)

// sandboxOptions are --sandbox and --no-sandbox of proxy --record, replay, rerun and test.
type sandboxOptions struct {
	on, off bool
	def     bool // on unless --no-sandbox (replay, rerun, test on Linux)
}

func (s *sandboxOptions) flags(cmd *cobra.Command, def bool) {
	s.def = def && runtime.GOOS == "linux"
	f := cmd.Flags()
	what := "run COMMAND in a network namespace of its own whose only way out is the proxy: every TCP connection, to any address, and every DNS query is captured (Linux"
	if s.def {
		what += "; the default here"
	}
	f.BoolVar(&s.on, "sandbox", false, what+")")
	f.BoolVar(&s.off, "no-sandbox", false, "run COMMAND without the network sandbox (only clients that honour the proxy settings are captured)")
}

// enabled decides whether COMMAND runs sandboxed. Asked for with --sandbox where it cannot work,
// it is an error; on by default where it cannot work, a warning says what is not captured.
func (s *sandboxOptions) enabled(verb string, errOut io.Writer) (bool, error) {
	if s.on && s.off {
		return false, fmt.Errorf("--sandbox and --no-sandbox contradict each other")
	}
	if s.off || (!s.on && !s.def) {
		return false, nil
	}
	if err := sandbox.Available(); err != nil {
		if s.on {
			return false, fmt.Errorf("--sandbox: %w", err)
		}
		fmt.Fprintf(errOut, "runagain %s: no network sandbox: %v; connections of clients that ignore the proxy settings are neither recorded nor stopped (--no-sandbox silences this)\n", verb, err)
		return false, nil
	}
	return true, nil
}
