//go:build race

// SPDX-License-Identifier: Apache-2.0

package benchtest // import "github.com/runagain/runagain/internal/testutil/benchtest"

// RaceEnabled reports a build with the race detector: it makes sync.Pool drop items, so
// tests do not check allocation counts then.
const RaceEnabled = true
