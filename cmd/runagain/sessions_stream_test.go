// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/store"
)

// The streamed JSON array of `sessions --json` is byte for byte what printJSON writes for the
// whole list, for none, one and several runs.
func TestJSONArrayMatchesPrintJSON(t *testing.T) {
	all := []store.RunSummary{
		{SessionID: "s1", TraceID: "a", Start: time.Unix(10, 0).UTC(), Models: []string{"m"}},
		{SessionID: "s2", TraceID: "b", Start: time.Unix(5, 0).UTC(), Errors: 2},
		{SessionID: "s3", TraceID: "c", Start: time.Unix(1, 0).UTC()},
	}
	for n := 0; n <= len(all); n++ {
		runs := all[:n]
		var want, got bytes.Buffer
		require.NoError(t, printJSON(&want, runs))
		a := &jsonArray{w: &got}
		for _, r := range runs {
			require.NoError(t, a.add(r))
		}
		require.NoError(t, a.close())
		assert.Equal(t, want.String(), got.String(), "%d runs", n)
	}
}
