// SPDX-License-Identifier: Apache-2.0

package dataset

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/importer"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

const (
	nockChat = "otel-js-contrib-nock/packages/instrumentation-openai/test/mock-responses/openai-chat-completions-adds-genai-conventions.json"
	vcrTools = "otel-python-contrib/instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/cassettes/test_chat_completion_multiple_tools_streaming_with_content.yaml"
)

// corpusCase imports a corpus cassette (a replayable fixture run) and freezes it.
func corpusCase(t *testing.T, rel string, expects ...string) *Case {
	t.Helper()
	res, err := importer.ParseFile(filepath.Join(corpus.Dir(t), rel))
	require.NoError(t, err)
	tid := res.Traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID().String()
	f, err := factsOf(t, res.Traces, plog.NewLogs())
	require.NoError(t, err)
	ex := &CaseExpect{}
	for _, s := range expects {
		e, err := ParseExpect(s, f)
		require.NoError(t, err)
		ex.Expect = append(ex.Expect, e)
	}
	c, err := Freeze("", tid, res.Traces, plog.NewLogs(), ex)
	require.NoError(t, err)
	return c
}

func openStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), DefaultURL(dir))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestVersionsExportImport: a version is content-addressed (the same cases give the same id,
// whatever the note), exports to plain files whose bodies are the recorded bytes, and imports
// into an empty store as the same version; an edited expect.yaml imports as a new version.
func TestVersionsExportImport(t *testing.T) {
	ctx := context.Background()
	a := corpusCase(t, nockChat, "output=recorded", "max_steps=1")
	b := corpusCase(t, vcrTools, "tools=recorded", "replay=strict")
	st := openStore(t, t.TempDir())
	m1, created, err := st.Put(ctx, "smoke", "first", []*Case{a, b})
	require.NoError(t, err)
	assert.True(t, created)
	m2, created, err := st.Put(ctx, "smoke", "another note", []*Case{b, a})
	require.NoError(t, err)
	assert.False(t, created, "same cases, same version")
	assert.Equal(t, m1.Version, m2.Version)
	assert.Equal(t, "first", m2.Note)

	// The facts the expectations were made from.
	cs, err := st.Cases(ctx, m1)
	require.NoError(t, err)
	byID := map[string]*Case{}
	for _, c := range cs {
		byID[c.ID] = c
	}
	fb, err := factsOf(t, byID[b.ID].Traces, byID[b.ID].Logs)
	require.NoError(t, err)
	assert.Equal(t, "http", fb.MessagesSource)
	require.NotEmpty(t, fb.Tools, "the tools cassette asks for tool calls")
	assert.Equal(t, "get_current_weather", fb.Tools[0].Name)
	for _, c := range cs {
		f, err := factsOf(t, c.Traces, c.Logs)
		require.NoError(t, err)
		for _, e := range c.Expect.Expect {
			assert.Nil(t, e.Check(f), "case %s: %s holds on the recorded run", c.ID, e.Name())
		}
	}

	dir := filepath.Join(t.TempDir(), "export")
	require.NoError(t, st.Export(ctx, m1, dir))
	body, err := filepath.Glob(filepath.Join(dir, "cases", a.ID, "bodies", "*.response.json"))
	require.NoError(t, err)
	require.Len(t, body, 1)
	raw, err := os.ReadFile(body[0])
	require.NoError(t, err)
	assert.Contains(t, string(raw), "Atlantic Ocean.", "the response body, byte for byte")
	run, err := os.ReadFile(filepath.Join(dir, "cases", a.ID, FileRun))
	require.NoError(t, err)
	assert.Contains(t, string(run), "\n  ", "indented OTLP JSON")
	assert.Contains(t, string(run), "http.response.body_file")
	assert.NotContains(t, string(run), "service_tier", "the bodies live beside run.json")

	other := openStore(t, t.TempDir())
	r, err := other.Import(ctx, dir)
	require.NoError(t, err)
	assert.True(t, r.Created)
	assert.Equal(t, m1.Version, r.Manifest.Version, "same digest after import")
	assert.Empty(t, r.Edited)
	assert.Equal(t, m1.Created, r.Manifest.Created)

	// Edit one case's expectations: a new version, the recorded files untouched.
	ef := filepath.Join(dir, "cases", a.ID, FileExpect)
	e, err := os.ReadFile(ef)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(ef, []byte(strings.Replace(string(e), "max_steps: 1", "max_steps: 2", 1)), 0o644))
	r, err = other.Import(ctx, dir)
	require.NoError(t, err)
	assert.True(t, r.Created)
	assert.NotEqual(t, m1.Version, r.Manifest.Version)
	assert.Equal(t, []string{a.ID}, r.Edited)
	vs, err := other.Versions(ctx, "smoke")
	require.NoError(t, err)
	require.Len(t, vs, 2)
	assert.Equal(t, r.Manifest.Version, vs[0].Version, "the edited version is the newest")

	// Resolve by prefix, remove, pins.
	got, err := other.Resolve(ctx, "smoke@"+m1.Version[:8])
	require.NoError(t, err)
	assert.Equal(t, m1.Version, got.Version)
	pins, err := other.PinnedTraceIDs(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{a.TraceID: true, b.TraceID: true}, pins)
	require.NoError(t, other.Remove(ctx, "smoke", m1.Version))
	_, err = other.Resolve(ctx, "smoke@"+m1.Version[:8])
	assert.ErrorIs(t, err, ErrNotFound)
	remaining := vs[0]
	if remaining.Version == m1.Version {
		remaining = vs[1]
	}
	cs, err = other.Cases(ctx, remaining)
	require.NoError(t, err, "objects of the remaining version survive the removal")
	assert.Len(t, cs, 2)
}

