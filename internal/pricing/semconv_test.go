// SPDX-License-Identifier: Apache-2.0

package pricing

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runagain/runagain/internal/genai"
)

func TestFromSemconv(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   genai.Usage
		want Usage
	}{
		{"cached tokens inside the input", genai.Usage{Input: 1000, CacheRead: 600, CacheWrite: 100, Output: 50},
			Usage{Input: 1000, CacheRead: 600, CacheWrite: 100, Output: 50}},
		{"uncached input only (cache exceeds it)", genai.Usage{Input: 10, CacheRead: 900, CacheWrite: 100, Output: 5},
			Usage{Input: 1010, CacheRead: 900, CacheWrite: 100, Output: 5}},
		{"negative counts are not recorded", genai.Usage{Input: -5, CacheRead: -1, CacheWrite: -1, Output: -50},
			Usage{}},
		{"reasoning is not added", genai.Usage{Input: 1, Output: 100, Reasoning: 40},
			Usage{Input: 1, Output: 100}},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, FromSemconv(tc.in)) })
	}
}
