// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/store"
)

// TestAttrKeysHoldEveryUsageKey: every usage spelling genai.TokenUsage reads
// (genai.UsageKeys, cache_write.input_tokens of semantic-conventions-genai included) is kept in a
// span's summary and written by the compact form as its one-byte index, not its text; the stored
// value decodes to the summary's JSON text byte for byte.
func TestAttrKeysHoldEveryUsageKey(t *testing.T) {
	td := ptrace.NewTraces()
	span := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	span.SetTraceID([16]byte{1})
	span.SetSpanID([8]byte{1})
	span.Attributes().PutStr(genai.AttrOperationName, "chat")
	span.Attributes().PutStr(genai.AttrRequestModel, "claude-sonnet-4")
	for i, k := range genai.UsageKeys() {
		assert.True(t, store.SummaryAttribute(k), "summaries keep %s", k)
		_, ok := attrKeyIndex[strconv.Quote(k)]
		assert.True(t, ok, "attrKeys holds %s", k)
		span.Attributes().PutInt(k, int64(1000+i))
	}
	sums, _ := store.Summarize(td, nil, nil)
	require.Len(t, sums, 1)
	s := sums[0]
	stored, _ := encodeAttrs(nil, &s)
	b, ok := stored.([]byte)
	require.True(t, ok, "compact form for %s", s.Attributes)
	for _, k := range genai.UsageKeys() {
		assert.Contains(t, s.Attributes, strconv.Quote(k))
		assert.False(t, bytes.Contains(b, []byte(k)), "%s is written as its index, not its text", k)
	}
	back, err := decodeAttrs(&s, b)
	require.NoError(t, err)
	assert.Equal(t, s.Attributes, back)
}
