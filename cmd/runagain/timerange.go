// SPDX-License-Identifier: Apache-2.0

package main

import (
	"time"

	"github.com/runagain/runagain/internal/store"
)

// untilUsage is the --until flag's help, shared by the commands that take a time range.
const untilUsage = "only runs started before this: a duration back from now (2h, 7d), a date (2025-09-30, UTC) or an RFC 3339 time"

// timeRange parses --since and --until (store.ParseTimeRange).
func timeRange(since, until string, now time.Time) (from, to time.Time, err error) {
	return store.ParseTimeRange("--since", since, "--until", until, now)
}
