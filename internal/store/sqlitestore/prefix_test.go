// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"context"
	hexpkg "encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

// retraced is a storetest run whose spans carry trace id hex instead of storetest's.
func retraced(t *testing.T, hex string, r storetest.Run) ptrace.Traces {
	t.Helper()
	b, err := hexpkg.DecodeString(hex)
	require.NoError(t, err)
	tid := pcommon.TraceID(b)
	td := storetest.Traces(r)
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < spans.Len(); i++ {
		spans.At(i).SetTraceID(tid)
	}
	return td
}

// TestTraceIDPrefixFromRunIndex: store.ResolveTraceID over real hot and warm files (store.Tiered,
// as the CLI opens them, the hot file read-only) finds a prefix through each file's run index
// (TraceIDsWithPrefix, a key range): a run only the warm file holds, one of the hot file, an
// ambiguous prefix (more candidates than it names: "more than 5"), and none.
func TestTraceIDPrefixFromRunIndex(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	hot, err := Open(filepath.Join(dir, "hot.db"), Options{})
	require.NoError(t, err)
	warm, err := OpenWarm(filepath.Join(dir, "warm.db"), Options{})
	require.NoError(t, err)
	defer warm.Close()
	for i := 0; i < 8; i++ {
		td := retraced(t, fmt.Sprintf("abcdef%026x", i), storetest.Run{Seed: fmt.Sprint("p", i), Service: "s", LLMCalls: 1, Start: int64(i+1) * 1e9})
		_, err := hot.WriteTraces(ctx, td)
		require.NoError(t, err)
	}
	for i := 0; i < 50; i++ { // others, from storetest's trace ids
		_, err := hot.WriteTraces(ctx, storetest.Traces(storetest.Run{Seed: fmt.Sprint("o", i), Service: "s", LLMCalls: 1, Start: int64(100+i) * 1e9}))
		require.NoError(t, err)
	}
	warmOnly := "abcd01" + fmt.Sprintf("%026x", 7)
	require.NoError(t, warm.WriteTraces(ctx, retraced(t, warmOnly, storetest.Run{Seed: "w", Service: "s", LLMCalls: 1, Start: 5e11})))
	require.NoError(t, hot.Close())
	ro, err := Open(filepath.Join(dir, "hot.db"), Options{ReadOnly: true})
	require.NoError(t, err)
	tiered := store.NewTiered(ro, warm)
	defer tiered.Close()

	ids, err := ro.TraceIDsWithPrefix(ctx, "abcdef", 3)
	require.NoError(t, err)
	assert.Equal(t, []string{fmt.Sprintf("abcdef%026x", 0), fmt.Sprintf("abcdef%026x", 1), fmt.Sprintf("abcdef%026x", 2)}, ids)

	got, err := store.ResolveTraceID(ctx, tiered, "ABCD01")
	require.NoError(t, err)
	assert.Equal(t, warmOnly, got, "a run only the warm file holds")
	other := storetest.TraceID("o7").String()
	got, err = store.ResolveTraceID(ctx, tiered, other[:12])
	require.NoError(t, err)
	assert.Equal(t, other, got, "a run of the hot file")
	_, err = store.ResolveTraceID(ctx, tiered, "abcdef")
	require.True(t, errors.Is(err, store.ErrAmbiguousTraceID), "%v", err)
	assert.Contains(t, err.Error(), "abcdef matches more than 5 runs: abcdef"+fmt.Sprintf("%026x", 0))
	_, err = store.ResolveTraceID(ctx, tiered, "abcd0")
	require.True(t, errors.Is(err, store.ErrBadTraceID), "%v", err)
	_, err = store.ResolveTraceID(ctx, tiered, "fedcba")
	require.True(t, errors.Is(err, store.ErrNotFound), "%v", err)
}
