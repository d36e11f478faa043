// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"strings"
	"testing"
)

// TestContainsFoldsCase: contains finds a lower-case needle in any case, at any offset, and
// agrees with lower-casing the text.
func TestContainsFoldsCase(t *testing.T) {
	for _, c := range []struct {
		s, needle string
	}{
		{"Needle-In-The-Payloads", "needle-in"}, {"xxNEEDLEyy", "needle"}, {"nnnneedle", "needle"}, {"NeNeNeedle", "needle"},
		{"no match here", "needle"}, {"needl", "needle"}, {"ÉCOLE needle", "école"}, {"42 Items", "2 i"}, {"", "a"}, {"abc", ""},
	} {
		want := strings.Contains(strings.ToLower(c.s), c.needle)
		if got := contains(c.s, c.needle); got != want {
			t.Errorf("contains(%q, %q) = %v, want %v", c.s, c.needle, got, want)
		}
	}
}
