//go:build chdb

// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/erase"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/clickhousestore"
	"github.com/runagain/runagain/internal/store/storetest"
	"github.com/runagain/runagain/internal/testutil/chdbtest"
)

// TestEraseSessionOnChDB: a session written by the tiered exporter to every ClickHouse tier
// (contrib otel_traces/otel_logs, our warm and cold tables) is erased with the ClickHouse
// erasers: its runs are found in each tier, its rows deleted by mutations and its payload
// references reported, while another session stays readable and its references stay live.
func TestEraseSessionOnChDB(t *testing.T) {
	ctx := context.Background()
	srv := chdbtest.Start(t)
	start := time.Now().Add(-time.Minute).UnixNano()
	gone1 := storetest.Run{Seed: "ch-gone-1", Session: "conv-gone", Service: "svc", Agent: "weather", Model: "gpt-4.1", Start: start, LLMCalls: 1, ToolFail: true}
	gone2 := storetest.Run{Seed: "ch-gone-2", Session: "conv-gone", Service: "svc", Agent: "weather", Model: "gpt-4.1", Start: start + 1e9, LLMCalls: 1}
	kept := storetest.Run{Seed: "ch-kept", Session: "conv-kept", Service: "svc", Agent: "weather", Model: "gpt-4.1", Start: start + 2e9, LLMCalls: 1}
	writeTieredChDB(ctx, t, srv.Endpoint, storetest.Traces(gone1, gone2, kept))

	db, err := clickhousestore.OpenDB(srv.Endpoint, "", "", nil)
	require.NoError(t, err)
	defer db.Close()
	hot := &clickhousestore.HotEraser{DB: db, Tables: clickhousestore.HotTables{Database: "otel"}}
	schema := clickhousestore.Schema{Database: "runagain"}
	e := &erase.Eraser{Refs: hot, Tiers: []erase.Tier{
		{Name: "hot", Eraser: hot},
		{Name: "warm", Eraser: &clickhousestore.WarmEraser{DB: db, Schema: schema}},
		{Name: "cold", Eraser: &clickhousestore.ColdEraser{DB: db, Schema: schema}},
	}}
	var refs []string
	require.NoError(t, hot.EachPayloadRef(ctx, func(u string) bool { refs = append(refs, u); return true }))
	assert.Equal(t, []string{"file:///payloads/ab/cd"}, refs, "storetest's LLM spans reference one object")

	rep, err := e.Run(ctx, erase.Request{Session: "conv-gone"})
	require.NoError(t, err)
	ids := []string{storetest.TraceID("ch-gone-1").String(), storetest.TraceID("ch-gone-2").String()}
	assert.ElementsMatch(t, ids, rep.Erasure.TraceIDs)
	require.Len(t, rep.Tiers, 3)
	assert.EqualValues(t, gone1.Spans()+gone2.Spans(), rep.Tiers[0].Counts["spans"])
	assert.Equal(t, []string{"file:///payloads/ab/cd"}, rep.Tiers[0].PayloadRefs)
	assert.EqualValues(t, gone1.Spans()+gone2.Spans(), rep.Tiers[1].Counts["span_summaries"])
	assert.EqualValues(t, 1, rep.Tiers[1].Counts["key_events"], "the exception")
	assert.Positive(t, rep.Tiers[2].Counts["session_partials"])

	r := clickhousestore.Open(db, clickhousestore.HotTables{Database: "otel"}, schema, nil)
	for _, id := range ids {
		_, err := r.Run(ctx, id)
		assert.ErrorIs(t, err, store.ErrNotFound, "run %s in no tier", id)
	}
	rows, err := r.Runs(ctx, store.RunFilter{})
	require.NoError(t, err)
	for _, row := range rows {
		assert.Equal(t, "conv-kept", row.SessionID, "%s tier still lists %s", row.Tier, row.TraceID)
	}
	got, err := r.Run(ctx, storetest.TraceID("ch-kept").String())
	require.NoError(t, err)
	assert.Equal(t, "hot", got.Tier)
	refs = nil
	require.NoError(t, hot.EachPayloadRef(ctx, func(u string) bool { refs = append(refs, u); return true }))
	assert.Equal(t, []string{"file:///payloads/ab/cd"}, refs, "the kept session still references it")

	again, err := e.Run(ctx, erase.Request{Session: "conv-gone"})
	require.NoError(t, err)
	assert.Empty(t, again.Erasure.TraceIDs, "nothing left of the session")
}
