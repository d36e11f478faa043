// SPDX-License-Identifier: Apache-2.0

package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSessionPageFiltersThenLimits(t *testing.T) {
	at := func(h int) int64 { return time.Date(2026, 11, 30, h, 0, 0, 0, time.UTC).UnixNano() }
	ss := []Session{ // newest first, as MergePartials returns them
		{SessionID: "c", FirstSeen: at(5), LastSeen: at(6), TraceIDs: []string{"t5"}},
		{SessionID: "b", FirstSeen: at(3), LastSeen: at(4), TraceIDs: []string{"t3", "t4"}},
		{SessionID: "a", FirstSeen: at(1), LastSeen: at(2), TraceIDs: []string{"t1"}},
	}
	ids := func(rows []RunSummary) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.SessionID)
		}
		return out
	}
	assert.Equal(t, []string{"c", "b", "a"}, ids(SessionPage(ss, RunFilter{})))
	assert.Equal(t, []string{"c", "b"}, ids(SessionPage(ss, RunFilter{Limit: 2})))
	assert.Equal(t, []string{"b"}, ids(SessionPage(ss, RunFilter{Since: time.Unix(0, at(2)), Until: time.Unix(0, at(5)), Limit: 2})),
		"the limit counts kept rows only")
	assert.Equal(t, []string{"a"}, ids(SessionPage(ss, RunFilter{SessionID: "a", Limit: 1})))
	page := SessionPage(ss, RunFilter{SessionID: "b"})
	assert.Equal(t, "t4", page[0].TraceID, "the session's latest run")
	assert.Equal(t, TierCold, page[0].Tier)
	assert.Empty(t, SessionPage(nil, RunFilter{}))
}
