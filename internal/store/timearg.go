// SPDX-License-Identifier: Apache-2.0

package store

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseTimeArg reads a point in time given on a command line or in a URL (`sessions --since`,
// the UI's since/until filters): a duration back from now (a Go duration such as 90m or 24h, or
// whole days and weeks: 7d, 2w), a date (2025-09-30, UTC midnight), or a time (RFC 3339, or
// 2025-09-30T09:00[:05] in UTC). An empty value is the zero time. Errors name the argument.
func ParseTimeArg(name, v string, now time.Time) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	if d, ok, err := parseBack(v); ok {
		if err != nil {
			return time.Time{}, fmt.Errorf("%s %q: %w", name, v, err)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%s %q: want a duration back from now (90m, 24h, 7d), a date (2025-09-30) or a time (2025-09-30T09:00, RFC 3339)", name, v)
}

// parseBack reads a duration back from now; ok is false when v is not shaped as one.
func parseBack(v string) (d time.Duration, ok bool, err error) {
	if n := len(v); n > 1 && (v[n-1] == 'd' || v[n-1] == 'w') {
		k, perr := strconv.ParseUint(v[:n-1], 10, 64)
		if perr != nil {
			return 0, false, nil
		}
		unit := 24 * time.Hour
		if v[n-1] == 'w' {
			unit *= 7
		}
		if k > uint64(math.MaxInt64/int64(unit)) {
			return 0, true, fmt.Errorf("more than %d years back", int(math.MaxInt64/int64(365*24*time.Hour)))
		}
		return time.Duration(k) * unit, true, nil
	}
	d, perr := time.ParseDuration(v)
	if perr != nil {
		if strings.Contains(perr.Error(), "invalid duration") && strings.IndexAny(v, "0123456789") == 0 && !strings.ContainsAny(v, "-:T") {
			return 0, true, fmt.Errorf("not a duration (90m, 24h, 7d), or more than %d years back", int(math.MaxInt64/int64(365*24*time.Hour)))
		}
		return 0, false, nil
	}
	if d < 0 {
		return 0, true, fmt.Errorf("a duration back from now must be positive")
	}
	return d, true, nil
}

// ParseTimeRange parses a since and an until argument (either may be empty: no bound) as
// ParseTimeArg does, relative to now, under the names the caller's user wrote them with (the
// CLI's --since and --until, the UI's since and until); a since that is not before until is an
// error naming both, as are two arguments that do not parse.
func ParseTimeRange(sinceName, since, untilName, until string, now time.Time) (from, to time.Time, err error) {
	from, err1 := ParseTimeArg(sinceName, since, now)
	to, err2 := ParseTimeArg(untilName, until, now)
	if err = errors.Join(err1, err2); err != nil {
		return from, to, err // both named when both are wrong
	}
	if !from.IsZero() && !to.IsZero() && !from.Before(to) {
		return from, to, fmt.Errorf("%s %q is not before %s %q: no run can start in that range", sinceName, since, untilName, until)
	}
	return from, to, nil
}
