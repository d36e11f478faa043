// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/store/storetest"
)

// TestSessionsSearchBounded: the text and agent filters read at most maxSearched runs of the
// range, newest first, and the page says so; within the bound they list what reading every run
// lists, and a range narrowed to older runs finds those.
func TestSessionsSearchBounded(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hot.db")
	w, err := sqlitestore.Open(path, sqlitestore.Options{})
	require.NoError(t, err)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	td := ptrace.NewTraces()
	for i := 0; i < 20; i++ {
		agent := "helper"
		if i < 2 {
			agent = "archivist" // the two oldest runs
		}
		storetest.Add(td, storetest.Run{Seed: fmt.Sprintf("s-%d", i), Service: "svc", Agent: agent, Model: "gpt-4.1",
			LLMCalls: 1, Start: t0.Add(time.Duration(i) * time.Minute).UnixNano()})
	}
	_, err = w.WriteTraces(ctx, td)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	r, err := sqlitestore.Open(path, sqlitestore.Options{ReadOnly: true})
	require.NoError(t, err)
	defer r.Close()
	s, err := New(Options{Reader: r, Now: func() time.Time { return t0.Add(time.Hour) }})
	require.NoError(t, err)
	defer s.Close()
	get := func(q url.Values) string {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", "/?"+q.Encode(), nil))
		require.Equal(t, 200, rec.Code)
		return rec.Body.String()
	}

	saved := maxSearched
	t.Cleanup(func() { maxSearched = saved })
	for _, q := range []url.Values{{"agent": {"archivist"}}, {"q": {"archivist"}}} {
		maxSearched = saved
		page, n, more, searched, err := s.searchSessions(ctx, SessionsFilter{Agent: q.Get("agent"), Query: q.Get("q"), Page: 1}, time.Time{}, time.Time{})
		require.NoError(t, err)
		assert.Equal(t, 2, n, "%v: within the bound, both runs", q)
		assert.Len(t, page, 2)
		assert.False(t, more)
		assert.Zero(t, searched)
		assert.NotContains(t, get(q), `id="searched"`)

		maxSearched = 10
		page, n, more, searched, err = s.searchSessions(ctx, SessionsFilter{Agent: q.Get("agent"), Query: q.Get("q"), Page: 1}, time.Time{}, time.Time{})
		require.NoError(t, err)
		assert.Zero(t, n, "%v: the newest 10 runs have none", q)
		assert.Empty(t, page)
		assert.True(t, more)
		assert.Equal(t, 10, searched)
		assert.Contains(t, get(q), "Searched the newest 10 runs of the range")

		q.Set("until", t0.Add(5*time.Minute).Format(time.RFC3339))
		body := get(q)
		assert.NotContains(t, body, `id="searched"`, "%v: the narrowed range holds 5 runs", q)
		assert.Contains(t, body, "1–2 of 2 runs")
	}
}
