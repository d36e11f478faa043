// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"strconv"
	"strings"
	"testing"
)

// BenchmarkRedactShortElements is RedactValue on a JSON array of 1,536 numbers (an embedding or
// a tool's numeric result), a new array each time (its last element changes). Rows, same run:
// "nocache" (no CleanCache: the baseline), "leaf" (the CleanCache with the earlier scan) and
// "elem" (array elements looked up whole). An array with no element long enough to be looked up
// is walked whole, not element by element (which cost 4.4x nocache). Compare rows as ratios.
//
//	go test -run '^$' -bench RedactShortElements -benchmem ./internal/redact/
func BenchmarkRedactShortElements(b *testing.B) {
	var sb strings.Builder
	sb.WriteByte('[')
	for i := range 1536 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.FormatFloat(float64(i)*0.000123, 'f', 6, 64))
	}
	sb.WriteByte(']')
	v := sb.String()
	for _, mode := range []string{"nocache", "leaf", "elem"} {
		b.Run(mode, func(b *testing.B) {
			cfg := Config{HashKey: []byte("k")}
			if mode != "nocache" {
				cfg.CleanCache = NewCleanCache(8 << 20)
			}
			r, _ := New(cfg)
			r.legacyScan = mode == "leaf"
			i := 0
			for b.Loop() {
				i++
				r.RedactValue("tool.result", v[:len(v)-1]+","+strconv.Itoa(i)+"]") // a new array each time
			}
		})
	}
}
