// SPDX-License-Identifier: Apache-2.0

// Package browser holds the browser tests of `runagain ui`: the real binaries (collector and
// CLI, found through RUNAGAIN_BIN_DIR) on a temporary data directory, driven through Debian's
// chromium with chromedp. Every test shares one Chromium process (started in TestMain) and opens
// its own tab. Screenshots of each page are written to the test's artifact directory
// (go test -artifacts keeps them; RUNAGAIN_UI_SCREENSHOTS names a directory to write them to instead).
package browser

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

// chromiumPath is Debian's chromium (apt-get install chromium; .ci/run installs it).
const chromiumPath = "/usr/bin/chromium"

var (
	browserCtx context.Context // the one Chromium process; tabs are opened from it
	browserErr error
)

func TestMain(m *testing.M) {
	var cancel func()
	if _, err := os.Stat(chromiumPath); err != nil {
		browserErr = fmt.Errorf("chromium not found at %s (apt-get install chromium): %w", chromiumPath, err)
	} else {
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(chromiumPath),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.NoFirstRun,
			chromedp.NoDefaultBrowserCheck,
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.WindowSize(1500, 1000),
		}
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelCtx := chromedp.NewContext(allocCtx)
		// Start the browser now, once.
		if err := chromedp.Do(ctx); err != nil {
			browserErr = fmt.Errorf("start chromium: %w", err)
		}
		browserCtx = ctx
		cancel = func() { cancelCtx(); cancelAlloc() }
	}
	code := m.Run()
	if cancel != nil {
		cancel()
	}
	os.Exit(code)
}

// tab opens a new tab in the shared browser, closed when the test ends. It records JavaScript
// dialogs (alert, confirm) in *dialogs and dismisses them.
func tab(t *testing.T) (context.Context, *dialogs) {
	t.Helper()
	if browserErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(browserErr)
		}
		t.Skip(browserErr)
	}
	ctx, cancel := chromedp.NewContext(browserCtx)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelT(); cancel() })
	require.NoError(t, chromedp.Do(ctx))
	d := &dialogs{}
	events := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range events {
			if err != nil {
				return
			}
			d.mu.Lock()
			d.msgs = append(d.msgs, ev.Message)
			d.mu.Unlock()
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	return ctx, d
}

// dialogs records the messages of JavaScript dialogs a tab opened.
type dialogs struct {
	mu   sync.Mutex
	msgs []string
}

func (d *dialogs) opened() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.msgs...)
}

// do runs actions in the tab and fails the test on error.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, steps...))
}

// eval evaluates a JavaScript expression in the tab.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// shot saves a full-page PNG screenshot of the current page as NAME.png in the artifact directory.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	dir := os.Getenv("RUNAGAIN_UI_SCREENSHOTS")
	if dir == "" {
		dir = t.ArtifactDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p := filepath.Join(dir, name+".png")
	require.NoError(t, os.WriteFile(p, buf, 0o644))
	t.Logf("screenshot %s", p)
}

// uiProc is a running `runagain ui`.
type uiProc struct {
	URL string
	cmd *exec.Cmd
}

// startUI runs `bin/runagain ui --listen 127.0.0.1:PORT ARGS...` on c's data directory and waits
// until it answers.
func startUI(t *testing.T, c *collectortest.Collector, args ...string) *uiProc {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", collectortest.FreePort(t))
	cmd := exec.Command(filepath.Join(collectortest.BinDir(t), "runagain"), append([]string{"ui", "--listen", addr}, args...)...)
	cmd.Env = c.Env
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	p := &uiProc{URL: "http://" + addr, cmd: cmd}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l, ok := <-lines:
		require.True(t, ok, "runagain ui exited at start")
		require.Contains(t, l, "runagain ui: http://"+addr, "first line names the address")
		go func() {
			for l := range lines {
				t.Log("runagain ui:", l)
			}
		}()
	case <-time.After(30 * time.Second):
		t.Fatal("runagain ui printed no address within 30s")
	}
	return p
}

