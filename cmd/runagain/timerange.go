// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"time"

	"github.com/runagain/runagain/internal/store"
)

// untilUsage is the --until flag's help, shared by the commands that take a time range.
const untilUsage = "only runs started before this: a duration back from now (2h, 7d), a date (2025-09-30, UTC) or an RFC 3339 time"

// timeRange parses --since and --until (either may be empty: no bound) as store.ParseTimeArg
// does, relative to now; a since that is not before until is an error naming both.
func timeRange(since, until string, now time.Time) (from, to time.Time, err error) {
	if since != "" {
		if from, err = store.ParseTimeArg("--since", since, now); err != nil {
			return from, to, err
		}
	}
	if until != "" {
		if to, err = store.ParseTimeArg("--until", until, now); err != nil {
			return from, to, err
		}
	}
	if !from.IsZero() && !to.IsZero() && !from.Before(to) {
		return from, to, fmt.Errorf("--since %s is not before --until %s: no run can start in that range", since, until)
	}
	return from, to, nil
}
