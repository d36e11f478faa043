// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/runagain/runagain/internal/runview"
)

// FixtureCounts is runview's count of a run's exchanges (HTTP and MCP) by what served them.
type FixtureCounts = runview.FixtureCounts

func printFixtureCounts(w io.Writer, fc *FixtureCounts) {
	if fc == nil {
		return
	}
	mcpPart := ""
	if fc.MCP > 0 {
		mcpPart = fmt.Sprintf(" (servers: %s)", strings.Join(fc.Servers, ", "))
	}
	if r := fc.Replay; r != nil {
		fmt.Fprintf(w, "replay: served %d of %d recorded exchanges (%d requests); %d refused, %d sent live\n",
			r.Served, r.Recorded, r.Requests, r.Refused, r.Live)
	}
	if fc.HTTP+fc.MCP == 0 {
		return
	}
	fmt.Fprintf(w, "exchanges: %d HTTP, %d MCP%s: %d recorded, %d served from the recording, %d sent live, %d refused (%d by the side-effect firewall)\n",
		fc.HTTP, fc.MCP, mcpPart, fc.Recorded, fc.Served, fc.Live, fc.Refused, fc.Firewall)
}
