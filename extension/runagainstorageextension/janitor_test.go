// SPDX-License-Identifier: Apache-2.0

package runagainstorageextension

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/runagain/runagain/internal/pins"
)

// TestJanitorCutoffBeforePins: a janitor pass takes its cutoff before it reads the pinned runs.
// The pin source here stands for a dataset pinning a run while the pass reads the pins and the
// clock moving past that run's retention meanwhile (as a test's injected clock does, or a slow
// read of the dataset store): the pass must still use the cutoff of its start, so the run, not
// in the pins it read, is not deleted with a cutoff that is later than those pins.
func TestJanitorCutoffBeforePins(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	now := start
	const retention = 24 * time.Hour
	var cutoffs []time.Time
	j := newJanitor(openOptions{logger: zap.NewNop(), every: time.Hour, now: func() time.Time { return now },
		pins: func() pins.Source {
			return pins.Func(func(context.Context) (map[string]bool, error) {
				now = now.Add(2 * retention) // time passes while the pins are read
				return map[string]bool{}, nil
			})
		}}, "hot", retention, func(_ context.Context, cutoff time.Time, _ map[string]bool) (int64, error) {
		cutoffs = append(cutoffs, cutoff)
		return 0, nil
	})
	_, err := j.runOnce(context.Background())
	require.NoError(t, err)
	require.Len(t, cutoffs, 1)
	assert.Equal(t, start.Add(-retention), cutoffs[0], "the cutoff is the pass's start less the retention")
}
