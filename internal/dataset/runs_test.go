// SPDX-License-Identifier: Apache-2.0

package dataset

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// runsReader serves runs by trace id, as a store's hot tier does.
type runsReader map[string]*store.Run

func (r runsReader) Runs(context.Context, store.RunFilter) ([]store.RunSummary, error) {
	return nil, nil
}

func (r runsReader) Run(_ context.Context, id string) (*store.Run, error) {
	if run, ok := r[id]; ok {
		return run, nil
	}
	return nil, store.ErrNotFound
}
func (r runsReader) Close() error { return nil }

// FreezeRuns is `dataset add NAME TRACE_ID...`: every run given becomes a case (trace ids as
// typed, spaces around them allowed), problems of each are returned in order, and a run the
// store does not have, or a trace id that is not one, is an error naming it.
func TestFreezeRuns(t *testing.T) {
	ctx := context.Background()
	a, b := chatRun(t, 1, "sunny", true), chatRun(t, 2, "rain", false)
	rd := runsReader{a.TraceID: a, b.TraceID: b}
	cases, problems, err := FreezeRuns(ctx, rd, RunsAdd{TraceIDs: []string{" " + a.TraceID + "\n", b.TraceID}, Expects: []string{"output~sun"}})
	require.NoError(t, err)
	require.Len(t, cases, 2)
	assert.Equal(t, a.TraceID, cases[0].ID)
	assert.Equal(t, b.TraceID, cases[1].ID)
	require.Len(t, problems, 2, "b has nothing to replay and does not say sun")
	assert.Contains(t, problems[0], "no recorded HTTP exchanges")
	assert.Contains(t, problems[1], "the recorded run itself fails")

	st := openStore(t, t.TempDir())
	m, created, err := st.Add(ctx, "smoke", "first", cases)
	require.NoError(t, err)
	assert.True(t, created)

	_, _, err = FreezeRuns(ctx, rd, RunsAdd{TraceIDs: []string{pcommon.TraceID{15: 9}.String()}})
	require.ErrorIs(t, err, store.ErrNotFound)
	assert.Contains(t, err.Error(), pcommon.TraceID{15: 9}.String())
	_, _, err = FreezeRuns(ctx, rd, RunsAdd{TraceIDs: []string{"not-a-trace"}})
	require.Error(t, err)

	// List names each dataset with its newest version.
	_, _, err = st.Add(ctx, "smoke", "second", cases[:1])
	require.NoError(t, err)
	ls, err := st.List(ctx)
	require.NoError(t, err)
	require.Len(t, ls, 1)
	assert.Equal(t, "smoke", ls[0].Name)
	assert.Equal(t, 1, ls[0].Versions, "the same two cases again: the same version")
	assert.Equal(t, m.Version, ls[0].Latest)
	assert.Equal(t, 2, ls[0].Cases)

	// Select keeps the version's order and names a case it does not have.
	sel, err := Select(m, cases, []string{b.TraceID})
	require.NoError(t, err)
	require.Len(t, sel, 1)
	assert.Equal(t, b.TraceID, sel[0].ID)
	_, err = Select(m, cases, []string{a.TraceID, "nope"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--case nope")
	all, err := Select(m, cases, nil)
	require.NoError(t, err)
	assert.Len(t, all, 2)
}

// A case's input is expect.yaml's, else its run's first user message, read through its view.
func TestCaseInput(t *testing.T) {
	ctx := context.Background()
	c, _, err := NewCase(viewOf(t, chatRun(t, 1, "sunny", true)), "", "", nil)
	require.NoError(t, err)
	v, err := c.View(ctx, runview.Options{})
	require.NoError(t, err)
	assert.Equal(t, "hi", c.Input(v))
	assert.Empty(t, c.Input(nil))
	c.Expect.Input = "what is the weather"
	assert.Equal(t, "what is the weather", c.Input(v))
}