// TestBadInput: an unknown dataset or version, a malformed exported file and a case whose
// fixture body is missing each give an error naming it, and the store is left as it was.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	_, err := st.Resolve(ctx, "nope")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.ErrorContains(t, err, `"nope"`)
	a := corpusCase(t, nockChat)
	m, _, err := st.Put(ctx, "smoke", "", []*Case{a})
	require.NoError(t, err)
	_, err = st.Resolve(ctx, "smoke@abcdef12")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.ErrorContains(t, err, "smoke has no version abcdef12")
	assert.ErrorContains(t, err, Short(m.Version))

	export := func() string {
		dir := filepath.Join(t.TempDir(), "x")
		require.NoError(t, st.Export(ctx, m, dir))
		return dir
	}
	empty := openStore(t, t.TempDir())
	assertUntouched := func() {
		names, err := empty.Names(ctx)
		require.NoError(t, err)
		assert.Empty(t, names, "nothing written on a failed import")
	}

	dir := export()
	runFile := filepath.Join(dir, "cases", a.ID, FileRun)
	require.NoError(t, os.WriteFile(runFile, []byte(`{"resourceSpans": [`), 0o644))
	_, err = empty.Import(ctx, dir)
	assert.ErrorContains(t, err, runFile)
	assertUntouched()

	dir = export()
	ef := filepath.Join(dir, "cases", a.ID, FileExpect)
	require.NoError(t, os.WriteFile(ef, []byte("expect:\n  - output: {equals: a, contains: b}\n"), 0o644))
	_, err = empty.Import(ctx, dir)
	assert.ErrorContains(t, err, "cases/"+a.ID+"/"+FileExpect)
	assert.ErrorContains(t, err, "exactly one of equals")
	assertUntouched()

	dir = export()
	require.NoError(t, os.WriteFile(filepath.Join(dir, FileManifest), []byte(`{"format": 1}`), 0o644))
	_, err = empty.Import(ctx, dir)
	assert.ErrorContains(t, err, filepath.Join(dir, FileManifest))
	assertUntouched()

	dir = export()
	bodies, _ := filepath.Glob(filepath.Join(dir, "cases", a.ID, "bodies", "*.request.json"))
	require.Len(t, bodies, 1)
	require.NoError(t, os.Remove(bodies[0]))
	_, err = empty.Import(ctx, dir)
	assert.ErrorContains(t, err, "case "+a.ID)
	assert.ErrorContains(t, err, filepath.Base(bodies[0]))
	assertUntouched()

	// A missing body named by run.json but not by the manifest (the case's files are incomplete).
	c := *a
	c.Files = map[string][]byte{}
	for p, b := range a.Files {
		if !strings.HasPrefix(p, DirBodies+"/") || !strings.Contains(p, "response") {
			c.Files[p] = b
		}
	}
	err = c.parse()
	assert.ErrorContains(t, err, "case "+a.ID)
	assert.ErrorContains(t, err, "is missing")
	if !errors.Is(err, ErrNotFound) {
		assert.ErrorContains(t, err, ".response.json")
	}
}

