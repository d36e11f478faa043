// SPDX-License-Identifier: Apache-2.0

package proctree

import (
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWatchSeesGrandchildren: sh starts sleep in the background and prints its pid; the tree of
// sh holds that grandchild's pid, and not this test's own.
func TestWatchSeesGrandchildren(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	c := exec.Command("sh", "-c", "sleep 1 & echo $!; wait")
	out, err := c.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, c.Start())
	tree := Watch(c.Process.Pid)
	buf := make([]byte, 64)
	n, err := out.Read(buf)
	require.NoError(t, err)
	grandchild, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	require.NoError(t, err)
	require.NoError(t, c.Wait())
	pids := tree.Stop()
	require.True(t, pids[c.Process.Pid], "root in the set")
	require.True(t, pids[grandchild], "grandchild %d not seen: %v", grandchild, pids)
}
