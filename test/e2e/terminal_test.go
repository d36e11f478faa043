// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// TestRecordedTextCannotDriveTheTerminal: a span name and a model output holding escape
// sequences (colour, window title, erase line), a carriage return and a bidi override reach
// `show`, `show --step`, `sessions` and `diff` escaped, never as raw control bytes; `--json` still
// decodes to the recorded bytes exactly.
func TestRecordedTextCannotDriveTheTerminal(t *testing.T) {
	const (
		name   = "esc \x1b[31mRED\x1b[0m name"
		output = "hi \x1b]0;PWNED-TITLE\x07 \x1b[2K\rOVERWRITTEN \u202egnp.exe"
	)
	c := collectortest.Start(t, collectortest.Options{})
	r := newRun(7, "terminal-agent\x1b[2J")
	attrs := chatAttrs(3, 4, "stop")
	attrs["session.id"] = "sess\tion\x1b[2J"
	attrs["gen_ai.output.messages"] = `[{"role":"assistant","parts":[{"type":"text","content":` + jsonString(output) + `}],"finish_reason":"stop"}]`
	r.span(1, 0, name, 0, 500, attrs)
	sendOTLP(t, c, r.td, plog.NewLogs())
	waitShow(t, c, r.id(), 1, 0)

	for _, args := range [][]string{{"show", r.id()}, {"show", r.id(), "--step", "1"}, {"sessions"}} {
		out := cli(t, c, args...)
		for _, raw := range []string{"\x1b", "\x07", "\r", "\u202e"} {
			assert.NotContains(t, out, raw, "runagain %s printed a raw %q", strings.Join(args, " "), raw)
		}
	}
	assert.Contains(t, cli(t, c, "show", r.id()), `esc \u001b[31mRED\u001b[0m name`)
	// In the sessions table a recorded tab or newline cannot add a column or a row.
	assert.Contains(t, cli(t, c, "sessions"), `sess\tion\u001b[2J  `+r.id())
	assert.Contains(t, cli(t, c, "show", r.id(), "--step", "1"), `hi \u001b]0;PWNED-TITLE\u0007 \u001b[2K\u000dOVERWRITTEN \u202egnp.exe`)

	// diff prints recorded text too: escaped, with only its own colour when asked for.
	other := newRun(8, "terminal-agent")
	attrs2 := chatAttrs(3, 4, "stop")
	attrs2["gen_ai.output.messages"] = `[{"role":"assistant","parts":[{"type":"text","content":"calm \u001b]0;OTHER\u0007 text"}],"finish_reason":"stop"}]`
	other.span(1, 0, name, 0, 400, attrs2)
	sendOTLP(t, c, other.td, plog.NewLogs())
	waitShow(t, c, other.id(), 1, 0)
	plain := cli(t, c, "diff", "--color", "never", r.id(), other.id())
	assert.NotContains(t, plain, "\x1b")
	assert.Contains(t, plain, `\u001b]0;`)
	colored := cli(t, c, "diff", "--color", "always", r.id(), other.id())
	assert.Contains(t, colored, "\x1b[31m", "diff's own colour")
	for _, raw := range []string{"\x1b]", "\x07", "\r", "\u202e", "\x1b[2K"} {
		assert.NotContains(t, colored, raw)
	}

	var step struct {
		Messages struct {
			Output []struct {
				Parts []struct {
					Content string `json:"content"`
				} `json:"parts"`
			} `json:"output"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(cli(t, c, "show", r.id(), "--step", "1", "--json")), &step))
	require.NotEmpty(t, step.Messages.Output)
	assert.Equal(t, output, step.Messages.Output[0].Parts[0].Content, "--json keeps the recorded bytes")
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
