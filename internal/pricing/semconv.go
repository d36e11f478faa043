// SPDX-License-Identifier: Apache-2.0

package pricing

import "github.com/runagain/runagain/internal/genai"

// FromSemconv converts OpenTelemetry GenAI usage (genai.TokenUsage) to genai-prices usage.
// Semconv input tokens include cached tokens; some instrumentations (Anthropic's own usage
// shape) report only the uncached input, recognisable when cache reads plus writes exceed it:
// then they are added. Negative counts are malformed and count as not recorded, so a cost is
// never negative. Reasoning tokens are part of the output tokens (semconv, OpenAI) and are not
// added here.
func FromSemconv(u genai.Usage) Usage {
	u.Input, u.Output, u.CacheRead, u.CacheWrite = max(u.Input, 0), max(u.Output, 0), max(u.CacheRead, 0), max(u.CacheWrite, 0)
	in := u.Input
	if u.CacheRead+u.CacheWrite > in {
		in += u.CacheRead + u.CacheWrite
	}
	return Usage{Input: in, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, Output: u.Output}
}
