package runagainstorageextension

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/coldstore"
	"github.com/runagain/runagain/internal/store/storetest"
)

// TestColdRecordsCountOnceAfterRebatch: the cold queue merged requests a and b and the Parquet
// backend wrote them, then the collector was killed before the queue marked them done; after the
// restart the queue sends b again, merged this time with c. Every session's totals in the real
// cold bucket are those of a, b and c each counted once (before, each write combined its requests
// into one partial per session under a new batch id, and b's spans, tokens and cost counted twice).
func TestColdRecordsCountOnceAfterRebatch(t *testing.T) {
	ctx := context.Background()
	st, err := coldstore.Open(ctx, filepath.Join(t.TempDir(), "cold"), coldstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	b := &coldParquet{st: st, now: time.Now}
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	req := func(seed, session string, at int64) store.Records {
		run := storetest.Run{Seed: seed, Session: session, Service: "svc", Agent: "weather", Model: "gpt-4.1", Start: at, LLMCalls: 2, ToolFail: true}
		return b.TraceRecords(storetest.Traces(run))
	}
	a, bb, c := req("a", "conv-1", start), req("b", "conv-1", start+int64(time.Minute)), req("c", "conv-2", start+int64(time.Hour))
	merged := func(rs ...store.Records) store.Records {
		var out store.Records
		for _, r := range rs {
			out.Append(r)
		}
		return out
	}
	require.NoError(t, b.WriteRecords(ctx, merged(a, bb)))
	require.NoError(t, b.WriteRecords(ctx, merged(bb, c))) // b again after the crash, merged with c

	got, err := st.Sessions(ctx)
	require.NoError(t, err)
	want := store.MergePartials(merged(a, bb, c).Partials)
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i].SessionID, got[i].SessionID)
		assert.Equal(t, want[i].Spans, got[i].Spans, want[i].SessionID)
		assert.Equal(t, want[i].InputTokens, got[i].InputTokens, want[i].SessionID)
		assert.Equal(t, want[i].OutputTokens, got[i].OutputTokens, want[i].SessionID)
		assert.InDelta(t, want[i].CostUSD, got[i].CostUSD, 1e-12, want[i].SessionID)
		assert.Equal(t, want[i].Errors, got[i].Errors, want[i].SessionID)
		assert.Equal(t, want[i].TraceIDs, got[i].TraceIDs, want[i].SessionID)
	}
	assert.EqualValues(t, 2*storetest.Run{LLMCalls: 2, ToolFail: true}.Spans(), got[len(got)-1].Spans, "conv-1: runs a and b once each")
}
