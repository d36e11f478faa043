// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/testutil/collectortest"
)

const earlyCloseAgentEnv = "RUNAGAIN_E2E_EARLY_CLOSE_AGENT"

// TestHelperEarlyCloseAgent is not a test: as a child process (earlyCloseAgentEnv=1) it asks for
// a streamed chat completion, reads the first server-sent event and closes the stream.
func TestHelperEarlyCloseAgent(t *testing.T) {
	if os.Getenv(earlyCloseAgentEnv) != "1" {
		t.Skip("helper process")
	}
	resp, err := http.Post(os.Getenv("OPENAI_BASE_URL")+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"Count to 100."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first event: %q %v", line, err)
	}
	resp.Body.Close()
	fmt.Println("closed after one event")
}

// TestStreamClosedEarlyMarked: an agent that reads one event of a streamed response and closes
// it, recorded through `runagain proxy --record`: the exchange shows as cut short by the client
// (attribute and ERROR status), holding the one event, not as what the upstream sent.
func TestStreamClosedEarlyMarked(t *testing.T) {
	col := collectortest.Start(t, collectortest.Options{})
	done := make(chan struct{})
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"1\"}}]}\n\n")
		w.(http.Flusher).Flush()
		select { // 2 .. 100 would follow; the client leaves first
		case <-r.Context().Done():
		case <-done:
		case <-time.After(30 * time.Second):
		}
	}))
	defer model.Close()
	defer close(done)
	out, errOut, err := cliEnv(t, col, []string{earlyCloseAgentEnv + "=1"}, "proxy", "--record", "--endpoint", col.GRPC,
		"--listen", "127.0.0.1:0", "--route", "openai="+model.URL, "--", os.Args[0], "-test.run=^TestHelperEarlyCloseAgent$", "-test.count=1")
	require.NoError(t, err, "%s\n%s", out, errOut)
	m := proxyTraceRE.FindStringSubmatch(errOut)
	require.NotNil(t, m, errOut)
	waitShow(t, col, m[1], 2, 0)
	show := cli(t, col, "show", m[1])
	assert.Contains(t, show, "Error (response cut short: the client closed it before the upstream finished; the body holds what the client read)")
	assert.Contains(t, show, "runagain.fixture.cut_short: true")
	assert.Contains(t, show, `"delta":{"content":"1"}`)
	assert.Equal(t, 1, strings.Count(show, "event http.response.chunk"), "one event recorded")
}
