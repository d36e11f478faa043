// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"testing"

	"github.com/runagain/runagain/internal/sandbox"
)

// TestMain lets the commands under test run their agents in the network sandbox: the sandbox
// re-executes this binary as its first process.
func TestMain(m *testing.M) {
	sandbox.Init()
	os.Exit(m.Run())
}
