// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/otlpid"
	"github.com/runagain/runagain/internal/store/sqlitestore"
)

// TestDiffTraceIDPrefixes: diff (and show) take a unique trace-id prefix as the UI does; an
// ambiguous prefix is refused naming every run it matches, and one that matches nothing says so.
func TestDiffTraceIDPrefixes(t *testing.T) {
	dir := t.TempDir()
	db, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{})
	require.NoError(t, err)
	ids := []string{"abcdef1100000000000000000000000a", "abcdef2200000000000000000000000b", "0123456700000000000000000000000c"}
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for i, id := range ids {
		tid, err := otlpid.ParseTraceID(id)
		require.NoError(t, err)
		td := ptrace.NewTraces()
		s := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(pcommon.SpanID{1, byte(i)})
		s.SetName("chat gpt-4o")
		s.Attributes().PutStr("gen_ai.operation.name", "chat")
		s.Attributes().PutStr("gen_ai.request.model", "gpt-4o")
		s.Attributes().PutInt("gen_ai.usage.input_tokens", int64(10+i))
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(i) * time.Minute)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(i)*time.Minute + time.Second)))
		_, err = db.WriteTraces(context.Background(), td)
		require.NoError(t, err)
	}
	require.NoError(t, db.Close())
	saved := dataDirFlag
	t.Cleanup(func() { dataDirFlag = saved })

	out, _, err := runCLI(t, "--data-dir", dir, "diff", "--json", "abcdef1", "0123456")
	require.NoError(t, err)
	assert.Contains(t, out, ids[0], "the prefix named the full run")
	assert.Contains(t, out, ids[2])

	_, _, err = runCLI(t, "--data-dir", dir, "diff", "abcdef", "0123456")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ambiguous")
	assert.Contains(t, err.Error(), ids[0])
	assert.Contains(t, err.Error(), ids[1])

	_, _, err = runCLI(t, "--data-dir", dir, "diff", "abcdef1", "fedcba98")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no run's trace id starts with fedcba98")

	_, _, err = runCLI(t, "--data-dir", dir, "diff", "abc", "0123456")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a prefix of at least 6")

	out, _, err = runCLI(t, "--data-dir", dir, "show", "abcdef22")
	require.NoError(t, err)
	assert.Contains(t, out, ids[1])
}
