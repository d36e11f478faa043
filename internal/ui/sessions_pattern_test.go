// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/store/storetest"
)

var dataTrace = regexp.MustCompile(`<tr data-trace="([0-9a-f]{32})"`)

// patternLog records what a reader was asked: run listings (filterLog) and pattern lookups.
type patternLog struct {
	filterLog
	db      *sqlitestore.DB
	lookups []store.PatternFilter
}

func (p *patternLog) PatternRuns(ctx context.Context, f store.PatternFilter, yield func(store.PatternRun) error) error {
	p.lookups = append(p.lookups, f)
	return p.db.PatternRuns(ctx, f, yield)
}

func (p *patternLog) PatternSignatures(ctx context.Context, ids []string) (map[string][]byte, error) {
	return p.db.PatternSignatures(ctx, ids)
}

// TestSessionsPatternFilterReadsThePage: the sessions page's ?pattern= filter over a real hot
// SQLite file of 1,400 runs (every 3rd fails get_weather, every 5th other one fails search_docs:
// two patterns) lists exactly the pattern's runs, newest first, counted, on every page, and
// finds the runs written before signatures were kept (signed on the spot). It reads the run
// index in bounded pages and looks up at most patternChunk runs at a time by id, never the
// pattern's or the store's every run.
func TestSessionsPatternFilterReadsThePage(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hot.db")
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	want := []string{} // the weather pattern's runs, newest first
	write := func(from, to int, o sqlitestore.Options) {
		w, err := sqlitestore.Open(path, o)
		require.NoError(t, err)
		td := ptrace.NewTraces()
		for i := from; i < to; i++ {
			r := storetest.Run{Seed: fmt.Sprintf("p-%d", i), Service: "svc", Agent: "a", Model: "gpt-4.1", Start: t0 + int64(i)*int64(time.Minute)}
			switch {
			case i%3 == 0:
				r.ToolFail = true
			case i%5 == 0:
				r.ToolFail, r.FailTool = true, "search_docs"
			}
			storetest.Add(td, r)
		}
		_, err = w.WriteTraces(ctx, td)
		require.NoError(t, err)
		require.NoError(t, w.Close())
	}
	write(0, 300, sqlitestore.Options{NoSignatures: true}) // no run_patterns rows: signed when read
	write(300, 1400, sqlitestore.Options{})
	for i := 1399; i >= 0; i-- {
		if i%3 == 0 {
			want = append(want, storetest.TraceID(fmt.Sprintf("p-%d", i)).String())
		}
	}
	r, err := sqlitestore.Open(path, sqlitestore.Options{ReadOnly: true})
	require.NoError(t, err)
	var pid string
	require.NoError(t, r.PatternRuns(ctx, store.PatternFilter{TraceIDs: []string{want[0], want[len(want)-1]}}, func(p store.PatternRun) error {
		if pid == "" {
			pid = p.PatternID
		}
		assert.Equal(t, pid, p.PatternID, "a signed and an unsigned run of the same failure: one pattern")
		return nil
	}))
	require.NotEmpty(t, pid)
	rd := &patternLog{filterLog: filterLog{Reader: r}, db: r}
	s, err := New(Options{Reader: rd, PageSize: 50})
	require.NoError(t, err)
	ts := httptest.NewServer(s)
	defer func() { ts.Close(); s.Close(); r.Close() }()

	pages := (len(want) + 49) / 50
	var got []string
	for page := 1; page <= pages; page++ {
		rd.asked, rd.lookups = nil, nil
		_, body := get(t, fmt.Sprintf("%s/?pattern=%s&page=%d", ts.URL, pid, page))
		last := min(page*50, len(want))
		assert.Contains(t, body, fmt.Sprintf("%d–%d of %d runs", (page-1)*50+1, last, len(want)), "page %d", page)
		for _, id := range want[(page-1)*50 : last] {
			assert.Contains(t, body, `data-trace="`+id+`"`, "page %d", page)
		}
		for _, m := range dataTrace.FindAllStringSubmatch(body, -1) {
			got = append(got, m[1])
		}
		for _, f := range rd.asked {
			assert.Positive(t, f.Limit, "never an unbounded listing")
		}
		for _, f := range rd.lookups {
			assert.Equal(t, pid, f.PatternID)
			assert.NotNil(t, f.TraceIDs, "a lookup by id, not a walk of the pattern")
			assert.LessOrEqual(t, len(f.TraceIDs), patternChunk)
		}
		assert.NotEmpty(t, rd.lookups)
	}
	assert.Equal(t, want, got, "every run of the pattern once, newest first, and no other")
	_, body := get(t, ts.URL+"/?pattern="+pid+"&since="+time.Unix(0, t0+1000*int64(time.Minute)).UTC().Format(time.RFC3339))
	assert.Contains(t, body, "of 133 runs", "runs 1000-1399 of the pattern: 1002, 1005, ..., 1398")
}
