// SPDX-License-Identifier: Apache-2.0

package proxy

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/fixture"
)

// TestJSONRPCIDLeftOutOfMatching: two MCP tools/call requests that differ only in their JSON-RPC
// id match; a different argument does not.
func TestJSONRPCIDLeftOutOfMatching(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:9/mcp")
	var n Normalizer
	rec := n.normalize("POST", u, "application/json", []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"w","arguments":{"city":"Paris"}}}`))
	live := n.normalize("POST", u, "application/json", []byte(`{"id": 41, "jsonrpc":"2.0","method":"tools/call","params":{"name":"w","arguments":{"city":"Paris"}}}`))
	other := n.normalize("POST", u, "application/json", []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"w","arguments":{"city":"Lyon"}}}`))
	assert.Equal(t, rec.key(), live.key())
	assert.NotEqual(t, rec.key(), other.key())
	assert.Equal(t, "3", rec.rpcID)
	assert.Equal(t, "41", live.rpcID)
	// A JSON body that is not a JSON-RPC request keeps its id.
	plain := n.normalize("POST", u, "application/json", []byte(`{"id":3}`))
	assert.Contains(t, plain.bkey, `"id":3`)
}

// TestJSONRPCResponseAnswersLiveID: the recorded response is served with the live request's id,
// every other byte as recorded, in a JSON body and in an SSE stream (chunk offsets follow).
func TestJSONRPCResponseAnswersLiveID(t *testing.T) {
	rec, live := &request{rpcID: "3"}, &request{rpcID: `"abc"`}
	ex := &fixture.Exchange{ResponseBody: []byte(`{"result":{"content":[{"id":3,"text":"x"}]},"jsonrpc":"2.0", "id" : 3}`)}
	got := rpcExchange(ex, rec, live)
	assert.Equal(t, `{"result":{"content":[{"id":3,"text":"x"}]},"jsonrpc":"2.0", "id" : "abc"}`, string(got.ResponseBody), "nested ids untouched")
	assert.Equal(t, `{"result":{"content":[{"id":3,"text":"x"}]},"jsonrpc":"2.0", "id" : 3}`, string(ex.ResponseBody), "the recording is not modified")

	sse := []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n")
	ex = &fixture.Exchange{ResponseBody: sse, Chunks: fixture.SplitEvents(sse)}
	got = rpcExchange(ex, rec, live)
	want := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"result\":{}}\n\n"
	assert.Equal(t, want, string(got.ResponseBody))
	require.Len(t, got.Chunks, 2)
	assert.Equal(t, fixture.SplitEvents([]byte(want)), []fixture.Chunk{{Offset: got.Chunks[0].Offset, Size: got.Chunks[0].Size}, {Offset: got.Chunks[1].Offset, Size: got.Chunks[1].Size}})

	same := &request{rpcID: "3"}
	assert.Same(t, ex, rpcExchange(ex, rec, same), "same id: served as recorded")
}
