// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/testutil/runtest"
)

// TestChipsCountTestRunsAsTheHeader: a test run of an MCP agent, whose tool calls are the MCP
// exchanges (no instrumented tool span) and whose divergence points at the original run's
// exchange: the chips count what the header counts (2 tool calls, 1 divergence; they said 0),
// and the Records box lists the divergence but not the agent's own record of a span, which is
// in that span's panel.
func TestChipsCountTestRunsAsTheHeader(t *testing.T) {
	trace := pcommon.TraceID{0x3c, 15: 0x42}
	td, logs := runtest.MCPTestRun(trace, time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC))
	run := &store.Run{TraceID: trace.String(), Tier: store.TierHot, Traces: td, Logs: logs}
	root := pcommon.SpanID{trace[15], runtest.MCPRoot}

	_, ts := newTestServer(t, run)
	code, body := get(t, ts.URL+"/runs/"+run.TraceID)
	require.Equal(t, http.StatusOK, code)
	header := regexp.MustCompile(`<dt>Tool calls</dt><dd>(?:<a [^>]*>)?(\d+)<`).FindStringSubmatch(body)
	require.NotNil(t, header)
	assert.Equal(t, "2", header[1])
	chip := func(kind string) string {
		m := regexp.MustCompile(`data-kind="` + kind + `"[^>]*>[^<]*<b>(\d+)</b>`).FindStringSubmatch(body)
		require.NotNil(t, m, kind)
		return m[1]
	}
	assert.Equal(t, header[1], chip("tool"), "the tools chip counts the header's tool calls")
	assert.Equal(t, "1", chip("divergence"), "a divergence naming a span of another run is pinned on the root")
	i := strings.Index(body, "Records pointing at this run")
	require.Positive(t, i)
	box := body[i:]
	box = box[:strings.Index(box, "</section>")]
	assert.Contains(t, box, "replay diverged at body.arguments.title")
	assert.NotContains(t, box, "thumbs down", "the agent's record of a span is in its panel")
	code, panel := get(t, ts.URL+"/runs/"+run.TraceID+"?span="+root.String())
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, panel, "user clicked thumbs down")
	assert.Contains(t, panel, "app.feedback")
}
