// SPDX-License-Identifier: Apache-2.0

package store

import (
	"strings"
	"testing"
	"time"
)

func TestParseTimeArg(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":                     {},
		"90m":                  now.Add(-90 * time.Minute),
		"24h":                  now.Add(-24 * time.Hour),
		"7d":                   now.Add(-7 * 24 * time.Hour),
		"2w":                   now.Add(-14 * 24 * time.Hour),
		"2025-09-30":           time.Date(2025, 9, 30, 0, 0, 0, 0, time.UTC),
		"2025-09-30T09:00":     time.Date(2025, 9, 30, 9, 0, 0, 0, time.UTC),
		"2025-09-30T09:00:05":  time.Date(2025, 9, 30, 9, 0, 5, 0, time.UTC),
		"2025-09-30T09:00:00Z": time.Date(2025, 9, 30, 9, 0, 0, 0, time.UTC),
	} {
		got, err := ParseTimeArg("--since", in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"yesterday":           "want a duration back from now",
		"-5h":                 "must be positive",
		"99999999h":           "years back",
		"999999999999999999d": "years back",
		"2025-13-01":          "want a duration back from now",
	} {
		_, err := ParseTimeArg("--since", in, now)
		if err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), `--since "`+in+`"`) {
			t.Errorf("%q: error %v, want it to name the flag and say %q", in, err, msg)
		}
	}
}
