// SPDX-License-Identifier: Apache-2.0

package collectortest

import (
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStartOnFreePortsRetriesATakenPort: a start whose bind fails because the port was taken
// (a real EADDRINUSE from net.Listen) is called again on fresh ports, and the ports of the
// start that succeeded are returned.
func TestStartOnFreePortsRetriesATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	var calls [][]int
	var bound net.Listener
	got := StartOnFreePorts(t, 2, func(ports []int) error {
		calls = append(calls, ports)
		addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
		if len(calls) == 1 {
			addr = taken.Addr().String() // as if another process had bound ports[0] first
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listen %s: %w", addr, err)
		}
		bound = l
		return nil
	})
	defer bound.Close()
	require.Len(t, calls, 2, "the failed bind is retried once")
	assert.Equal(t, calls[1], got)
	assert.Len(t, got, 2)
	assert.Equal(t, fmt.Sprintf("127.0.0.1:%d", got[0]), bound.Addr().String())
}