// importRuns imports files into c and waits until the store lists want runs.
func importRuns(t *testing.T, c *collectortest.Collector, want int, files ...string) {
	t.Helper()
	out, errOut, err := c.CLI(append([]string{"import", "--endpoint", c.GRPC}, files...)...)
	require.NoError(t, err, "import: %s %s", out, errOut)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(c.DataDir, "hot.db")); err == nil {
			out, _, err := c.CLI("sessions", "--json")
			var rows []json.RawMessage
			if err == nil && json.Unmarshal([]byte(out), &rows) == nil && len(rows) >= want {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("store lists fewer than %d runs after 60s\n%s", want, c.Output())
}

func langfuseTrace(t *testing.T, name string) string {
	t.Helper()
	files := corpus.Walk(t, "langfuse", func(p string) bool { return strings.HasSuffix(p, "/framework-traces/"+name) })
	require.Len(t, files, 1, "corpus file %s", name)
	return files[0]
}

const (
	openAIAgentsRun = "fee618f96dc31e0ca38b2f7b26eb8b29" // langfuse openai-agents-2025-09-30 (README)
	beeAIRun        = "096fc09a30ab90d2431778f9ee2b3936" // langfuse beeai-2025-08-01: 5 LLM calls
)

// TestSessionsRunAndStepInBrowser imports corpus runs into the real collector, opens the sessions
// page, follows a run's link to its timeline, clicks the row of step 3 and checks that the panel
// holds exactly the model input `runagain show --step 3 --json` prints, both as recorded (every
// key and value) and as a conversation (role and text of every message); then the stable step URL.
func TestSessionsRunAndStepInBrowser(t *testing.T) {
	ctx, dlg := tab(t)
	c := collectortest.Start(t, collectortest.Options{})
	importRuns(t, c, 2, langfuseTrace(t, "openai-agents-2025-09-30.trace.json"), langfuseTrace(t, "beeai-2025-08-01.trace.json"))
	ui := startUI(t, c)

	// Sessions: both runs, newest first.
	do(t, ctx, chromedp.Navigate(ui.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#runs tbody tr`)))
	traces := eval[[]string](t, ctx, `[...document.querySelectorAll('#runs tbody tr')].map(r => r.dataset.trace)`)
	assert.Equal(t, []string{openAIAgentsRun, beeAIRun}, traces, "newest first")
	agents := eval[string](t, ctx, `[...document.querySelectorAll('#runs thead th')].findIndex(th => th.textContent == 'Agents')`+
		` >= 0 ? document.querySelector('#runs tr[data-trace="`+openAIAgentsRun+`"]').cells[[...document.querySelectorAll('#runs thead th')].findIndex(th => th.textContent == 'Agents')].textContent : 'no Agents column'`)
	assert.Contains(t, agents, "Hello world", "the agent of a Langfuse export (an AGENT observation, no gen_ai.agent.name)")
	beeAgents := eval[string](t, ctx, `document.querySelector('#runs tr[data-trace="`+beeAIRun+`"]').cells[[...document.querySelectorAll('#runs thead th')].findIndex(th => th.textContent == 'Agents')].textContent`)
	assert.Equal(t, "beeai-framework-main", strings.TrimSpace(beeAgents), "BeeAI's per-event AGENT spans (agent.react.update-13 ...) are not agents")
	shot(t, ctx, "sessions")

	// Run: follow the link; the timeline draws every span of the run.
	do(t, ctx,
		chromedp.Click(chromedp.CSS(`#runs tr[data-trace="`+openAIAgentsRun+`"] a[href^="/runs/"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline[data-ready] .row`)))
	assert.Equal(t, 5, eval[int](t, ctx, `document.querySelectorAll('#canvas .row').length`), "the openai-agents run has 5 spans")
	do(t, ctx,
		chromedp.Click(chromedp.CSS(`#canvas .row[data-step="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#panel .spanpanel[data-step="1"] [data-messages=input] .msg`)))
	shot(t, ctx, "run")

	// Step 3 of a run with five LLM calls, against the CLI.
	out, errOut, err := c.CLI("show", beeAIRun, "--step", "3", "--json")
	require.NoError(t, err, errOut)
	var want struct {
		SpanID string         `json:"span_id"`
		Keys   []string       `json:"keys"`
		Input  map[string]any `json:"input"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &want))
	require.NotEmpty(t, want.Keys)

	type kv struct {
		Key  string `json:"key"`
		Text string `json:"text"`
	}
	type msg struct {
		Role string `json:"role"`
		Text string `json:"text"`
	}
	do(t, ctx,
		chromedp.Navigate(ui.URL+"/runs/"+beeAIRun),
		chromedp.WaitVisible(chromedp.CSS(`#canvas .row[data-step="3"]`)),
		chromedp.Click(chromedp.CSS(`#canvas .row[data-step="3"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#panel .spanpanel[data-step="3"]`)))
	recorded := eval[[]kv](t, ctx, `[...document.querySelectorAll('#panel [data-input-key]')].map(e => ({key: e.dataset.inputKey, text: e.textContent}))`)
	conv := eval[[]msg](t, ctx, `[...document.querySelectorAll('#panel [data-messages=input] .msg')].map(m => ({role: m.dataset.role, text: [...m.querySelectorAll('pre.text')].map(p => p.textContent).join('')}))`)
	assert.Equal(t, ui.URL+"/runs/"+beeAIRun+"?span="+want.SpanID, eval[string](t, ctx, `location.href`), "the URL names the selected span")
	var gotKeys []string
	for _, r := range recorded {
		gotKeys = append(gotKeys, r.Key)
		assert.Equal(t, want.Input[r.Key], r.Text, "value of %s", r.Key)
	}
	assert.Equal(t, want.Keys, gotKeys, "every input key of show --step 3, in its order")
	var wantConv []msg
	for i := 0; ; i++ {
		role, ok := want.Input[fmt.Sprintf("llm.input_messages.%d.message.role", i)]
		if !ok {
			break
		}
		wantConv = append(wantConv, msg{Role: role.(string), Text: want.Input[fmt.Sprintf("llm.input_messages.%d.message.content", i)].(string)})
	}
	require.Len(t, wantConv, 4)
	assert.Equal(t, wantConv, conv, "the conversation holds the messages of show --step 3, roles and text")
	shot(t, ctx, "step-panel")

	// The arrow key moves the selection to the span after step 3 in run order.
	next := eval[string](t, ctx, `document.querySelector('#canvas .row.sel').nextElementSibling.dataset.span`)
	do(t, ctx, chromedp.KeyEvent(kb.ArrowDown), chromedp.WaitVisible(chromedp.CSS(`#panel .spanpanel[data-span="`+next+`"]`)))
	assert.Equal(t, ui.URL+"/runs/"+beeAIRun+"?span="+next, eval[string](t, ctx, `location.href`))

	// The stable URL of step 3 shows the same recorded input.
	do(t, ctx,
		chromedp.Navigate(ui.URL+"/runs/"+beeAIRun+"/steps/3"),
		chromedp.WaitVisible(chromedp.CSS(`.steppage .spanpanel[data-step="3"]`)))
	stepRecorded := eval[[]kv](t, ctx, `[...document.querySelectorAll('[data-input-key]')].map(e => ({key: e.dataset.inputKey, text: e.textContent}))`)
	assert.Equal(t, recorded, stepRecorded)
	assert.True(t, eval[bool](t, ctx, `document.querySelector('.steppage details.recorded').open`), "the step page shows what show --step prints, open")
	shot(t, ctx, "step")
	assert.Empty(t, dlg.opened())
}

// TestUntrustedPayloadRendersAsText imports a run whose span names, model, messages, attribute
// keys and values, status and resource hold <script> and <img onerror=...>, opens every page that
// shows them, and checks that they appear as text, that no dialog opened and that the DOM holds
// no element they would have created.
func TestUntrustedPayloadRendersAsText(t *testing.T) {
	ctx, dlg := tab(t)
	c := collectortest.Start(t, collectortest.Options{})
	importRuns(t, c, 1, filepath.Join("testdata", "xss_run.json"))
	ui := startUI(t, c)
	const run = "72756e616761696e00000000000a55a5"
	check := func(page string) {
		t.Helper()
		assert.Zero(t, eval[int](t, ctx, `document.querySelectorAll('img').length`), "%s: an <img> from a payload is in the DOM", page)
		assert.Zero(t, eval[int](t, ctx, `[...document.querySelectorAll('script')].filter(s => s.getAttribute('src') !== '/static/ui.js').length`),
			"%s: a <script> from a payload is in the DOM", page)
		assert.Zero(t, eval[int](t, ctx, `[...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length`),
			"%s: an element with an on* handler is in the DOM", page)
	}
	do(t, ctx, chromedp.Navigate(ui.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#runs tbody tr`)))
	text := eval[string](t, ctx, `document.querySelector('#runs tbody').textContent`)
	assert.Contains(t, text, `gpt-4o<img src=x onerror=alert("img-in-message")>`)
	check("sessions")
	shot(t, ctx, "xss-sessions")

	do(t, ctx,
		chromedp.Navigate(ui.URL+"/runs/"+run),
		chromedp.WaitVisible(chromedp.CSS(`#canvas .row[data-step="1"]`)),
		chromedp.Click(chromedp.CSS(`#canvas .row[data-step="1"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#panel .spanpanel [data-messages=input] .msg`)))
	text = eval[string](t, ctx, `document.querySelector('#panel [data-messages=input]').textContent`)
	assert.Contains(t, text, `<script>alert("script-in-message")</script> and <img src=x onerror=alert("img-in-message")>`)
	text = eval[string](t, ctx, `document.querySelector('#panel [data-messages=output] .tool_call').textContent`)
	assert.Contains(t, text, `"q": "<script>alert(\"script-in-message\")</script>"`)
	text = eval[string](t, ctx, `document.querySelector('#panel table.attrs').textContent`)
	assert.Contains(t, text, `"><img src=x onerror=alert("attr")>`)
	assert.Contains(t, text, `x-attr<script>alert("script-in-message")</script>`)
	text = eval[string](t, ctx, `document.querySelector('#canvas').textContent`)
	assert.Contains(t, text, `chat <script>alert("script-in-message")</script>`)
	check("run panel")
	shot(t, ctx, "xss-run")
	do(t, ctx, chromedp.Navigate(ui.URL+"/runs/"+run+"/steps/1"), chromedp.WaitVisible(chromedp.CSS(`.steppage`)))
	check("step")
	// Give anything a payload might have planted a moment to run before looking for dialogs.
	do(t, ctx, chromedp.Sleep(300*time.Millisecond))
	assert.Empty(t, dlg.opened(), "a dialog opened")
}

// TestTokenRequiredOffLoopback: `runagain ui` refuses a non-loopback address without a token,
// and with a token answers 401 to requests without it (the browser gets in with ?token= once).
func TestTokenRequiredOffLoopback(t *testing.T) {
	c := collectortest.Start(t, collectortest.Options{})
	importRuns(t, c, 1, langfuseTrace(t, "openai-agents-2025-09-30.trace.json"))

	for _, addr := range []string{"0.0.0.0:7600", "[::]:7600", ":7600", "192.0.2.10:7600"} {
		_, errOut, err := c.CLI("ui", "--listen", addr)
		require.Error(t, err, "ui --listen %s without a token must not start", addr)
		assert.Contains(t, errOut, "refusing to listen on "+addr+" without a token")
	}

	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret-token\n"), 0o600))
	ui := startUI(t, c, "--token-file", tokenFile)
	get := func(auth string) int {
		req, _ := http.NewRequest(http.MethodGet, ui.URL+"/runs/"+openAIAgentsRun, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, get(""))
	assert.Equal(t, http.StatusUnauthorized, get("Bearer wrong"))
	assert.Equal(t, http.StatusOK, get("Bearer s3cret-token"))

	ctx, _ := tab(t)
	do(t, ctx, chromedp.Navigate(ui.URL+"/?token=s3cret-token"), chromedp.WaitVisible(chromedp.CSS(`#runs tbody tr`)))
	assert.Equal(t, "Sessions · runagain", eval[string](t, ctx, `document.title`))
	assert.Equal(t, ui.URL+"/", eval[string](t, ctx, `location.href`), "the token leaves the address bar")
}

// TestDiffInBrowser imports a corpus run and a copy whose tool returned another answer, opens the
// diff from run A's page and checks that the page aligns the steps as `runagain diff --json` does
// and highlights its first difference (the tool result), with the text diff inside the changed
// messages of the LLM call that read it.
func TestDiffInBrowser(t *testing.T) {
	ctx, dlg := tab(t)
	src, err := os.ReadFile(langfuseTrace(t, "openai-agents-2025-09-30.trace.json"))
	require.NoError(t, err)
	const runB = "fee618f96dc31e0ca38b2f7b26eb8d31"
	variant := strings.ReplaceAll(strings.ReplaceAll(string(src), openAIAgentsRun, runB), "sunny", "rainy")
	require.NotEqual(t, string(src), variant)
	vf := filepath.Join(t.TempDir(), "openai-agents-rainy.trace.json")
	require.NoError(t, os.WriteFile(vf, []byte(variant), 0o600))
	c := collectortest.Start(t, collectortest.Options{})
	importRuns(t, c, 2, langfuseTrace(t, "openai-agents-2025-09-30.trace.json"), vf)
	ui := startUI(t, c)

	out, errOut, err := c.CLI("diff", "--json", openAIAgentsRun, runB)
	require.NoError(t, err, errOut)
	var want struct {
		First *struct {
			Pair int    `json:"pair"`
			Text string `json:"text"`
		} `json:"first_difference"`
		Pairs []struct {
			Op string `json:"op"`
		} `json:"pairs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &want))
	require.NotNil(t, want.First)
	var wantOps []string
	for _, p := range want.Pairs {
		wantOps = append(wantOps, p.Op)
	}

	do(t, ctx,
		chromedp.Navigate(ui.URL+"/runs/"+openAIAgentsRun),
		chromedp.SendKeys(chromedp.CSS(`form.diffwith input[name=b]`), runB),
		chromedp.Submit(chromedp.CSS(`form.diffwith input[name=b]`)),
		chromedp.WaitVisible(chromedp.CSS(`#diffgrid`)))
	assert.Equal(t, ui.URL+"/diff?a="+openAIAgentsRun+"&b="+runB, eval[string](t, ctx, `location.href`))
	assert.Equal(t, wantOps, eval[[]string](t, ctx, `[...document.querySelectorAll('#diffgrid .pair')].map(p => p.dataset.op)`),
		"aligned as runagain diff aligns them")
	assert.Equal(t, []int{want.First.Pair}, eval[[]int](t, ctx, `[...document.querySelectorAll('#diffgrid .pair.first')].map(p => +p.dataset.pair)`),
		"exactly the first difference is highlighted")
	assert.Equal(t, "First difference: "+want.First.Text, eval[string](t, ctx, `document.querySelector('#first-difference-text').textContent`))
	assert.Equal(t, "rgb(255, 233, 226)", eval[string](t, ctx, `getComputedStyle(document.querySelector('.pair.first .cell.a')).backgroundColor`),
		"the first difference is drawn in the highlight colour")
	first := eval[string](t, ctx, `document.querySelector('.pair.first .cell.detail').textContent`)
	assert.Contains(t, first, `"The weather in Tokyo is sunny."`)
	assert.Contains(t, first, `"The weather in Tokyo is rainy."`)
	// Inside the LLM call that read the result, the changed message marks the characters that changed.
	assert.Equal(t, []string{"sun", "sun"}, eval[[]string](t, ctx, `[...document.querySelectorAll('.pair.changed:not(.first) .msgdiff del')].map(e => e.textContent)`))
	assert.Equal(t, []string{"rai", "rai"}, eval[[]string](t, ctx, `[...document.querySelectorAll('.pair.changed:not(.first) .msgdiff ins')].map(e => e.textContent)`))
	shot(t, ctx, "diff")
	assert.Empty(t, dlg.opened())
}

// TestAlertPinnedOnTimeline imports the runaway agent (the same tool call 20 times), waits for
// agent_guard's loop alert, and checks that the sessions page filters on alerts and that the run
// page pins the alert on the span it names, in the list of records and on the timeline.
func TestAlertPinnedOnTimeline(t *testing.T) {
	ctx, _ := tab(t)
	c := collectortest.Start(t, collectortest.Options{})
	importRuns(t, c, 1, filepath.Join(collectortest.RepoRoot(t), "connector", "agentguardconnector", "testdata", "runaway_session.json"),
		langfuseTrace(t, "openai-agents-2025-09-30.trace.json"))
	const run = "72756e616761696e0000000000000001"
	var alertSpan string
	deadline := time.Now().Add(60 * time.Second)
	for alertSpan == "" && time.Now().Before(deadline) {
		out, _, err := c.CLI("show", "--json", run)
		var v struct {
			Logs []struct {
				EventName string `json:"event_name"`
				SpanID    string `json:"span_id"`
			} `json:"logs"`
		}
		if err == nil && json.Unmarshal([]byte(out), &v) == nil {
			for _, l := range v.Logs {
				if l.EventName == "runagain.alert" {
					alertSpan = l.SpanID
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.NotEmpty(t, alertSpan, "agent_guard raised no alert within 60s\n%s", c.Output())
	ui := startUI(t, c)

	do(t, ctx, chromedp.Navigate(ui.URL+"/?alerts=1"), chromedp.WaitVisible(chromedp.CSS(`#runs tbody tr`)))
	assert.Equal(t, []string{run}, eval[[]string](t, ctx, `[...document.querySelectorAll('#runs tbody tr')].map(r => r.dataset.trace)`),
		"only the run with an alert")
	do(t, ctx, chromedp.Navigate(ui.URL+"/runs/"+run), chromedp.WaitVisible(chromedp.CSS(`#timeline[data-ready] .row`)))
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#marks').textContent`), "loop")
	assert.Equal(t, []string{alertSpan}, eval[[]string](t, ctx, `[...document.querySelectorAll('#canvas .row')].filter(r => r.querySelector('.pin.alert')).map(r => r.dataset.span)`),
		"the alert is pinned on the span it names, and only there")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#marks a[data-select]`)), chromedp.WaitVisible(chromedp.CSS(`#panel .spanpanel[data-span="`+alertSpan+`"] .mark.alert`)))
	shot(t, ctx, "run-alert")
}

// TestDatasetsPage freezes a corpus run into a dataset with the CLI and finds the dataset, its
// version, the case with its expectation and a link to the frozen run on the Datasets pages.
func TestDatasetsPage(t *testing.T) {
	ctx, _ := tab(t)
	c := collectortest.Start(t, collectortest.Options{})
	importRuns(t, c, 1, langfuseTrace(t, "openai-agents-2025-09-30.trace.json"))
	out, errOut, err := c.CLI("dataset", "add", "weather", openAIAgentsRun, "--expect", "output~Tokyo", "--note", "first weather run")
	require.NoError(t, err, errOut)
	t.Log(out)
	ui := startUI(t, c)
	do(t, ctx, chromedp.Navigate(ui.URL+"/datasets"), chromedp.WaitVisible(chromedp.CSS(`section[data-dataset="weather"] tr[data-version]`)))
	assert.Equal(t, 1, eval[int](t, ctx, `document.querySelectorAll('section[data-dataset="weather"] tr[data-version]').length`))
	do(t, ctx,
		chromedp.Click(chromedp.CSS(`section[data-dataset="weather"] tr[data-version] a`)),
		chromedp.WaitVisible(chromedp.CSS(`#cases tr[data-case="`+openAIAgentsRun+`"]`)))
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('#cases tr[data-case] .expect').textContent`), `output contains "Tokyo"`)
	assert.Contains(t, eval[string](t, ctx, `document.querySelector('main').textContent`), "first weather run")
	shot(t, ctx, "dataset")
	do(t, ctx,
		chromedp.Click(chromedp.CSS(`#cases tr[data-case] a[href^="/runs/"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline[data-ready] .row`)))
	assert.Equal(t, ui.URL+"/runs/"+openAIAgentsRun, eval[string](t, ctx, `location.href`))
}
