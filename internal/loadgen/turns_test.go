// SPDX-License-Identifier: Apache-2.0

package loadgen

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/otel/attribute"
)

func TestTurnsRoundRobin(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Turns = 3
	now := time.Unix(1_800_000_000, 0)
	var convs []string
	for specs := range Turns(cfg, 2, now) {
		require.NotEmpty(t, specs)
		for _, kv := range specs[0].Attrs {
			if string(kv.Key) == "gen_ai.conversation.id" {
				convs = append(convs, kv.Value.AsString())
			}
		}
	}
	a, b := NewSession(&cfg, 0).ID(), NewSession(&cfg, 1).ID()
	assert.Equal(t, []string{a, b, a, b, a, b}, convs, "every turn of both sessions, alternating")
	n := 0
	for range Turns(cfg, 2, now) {
		if n++; n == 2 {
			break
		}
	}
	assert.Equal(t, 2, n, "stops when the loop breaks")
}

func TestPutAttrs(t *testing.T) {
	m := pcommon.NewMap()
	PutAttrs(m, []attribute.KeyValue{attribute.String("s", "v"), attribute.Int64("i", 3), attribute.Float64("f", 1.5),
		attribute.Bool("b", true), attribute.StringSlice("l", []string{"x", "y"}), attribute.Int64Slice("o", []int64{1})})
	assert.Equal(t, map[string]any{"s": "v", "i": int64(3), "f": 1.5, "b": true, "l": []any{"x", "y"}, "o": "[1]"}, m.AsRaw())
}
