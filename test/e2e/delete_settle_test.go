// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/store/coldstore"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestDeleteSettlesWhenQueuesDeliver: runagain delete runs right after the real collector
// stored a session in its hot tier, while the session's records still wait in the cold tier's
// sending queue (config/default.yaml flushes it every 10 s). Its second pass starts as soon as
// the collector's own metrics show every tiered queue emptied once, not after the whole
// --settle (here 10 minutes, which the test would otherwise wait out); it then finds no record
// of the session in any tier, the cold partials that arrived after the first pass included.
func TestDeleteSettlesWhenQueuesDeliver(t *testing.T) {
	dataDir := t.TempDir()
	c := collectortest.Start(t, collectortest.Options{DataDir: dataDir})
	prompt := "You are a terse assistant. "
	a := newPlantedRun(0xa1, "conv-settle-me", "settle", prompt)
	b := newPlantedRun(0xa2, "conv-settle-keep", "keep", prompt)
	for _, r := range []plantedRun{a, b} {
		sendOTLP(t, c, r.b.td, r.b.ld)
	}
	for _, r := range []plantedRun{a, b} {
		waitShow(t, c, r.b.id(), 2, 1)
	}

	out := cli(t, c, "--config", c.Config, "delete", "--session", "conv-settle-me", "--settle", "10m")
	t.Logf("runagain delete --session:\n%s", out)
	assert.Contains(t, out, "the collector's sending queues delivered what they held")
	assert.Contains(t, out, "second pass, after ")

	// Whatever the queues held has reached the tiers and been erased: the cold tier holds the
	// kept session only, and the erased run is gone.
	st, err := coldstore.Open(context.Background(), filepath.Join(dataDir, "cold"), coldstore.Options{ReadOnly: true})
	require.NoError(t, err)
	defer st.Close()
	ss, err := st.Sessions(context.Background())
	require.NoError(t, err)
	var ids []string
	for _, s := range ss {
		ids = append(ids, s.SessionID)
	}
	assert.NotContains(t, ids, "conv-settle-me")
	assert.Contains(t, ids, "conv-settle-keep", "the cold queue delivered before the second pass")
	_, errOut, err := c.CLI("show", a.b.id())
	assert.Error(t, err, "the erased run is gone")
	assert.Contains(t, errOut, "no run with trace id")
	assert.Contains(t, cli(t, c, "show", "--no-rehydrate", b.b.id()), b.small, "the other session stays")
}