// TestParseExpect: each --expect form gives the expectation it names and checks what it says.
func TestParseExpect(t *testing.T) {
	f := &Facts{Output: `{"city": "Paris", "n": 2}`, HasOutput: true, Tools: []ToolCall{{Name: "search", Arguments: map[string]any{"q": "x"}}},
		Steps: 3, Tokens: 120, Alerts: []string{"loop"}, Divergence: &Divergence{Request: 2, Detail: "body.x: expected a, got b"}}
	for _, tc := range []struct {
		in   string
		pass bool
	}{
		{"output~Paris", true}, {"output~London", false}, {"output/\"n\": [0-9]", true},
		{"output.city=Paris", true}, {"output.n=2", true}, {"output.n=3", false},
		{"tools=search", true}, {"tools=search,fetch", false}, {"tools=recorded", true},
		{"max_steps=3", true}, {"max_steps=2", false}, {"max_tokens=100", false},
		{"no_alert=cost_spike", true}, {"no_alert=loop", false}, {"no_alert=any", false},
		{"replay=strict", false}, {"replay=diverge_after:1", true}, {"replay=diverge_after:2", false},
	} {
		e, err := ParseExpect(tc.in, f)
		require.NoError(t, err, tc.in)
		fail := e.Check(f)
		assert.Equal(t, tc.pass, fail == nil, "%s: %v", tc.in, fail)
	}
	for _, bad := range []string{"outputs=x", "max_steps=two", "replay=loose", "output/[", "nothing",
		"max_cost_usd=NaN", "max_cost_usd=-1", "max_cost_usd=+Inf", "max_steps=-1", "max_tokens=-5", "max_duration=-3s"} {
		_, err := ParseExpect(bad, f)
		assert.ErrorContains(t, err, bad)
	}
	e, _ := ParseExpect("output~London", f)
	fail := e.Check(f)
	assert.Equal(t, `output contains "London"`, fail.Expectation)
	assert.Contains(t, fail.Got, "Paris")
}

// factsOf is RunFacts of the run td, ld read with the read model's default options.
func factsOf(t *testing.T, td ptrace.Traces, ld plog.Logs) (*Facts, error) {
	t.Helper()
	v, err := runview.Build(context.Background(), &store.Run{TraceID: "run", Traces: td, Logs: ld}, runview.Options{})
	if err != nil {
		return nil, err
	}
	return RunFacts(v)
}

// TestLocation: a file:// store is named by its directory, without the bucket options a
// person did not write; another URL as it is.
func TestLocation(t *testing.T) {
	for url, want := range map[string]string{
		DefaultURL("/srv/data"):                 "/srv/data/datasets",
		"s3://bucket/datasets?region=eu-west-1": "s3://bucket/datasets?region=eu-west-1",
	} {
		if got := (&Store{url: url}).Location(); got != want {
			t.Errorf("Location of %s = %q, want %q", url, got, want)
		}
	}
}
