// SPDX-License-Identifier: Apache-2.0

package runview

import (
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/runagainattr"
	"github.com/runagain/runagain/internal/store"
)

// FixtureCounts are a run's recorded exchanges (HTTP and MCP over stdio) and, for a rerun or
// test run, what was served from the recording, sent live and refused (runagain.rerun.source on
// each exchange), and the side-effect firewall's refusals (divergence records with
// runagain.replay.refusal).
type FixtureCounts struct {
	HTTP      int `json:"http"`
	MCP       int `json:"mcp"`
	Served    int `json:"served"`
	Live      int `json:"live"`
	Refused   int `json:"refused"`
	Firewall  int `json:"firewall_refusals"`
	Recorded  int `json:"recorded"` // exchanges without a rerun source: recorded live by proxy --record or runagain mcp
	mcpServer map[string]bool
	Servers   []string `json:"mcp_servers,omitempty"`
	// Replay is what a replay run served (its root span's runagain.replay.* attributes; a replay
	// records no exchange spans of its own); nil for other runs.
	Replay *ReplayCounts `json:"replay,omitempty"`
}

// ReplayCounts are a replay run's HTTP exchanges: the recording's, those served, the requests
// the agent made, those refused and those sent live.
type ReplayCounts struct {
	Recorded int64 `json:"recorded"`
	Served   int64 `json:"served"`
	Requests int64 `json:"requests"`
	Refused  int64 `json:"refused"`
	Live     int64 `json:"live"`
}

// Fixtures counts the run's exchanges and firewall refusals; nil when it has no exchange.
func (v *View) Fixtures() *FixtureCounts {
	if v.Run == nil {
		return nil
	}
	fc := &FixtureCounts{mcpServer: map[string]bool{}}
	if v.borrowed { // BuildNodes: the spans are the nodes', Run.Traces is empty
		for _, n := range v.Nodes {
			fc.add(n.Span)
		}
	} else {
		store.EachSpan(v.Run.Traces, fc.add)
	}
	store.EachLogRecord(v.Run.Logs, func(lr plog.LogRecord) {
		if _, refused := lr.Attributes().Get(runagainattr.ReplayRefusal); refused {
			fc.Firewall++
		}
	})
	if fc.HTTP+fc.MCP == 0 && fc.Replay == nil {
		return nil
	}
	return fc
}

func (fc *FixtureCounts) add(sp ptrace.Span) {
	a := sp.Attributes()
	if v, ok := a.Get(runagainattr.ReplayServed); ok && fc.Replay == nil {
		get := func(k string) int64 { x, _ := a.Get(k); return x.Int() }
		fc.Replay = &ReplayCounts{Recorded: get(runagainattr.ReplayRecorded), Served: v.Int(), Requests: get(runagainattr.ReplayRequests),
			Refused: get(runagainattr.ReplayRefused), Live: get(runagainattr.ReplayLive)}
	}
	switch {
	case fixture.IsFixture(sp):
		fc.HTTP++
	case fixture.IsMCPExchange(sp):
		fc.MCP++
		if v, ok := a.Get(runagainattr.MCPServer); ok && !fc.mcpServer[v.Str()] {
			fc.mcpServer[v.Str()] = true
			fc.Servers = append(fc.Servers, v.Str())
		}
	default:
		return
	}
	src, _ := a.Get(runagainattr.RerunSource)
	switch src.Str() {
	case "recording":
		fc.Served++
	case "live":
		fc.Live++
	case "refused":
		fc.Refused++
	default:
		fc.Recorded++
	}
}
