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
// without filters asks the store for the page and countCap+1 runs (not all of them) and says
// there are more; a session filter is answered by the index and counted exactly.
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
	require.Len(t, rd.asked, 1)
	assert.Equal(t, countCap+1, rd.asked[0].Limit, "bounded: the page and countCap+1")
	_, body = get(t, ts.URL+"/?page=2")
	assert.Contains(t, body, "51–100 of more than 1000 runs")
	assert.Contains(t, body, `data-trace="`+storetest.TraceID("p-1049").String())
	_, body = get(t, ts.URL+"/?session=conv-hundred")
	assert.Contains(t, body, "1–11 of 11 runs")
	assert.Equal(t, "conv-hundred", rd.asked[len(rd.asked)-1].SessionID, "the session filter goes to the index")
	_, body = get(t, ts.URL+"/?errors=1")
	assert.Contains(t, body, "No run matches", "a filter the index does not answer reads every run")
	assert.Zero(t, rd.asked[len(rd.asked)-1].Limit)
}
