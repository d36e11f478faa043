// SPDX-License-Identifier: Apache-2.0

package runview_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/testutil/runtest"
)

// TestBuildNodesIsBuild: a view built over a run's spans in place (BuildNodes, given in any
// order, as the hot writer gives a batch's) is the view Build gives for the run: the same nodes
// in the same order and places, steps, totals and fixture counts; the spans are left as they
// were, and a Resolver, which would rehydrate them in place, is refused.
func TestBuildNodesIsBuild(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)
	for name, td := range map[string]ptrace.Traces{
		"streamed": runtest.StreamedRun(pcommon.TraceID{15: 9}, start),
		"mcp":      runtest.MCPRun(pcommon.TraceID{15: 7}, start),
	} {
		t.Run(name, func(t *testing.T) {
			id := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID().String()
			want, err := runview.Build(ctx, &store.Run{TraceID: id, Traces: td, Logs: plog.NewLogs()}, runview.Options{})
			require.NoError(t, err)
			before := ptrace.NewTraces()
			td.CopyTo(before)
			nodes := store.Nodes(td)
			slices.Reverse(nodes)
			got, err := runview.BuildNodes(ctx, &store.Run{TraceID: id}, nodes, runview.Options{})
			require.NoError(t, err)
			require.Len(t, got.Nodes, len(want.Nodes))
			for i, n := range want.Nodes {
				g := got.Nodes[i]
				assert.Equal(t, n.SpanID(), g.SpanID(), "node %d", i)
				assert.Equal(t, n.Parent, g.Parent, "node %d's parent", i)
				assert.Equal(t, n.Placement, g.Placement, "node %d's placement", i)
				assert.Equal(t, n.Kind, g.Kind, "node %d's kind", i)
			}
			assert.Equal(t, want.Totals, got.Totals)
			require.NotEmpty(t, want.Steps)
			assert.Equal(t, want.Steps, got.Steps)
			assert.Equal(t, want.Incomplete, got.Incomplete)
			assert.Equal(t, want.Fixtures(), got.Fixtures())
			assert.NotNil(t, got.Fixtures(), "the runs hold exchanges")
			assert.Equal(t, before, td, "the spans are not changed")

			_, err = runview.BuildNodes(ctx, &store.Run{TraceID: id}, store.Nodes(td), runview.Options{Resolver: noResolver{}})
			assert.Error(t, err)
		})
	}
}

// noResolver is a Resolver that is never called.
type noResolver struct{}

func (noResolver) RehydrateSpan(context.Context, ptrace.Span) error { panic("rehydrated") }

func (noResolver) RehydrateLogRecord(context.Context, plog.LogRecord) error { panic("rehydrated") }
