// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

// multiSession is a run of session "conv-main" one of whose LLM spans names another session,
// "conv-aux" (a sub-agent's conversation inside an orchestrator's trace): the run index lists
// the run under conv-main (the greatest), run_sessions under conv-aux.
var multiSession = storetest.Run{Seed: "ms", Session: "conv-main", Service: "svc", Model: "gpt-4.1", Start: 1_000_000_000, LLMCalls: 3}

// subSession moves the last LLM span of r in td to session "conv-aux" and returns td.
func subSession(td ptrace.Traces, r storetest.Run) ptrace.Traces {
	var last ptrace.Span
	store.EachSpan(td, func(s ptrace.Span) {
		if s.TraceID() == storetest.TraceID(r.Seed) && !s.ParentSpanID().IsEmpty() {
			last = s
		}
	})
	last.Attributes().PutStr("gen_ai.conversation.id", "conv-aux")
	return td
}

// eachSpanAlone splits td into one request per span, in order.
func eachSpanAlone(td ptrace.Traces) []ptrace.Traces {
	var out []ptrace.Traces
	store.EachSpan(td, func(s ptrace.Span) {
		one := ptrace.NewTraces()
		rs := one.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "svc")
		s.CopyTo(rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty())
		out = append(out, one)
	})
	return out
}

// TestEraseOtherSessionOfRun: without an index on the spans' session (schema version 8), a run
// with a span of a session other than its own is still found by that session, however its spans
// arrived (one request; one span per request, so the index row is updated in place; a retried
// span replaced; part of it expired), and its erasure removes the whole run.
func TestEraseOtherSessionOfRun(t *testing.T) {
	ctx := context.Background()
	id := storetest.TraceID(multiSession.Seed).String()
	keep := storetest.Run{Seed: "mk", Session: "conv-keep", Service: "svc", Model: "gpt-4.1", Start: 2_000_000_000, LLMCalls: 1}
	for name, write := range map[string]func(*DB) error{
		"one request": func(d *DB) error {
			_, err := d.WriteTraces(ctx, subSession(storetest.Traces(multiSession, keep), multiSession))
			return err
		},
		"span by span, retried": func(d *DB) error {
			reqs := eachSpanAlone(subSession(storetest.Traces(multiSession), multiSession))
			for _, td := range append(reqs, reqs...) { // every span twice: the second replaces
				if _, err := d.WriteTraces(ctx, td); err != nil {
					return err
				}
			}
			_, err := d.WriteTraces(ctx, storetest.Traces(keep))
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := Open(filepath.Join(t.TempDir(), "hot.db"), Options{})
			require.NoError(t, err)
			defer d.Close()
			require.NoError(t, write(d))
			var n int
			require.NoError(t, d.SQL().QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name = 'spans_session'`).Scan(&n))
			assert.Zero(t, n, "version 8 has no index on the spans' session")
			for _, s := range []string{"conv-main", "conv-aux"} {
				ids, err := d.SessionTraces(ctx, s)
				require.NoError(t, err)
				assert.Equal(t, []string{id}, ids, s)
			}
			runs, err := d.Runs(ctx, store.RunFilter{SessionID: "conv-main"})
			require.NoError(t, err)
			require.Len(t, runs, 1, "listed under its own session")

			// The caller names the session only: the hot file finds its runs itself.
			r, err := d.Erase(ctx, store.Erasure{Session: "conv-aux"})
			require.NoError(t, err)
			assert.EqualValues(t, multiSession.Spans(), r.Counts["spans"], "the whole run of the session's span")
			for _, q := range []string{`SELECT COUNT(*) FROM spans WHERE trace_id = ?`, `SELECT COUNT(*) FROM runs WHERE trace_id = ?`,
				`SELECT COUNT(*) FROM run_sessions WHERE trace_id = ?`} {
				require.NoError(t, d.SQL().QueryRow(q, id).Scan(&n))
				assert.Zero(t, n, q)
			}
			ids, err := d.SessionTraces(ctx, "conv-keep")
			require.NoError(t, err)
			assert.Len(t, ids, 1, "another session is kept")
		})
	}
}

// TestRunSessionsFollowExpiry: expiring the span of the other session leaves the run listed under
// its own session only, and the run's other sessions are recomputed with it.
func TestRunSessionsFollowExpiry(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	d, err := Open(filepath.Join(t.TempDir(), "hot.db"), Options{Now: func() time.Time { return now }})
	require.NoError(t, err)
	defer d.Close()
	reqs := eachSpanAlone(subSession(storetest.Traces(multiSession), multiSession))
	// The span of conv-aux is the last: write it first, an hour earlier.
	last := reqs[len(reqs)-1]
	now = now.Add(-time.Hour)
	_, err = d.WriteTraces(ctx, last)
	require.NoError(t, err)
	now = now.Add(time.Hour)
	for _, td := range reqs[:len(reqs)-1] {
		_, err = d.WriteTraces(ctx, td)
		require.NoError(t, err)
	}
	ids, err := d.SessionTraces(ctx, "conv-aux")
	require.NoError(t, err)
	require.Len(t, ids, 1)
	n, err := d.Expire(ctx, now.Add(-time.Minute))
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	ids, err = d.SessionTraces(ctx, "conv-aux")
	require.NoError(t, err)
	assert.Empty(t, ids, "no span of conv-aux is left")
	ids, err = d.SessionTraces(ctx, "conv-main")
	require.NoError(t, err)
	assert.Len(t, ids, 1)
}

// TestVersion7FileReadAndMigrated: a version 7 file (spans_session index, no run_sessions) is read
// as it is by a reader, its sessions found through spans_session; opened for writing it loses the
// index and gains run_sessions from its span rows, and an erasure by the run's other session
// removes the run.
func TestVersion7FileReadAndMigrated(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hot.db")
	id := storetest.TraceID(multiSession.Seed).String()
	w, err := Open(path, Options{})
	require.NoError(t, err)
	_, err = w.WriteTraces(ctx, subSession(storetest.Traces(multiSession), multiSession))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	raw, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = raw.Exec(`DROP TRIGGER spans_sessions_delete; DROP TABLE run_sessions;
	  CREATE INDEX spans_session ON spans (session_id);
	  PRAGMA user_version = 7;`)
	require.NoError(t, err)
	require.NoError(t, raw.Close())

	ro, err := Open(path, Options{ReadOnly: true})
	require.NoError(t, err)
	ids, err := ro.SessionTraces(ctx, "conv-aux")
	require.NoError(t, err)
	assert.Equal(t, []string{id}, ids, "found through spans_session")
	runs, err := ro.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.NoError(t, ro.Close())

	w, err = Open(path, Options{})
	require.NoError(t, err)
	defer w.Close()
	var v, n int
	require.NoError(t, w.SQL().QueryRow(`PRAGMA user_version`).Scan(&v))
	assert.Equal(t, SchemaVersion, v)
	require.NoError(t, w.SQL().QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name = 'spans_session'`).Scan(&n))
	assert.Zero(t, n, "the index is dropped")
	var s string
	require.NoError(t, w.SQL().QueryRow(`SELECT session_id FROM run_sessions WHERE trace_id = ?`, id).Scan(&s))
	assert.Equal(t, "conv-aux", s, "filled from the span rows")
	r, err := w.Erase(ctx, store.Erasure{Session: "conv-aux"})
	require.NoError(t, err)
	assert.EqualValues(t, multiSession.Spans(), r.Counts["spans"])
}
