// SPDX-License-Identifier: Apache-2.0

package erase

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/dataset"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/sqlitestore"
	"github.com/runagain/runagain/internal/store/storetest"
)

func dirHolds(t *testing.T, dir, v string) bool {
	hit := false
	require.NoError(t, filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		hit = hit || bytes.Contains(b, []byte(v))
		return err
	}))
	return hit
}

// TestDatasetsRefusedUnlessRemoved: a run frozen in a dataset is a copy the erasure must not
// leave behind silently. Without RemoveFromDatasets the erasure is refused, naming the version
// and case, and nothing is deleted; with it, the version is replaced by one without the case
// (the other case kept, the erased case's files gone from the bucket) and the run is erased.
// A version left without cases is removed.
func TestDatasetsRefusedUnlessRemoved(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	hot, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{})
	require.NoError(t, err)
	defer hot.Close()
	a := storetest.Run{Seed: "ds-a", Session: "conv-a", Service: "svc", Model: "gpt-4.1", Start: 1e9, LLMCalls: 1}
	b := storetest.Run{Seed: "ds-b", Session: "conv-b", Service: "svc", Model: "gpt-4.1", Start: 2e9, LLMCalls: 1}
	_, err = hot.WriteTraces(ctx, storetest.Traces(a, b))
	require.NoError(t, err)
	ds, err := dataset.Open(ctx, dataset.DefaultURL(dir))
	require.NoError(t, err)
	defer ds.Close()
	idA, idB := storetest.TraceID("ds-a").String(), storetest.TraceID("ds-b").String()
	freeze := func(id string, r storetest.Run, secret string) *dataset.Case {
		td := storetest.Traces(r)
		store.EachSpan(td, func(s ptrace.Span) {
			s.Attributes().Remove("gen_ai.output.messages_ref") // storetest names an object that does not exist
			s.Attributes().PutStr("app.secret", secret)
		})
		c, err := dataset.Freeze(id, storetest.TraceID(r.Seed).String(), td, plog.NewLogs(), nil)
		require.NoError(t, err)
		return c
	}
	v1, _, err := ds.Put(ctx, "weather", "two runs", []*dataset.Case{freeze("case-a", a, "FROZEN-A-91c"), freeze("case-b", b, "FROZEN-B-37d")})
	require.NoError(t, err)
	e := &Eraser{Tiers: []Tier{{Name: "hot", Eraser: hot, Compact: hot.Compact}}, Refs: hot, Datasets: ds}

	_, err = e.Run(ctx, Request{Session: "conv-a"})
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrInDatasets))
	assert.Contains(t, err.Error(), "weather@"+dataset.Short(v1.Version))
	assert.Contains(t, err.Error(), "case-a")
	assert.Contains(t, err.Error(), "--remove-from-datasets")
	_, err = hot.Run(ctx, idA)
	require.NoError(t, err, "refused before deleting anything")

	rep, err := e.Run(ctx, Request{Session: "conv-a", RemoveFromDatasets: true})
	require.NoError(t, err)
	assert.Equal(t, []string{idA}, rep.Erasure.TraceIDs)
	require.Len(t, rep.Datasets, 1)
	assert.Contains(t, rep.Datasets[0], "removed 1 of 2 cases (case-a); replaced by weather@")
	_, err = hot.Run(ctx, idA)
	assert.ErrorIs(t, err, store.ErrNotFound)
	vs, err := ds.Versions(ctx, "weather")
	require.NoError(t, err)
	require.Len(t, vs, 1)
	assert.NotEqual(t, v1.Version, vs[0].Version)
	require.Len(t, vs[0].Cases, 1)
	assert.Equal(t, "case-b", vs[0].Cases[0].ID)
	assert.Equal(t, "two runs", vs[0].Note)
	assert.False(t, dirHolds(t, filepath.Join(dir, "datasets"), "FROZEN-A-91c"), "the erased case's files are gone")
	assert.True(t, dirHolds(t, filepath.Join(dir, "datasets"), "FROZEN-B-37d"))

	rep, err = e.Run(ctx, Request{TraceID: idB, RemoveFromDatasets: true})
	require.NoError(t, err)
	assert.Contains(t, rep.Datasets[0], "version removed")
	_, err = ds.Versions(ctx, "weather")
	assert.ErrorIs(t, err, dataset.ErrNotFound)
	assert.False(t, dirHolds(t, filepath.Join(dir, "datasets"), "FROZEN-B-37d"))
	_, err = hot.Run(ctx, idB)
	assert.ErrorIs(t, err, store.ErrNotFound)

	_, err = e.Run(ctx, Request{TraceID: "xyz"})
	assert.ErrorContains(t, err, "32 hex characters")
	_, err = e.Run(ctx, Request{Session: "s", TraceID: idB})
	assert.ErrorContains(t, err, "not both")
}
