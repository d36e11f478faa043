// SPDX-License-Identifier: Apache-2.0

package runagainattr

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// RerunChanges is one type: a string array from rerun and test, and the plain string `runagain
// test --change` wrote before is still read as one change.
func TestChangesOneTypeOldFormRead(t *testing.T) {
	m := pcommon.NewMap()
	PutChanges(m, []string{"model=gpt-4.1", "temperature=0"})
	v, _ := m.Get(RerunChanges)
	assert.Equal(t, pcommon.ValueTypeSlice, v.Type())
	got, ok := Changes(m)
	assert.True(t, ok)
	assert.Equal(t, []string{"model=gpt-4.1", "temperature=0"}, got)

	old := pcommon.NewMap()
	old.PutStr(RerunChanges, "prompt v2")
	got, ok = Changes(old)
	assert.True(t, ok)
	assert.Equal(t, []string{"prompt v2"}, got)

	_, ok = Changes(pcommon.NewMap())
	assert.False(t, ok)
}
