// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/store/storetest"
)

// filterLog records the filters a reader was asked to list.
type filterLog struct {
	store.Reader
	asked []store.RunFilter
}

func (f *filterLog) Runs(ctx context.Context, rf store.RunFilter) ([]store.RunSummary, error) {
	f.asked = append(f.asked, rf)
	return f.Reader.Runs(ctx, rf)
}

// TestSessionsPageReadsTheRunIndex: over a real hot SQLite file of 1,100 runs, the sessions page
// reads the run index in bounded pages (store.EachRun), never the whole listing: without filters
// it stops after countCap runs and says there are more; a session filter is answered by the
// index and counted exactly; the errors filter (every 7th run fails a tool) walks the index in
// pages and lists exactly the failed runs, newest first.
func TestSessionsPageReadsTheRunIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hot.db")
	w, err := sqlitestore.Open(path, sqlitestore.Options{})
	require.NoError(t, err)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	td := ptrace.NewTraces()
	for i := 0; i < 1100; i++ {
		r := storetest.Run{Seed: fmt.Sprintf("p-%d", i), Service: "svc", Agent: "a", Model: "gpt-4.1", Start: t0 + int64(i)*int64(time.Minute)}
		if i%100 == 0 {
			r.Session = "conv-hundred"
		}
		r.ToolFail = i%7 == 0
		storetest.Add(td, r)
	}
	_, err = w.WriteTraces(ctx, td)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	r, err := sqlitestore.Open(path, sqlitestore.Options{ReadOnly: true})
	require.NoError(t, err)
	rd := &filterLog{Reader: r}
	s, err := New(Options{Reader: rd, PageSize: 50})
	require.NoError(t, err)
	ts := httptest.NewServer(s)
	defer func() { ts.Close(); s.Close(); r.Close() }()

	_, body := get(t, ts.URL+"/")
	assert.Contains(t, body, "1–50 of more than 1000 runs")
	assert.Contains(t, body, "page 1 of at least 21")
	assert.Contains(t, body, `data-trace="`+storetest.TraceID("p-1099").String())
	bounded := func(what string) {
		t.Helper()
		for _, a := range rd.asked {
			assert.Positive(t, a.Limit, "%s: never an unbounded listing", what)
			assert.LessOrEqual(t, a.Limit, store.EachRunPage+1, "%s: one page at a time", what)
		}
		rd.asked = nil
	}
	assert.LessOrEqual(t, len(rd.asked), 3, "stops after countCap runs")
	bounded("/")
	_, body = get(t, ts.URL+"/?page=2")
	assert.Contains(t, body, "51–100 of more than 1000 runs")
	assert.Contains(t, body, `data-trace="`+storetest.TraceID("p-1049").String())
	_, body = get(t, ts.URL+"/?session=conv-hundred")
	assert.Contains(t, body, "1–11 of 11 runs")
	assert.Equal(t, "conv-hundred", rd.asked[len(rd.asked)-1].SessionID, "the session filter goes to the index")
	bounded("session")
	_, body = get(t, ts.URL+"/?errors=1")
	assert.Contains(t, body, "1–50 of 158 runs", "1,100 runs, every 7th failed: 158")
	assert.Contains(t, body, `data-trace="`+storetest.TraceID("p-1099").String(), "1099 = 7×157: the newest failed run first")
	assert.NotContains(t, body, `data-trace="`+storetest.TraceID("p-1098").String()+`"`, "a run without errors is not listed")
	bounded("errors")
	_, body = get(t, ts.URL+"/?errors=1&page=4")
	assert.Contains(t, body, "151–158 of 158 runs")
	assert.Contains(t, body, `data-trace="`+storetest.TraceID("p-0").String())
	bounded("errors, last page")
}
