// SPDX-License-Identifier: Apache-2.0

package agentrun

import (
	"bytes"
	"context"
	"log"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/proxy"
)

// The command sees the proxy in its environment (HTTP_PROXY, the SDK base URLs, TRACEPARENT of
// the root span; the CA only with --mitm) and its exit code comes back; a command that cannot be
// started is an error naming it.
func TestRunPointsTheCommandAtTheProxy(t *testing.T) {
	root := proxy.Root{TraceID: pcommon.TraceID{1}, SpanID: pcommon.SpanID{2}}
	env := Env("127.0.0.1:8765", "", root)
	assert.Contains(t, env, "HTTP_PROXY=http://127.0.0.1:8765")
	assert.Contains(t, env, "TRACEPARENT=00-"+root.TraceID.String()+"-"+root.SpanID.String()+"-01")
	for _, kv := range env {
		assert.False(t, strings.HasPrefix(kv, "HTTPS_PROXY="), "no HTTPS_PROXY without --mitm")
	}
	assert.Contains(t, Env("127.0.0.1:8765", "/ca.pem", proxy.Root{}), "NODE_EXTRA_CA_CERTS=/ca.pem")
	for _, kv := range Env("127.0.0.1:8765", "", proxy.Root{}) {
		assert.False(t, strings.HasPrefix(kv, "TRACEPARENT="), "no root span, no traceparent")
	}

	var out bytes.Buffer
	pid := 0
	exit, err := Run(context.Background(), false, nil, log.New(&out, "", 0),
		[]string{"/bin/sh", "-c", `printf '%s %s' "$HTTP_PROXY" "$OPENAI_BASE_URL"; exit 3`}, env, &out, &out, func(p int) { pid = p })
	require.NoError(t, err)
	assert.Equal(t, 3, exit.Code)
	assert.Positive(t, pid)
	assert.Equal(t, "http://127.0.0.1:8765 http://127.0.0.1:8765"+proxy.BaseURLEnv["OPENAI_BASE_URL"], out.String())

	_, err = Run(context.Background(), false, nil, log.New(&out, "", 0), []string{"/nonexistent/agent"}, nil, &out, &out, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/nonexistent/agent")
}

// A command killed by a signal ends with 128+N and the signal named; one the kernel cannot
// execute is a *StartError (nothing ran).
func TestRunExitBySignalAndStartError(t *testing.T) {
	var out bytes.Buffer
	exit, err := Run(context.Background(), false, nil, log.New(&out, "", 0), []string{"/bin/sh", "-c", "kill -TERM $$"}, nil, &out, &out, nil)
	require.NoError(t, err)
	assert.Equal(t, Exit{Code: 128 + int(syscall.SIGTERM), Signal: syscall.SIGTERM}, exit)
	assert.Contains(t, exit.String(), "killed by signal terminated")

	bad := filepath.Join(t.TempDir(), "garbage")
	require.NoError(t, os.WriteFile(bad, []byte{0, 1, 2}, 0o755))
	_, err = Run(context.Background(), false, nil, log.New(&out, "", 0), []string{bad}, nil, &out, &out, nil)
	var se *StartError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, bad, se.Command)
}
