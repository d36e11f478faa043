// SPDX-License-Identifier: Apache-2.0

package patterns

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runagain/runagain/internal/runagainattr"
)

// agent_guard's pattern alerts (pattern_new, pattern_rate_jump) point at a failing run; they are
// not part of its signature, so the alert raised for a run's pattern never moves the run to
// another pattern, and a run whose only alerts are pattern alerts is not failing for them.
func TestPatternAlertsLeftOutOfTheSignature(t *testing.T) {
	failing := []spec{{}, {tool: "read_file", err: "read_file: denied"}}
	plain := sigOf(t, runOf(t, 1, failing, "loop"))
	alerted := sigOf(t, runOf(t, 1, failing, "loop", runagainattr.AlertKindPatternNew, runagainattr.AlertKindPatternRateJump))
	assert.Equal(t, plain.ID(), alerted.ID())
	assert.Equal(t, plain.VariantID(), alerted.VariantID())
	assert.Equal(t, []string{"loop"}, alerted.Alerts)

	passing := sigOf(t, runOf(t, 2, []spec{{}, {tool: "search_web"}}, runagainattr.AlertKindPatternNew))
	assert.False(t, passing.Failing())
	assert.False(t, passing.Uncategorised)
}
