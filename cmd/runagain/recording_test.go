// SPDX-License-Identifier: Apache-2.0

package main

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestReuseRecordedNamesOverriddenRoutes: replay, rerun and test reuse the recording's routes;
// a --route of the same name replaces the recorded one, and the note says so instead of claiming
// the recorded one is reused.
func TestReuseRecordedNamesOverriddenRoutes(t *testing.T) {
	td := ptrace.NewTraces()
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	rec := &proxyOptions{routes: []string{"openai=http://127.0.0.1:1000", "tools=http://127.0.0.1:2000"}}
	rec.stamp(td)

	opts := func() (*proxyOptions, *cobra.Command) {
		cmd := &cobra.Command{}
		o := &proxyOptions{}
		o.flags(cmd, "127.0.0.1:0")
		return o, cmd
	}
	o, cmd := opts()
	assert.Equal(t, "reusing the recording's --route openai=http://127.0.0.1:1000 --route tools=http://127.0.0.1:2000 (a --route of the same name overrides)",
		o.reuseRecorded(cmd, td))
	assert.Equal(t, rec.routes, o.routes)

	o, cmd = opts()
	o.routes = []string{"openai=http://127.0.0.1:3000"}
	assert.Equal(t, "reusing the recording's --route tools=http://127.0.0.1:2000 (a --route of the same name overrides); the recording's route openai replaced by the command line's",
		o.reuseRecorded(cmd, td))
	assert.Equal(t, []string{"tools=http://127.0.0.1:2000", "openai=http://127.0.0.1:3000"}, o.routes)

	o, cmd = opts()
	o.routes = []string{"openai=http://127.0.0.1:3000", "tools=http://127.0.0.1:4000"}
	assert.Equal(t, "the recording's route openai, tools replaced by the command line's", o.reuseRecorded(cmd, td))
}
