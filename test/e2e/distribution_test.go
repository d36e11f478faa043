// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/corpus"
	"github.com/runagain/runagain/internal/testutil/collectortest"
)

type showOut struct {
	TraceID string `json:"trace_id"`
	Spans   []struct {
		Depth        int             `json:"depth"`
		SpanID       string          `json:"span_id"`
		ParentSpanID string          `json:"parent_span_id"`
		Start        time.Time       `json:"start"`
		OTLP         json.RawMessage `json:"otlp"`
	} `json:"spans"`
}

type sessionRow struct {
	TraceID string `json:"trace_id"`
	Spans   int64  `json:"spans"`
}

func corpusTraceFiles(t *testing.T) []string {
	files := corpus.Walk(t, "langfuse", func(p string) bool { return strings.HasSuffix(p, ".trace.json") })
	files = append(files, corpus.Walk(t, "any-agent", func(p string) bool { return strings.HasSuffix(p, "_trace.json") })...)
	require.NotEmpty(t, files)
	return files
}

func sourceSpans(t *testing.T, files []string) map[string]map[string]srcSpan {
	byTrace := map[string]map[string]srcSpan{}
	for _, f := range files {
		var spans []srcSpan
		if strings.Contains(f, "any-agent") {
			spans = anyAgentSpans(t, f)
		} else {
			spans = langfuseSpans(t, f)
		}
		for _, s := range spans {
			if byTrace[s.TraceID] == nil {
				byTrace[s.TraceID] = map[string]srcSpan{}
			}
			byTrace[s.TraceID][s.SpanID] = s
		}
	}
	return byTrace
}

func cli(t *testing.T, c *collectortest.Collector, args ...string) string {
	t.Helper()
	out, errOut, err := c.CLI(args...)
	require.NoError(t, err, "runagain %s: %s", strings.Join(args, " "), errOut)
	return out
}

func sessions(t *testing.T, c *collectortest.Collector) []sessionRow {
	var rows []sessionRow
	require.NoError(t, json.Unmarshal([]byte(cli(t, c, "sessions", "--json")), &rows))
	return rows
}

// waitForSpans polls `runagain sessions --json` until the store holds want spans (60 s at most).
func waitForSpans(t *testing.T, c *collectortest.Collector, want int64) []sessionRow {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var got int64
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(c.DataDir, "hot.db")); err == nil {
			rows := sessions(t, c)
			got = 0
			for _, r := range rows {
				got += r.Spans
			}
			if got == want {
				return rows
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("store holds %d spans after 60s, want %d\n%s", got, want, c.Output())
	return nil
}

// TestCorpusRunsArriveWhole imports every Langfuse and any-agent trace of the corpus into the
// real collector on config/default.yaml and checks through `runagain show --json` that every span
// arrived with every attribute equal to the source, parent links intact, in the specified order;
// then restarts the collector on the same data directory and checks nothing changed.
func TestCorpusRunsArriveWhole(t *testing.T) {
	files := corpusTraceFiles(t)
	src := sourceSpans(t, files)
	var total int64
	for _, spans := range src {
		total += int64(len(spans))
	}

	// Redaction is taken out of the pipeline here: this test is about storage, offload and
	// rehydration keeping every byte; TestPlantedSecretsNeverStored covers redaction end to end.
	c := collectortest.Start(t, collectortest.Options{Config: defaultConfigWithout(t, "agent_redaction")})
	out := cli(t, c, append([]string{"import", "--endpoint", c.GRPC}, files...)...)
	t.Log(out)
	rows := waitForSpans(t, c, total)
	// Large values went to blob storage and came back through `show` (rehydration). They are in
	// packs: uploaded to blobs/packs/, or still in the open pack staged under payloads/staging/
	// (uploaded at payloads::pack::max_age).
	blobs := 0
	for _, dir := range []string{"blobs", filepath.Join("payloads", "staging")} {
		_ = filepath.WalkDir(filepath.Join(c.DataDir, dir), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".pack") || strings.HasSuffix(p, ".zst")) {
				blobs++
			}
			return nil
		})
	}
	assert.Positive(t, blobs, "payload_offload stored no object under %s/blobs or its staging area", c.DataDir)
	require.Len(t, rows, len(src), "one run per trace id")

	shows := map[string]string{}
	for traceID, want := range src {
		raw := cli(t, c, "show", "--json", traceID)
		shows[traceID] = raw
		var got showOut
		require.NoError(t, json.Unmarshal([]byte(raw), &got))
		require.Len(t, got.Spans, len(want), "trace %s", traceID)
		pos := map[string]int{}
		for i, s := range got.Spans {
			pos[s.SpanID] = i
		}
		for i, s := range got.Spans {
			w, ok := want[s.SpanID]
			require.True(t, ok, "trace %s: unexpected span %s", traceID, s.SpanID)
			assert.Equal(t, w.ParentID, s.ParentSpanID, "%s span %s parent", w.File, s.SpanID)
			// Order: a parent (when present) comes before its child.
			if p, ok := pos[s.ParentSpanID]; ok {
				assert.Less(t, p, i, "%s: parent of %s listed after it", w.File, s.SpanID)
				assert.Equal(t, got.Spans[p].Depth+1, s.Depth)
			}
			td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(s.OTLP)
			require.NoError(t, err)
			span := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
			assert.Equal(t, w.Name, span.Name())
			for k, wv := range w.Attrs {
				gv, ok := span.Attributes().Get(k)
				if !assert.True(t, ok, "%s span %s: attribute %q missing", w.File, s.SpanID, k) {
					continue
				}
				assert.Empty(t, sameValue(wv, gv), "%s span %s attribute %q", w.File, s.SpanID, k)
			}
		}
		// Order: siblings by start time, then span id.
		for i := 0; i < len(got.Spans); i++ {
			for j := i + 1; j < len(got.Spans); j++ {
				a, b := got.Spans[i], got.Spans[j]
				if a.ParentSpanID == b.ParentSpanID && a.Depth == b.Depth {
					assert.False(t, b.Start.Before(a.Start), "trace %s: sibling %s (%s) listed after %s (%s)", traceID, b.SpanID, b.Start, a.SpanID, a.Start)
				}
			}
		}
	}

	before := cli(t, c, "sessions", "--json")
	c.Restart()
	assert.Equal(t, before, cli(t, c, "sessions", "--json"), "sessions after restart")
	for traceID, raw := range shows {
		assert.Equal(t, raw, cli(t, c, "show", "--json", traceID), "show %s after restart", traceID)
	}
}

// defaultConfigWithout writes config/default.yaml with the named processor taken out of every
// pipeline and returns the file's path.
func defaultConfigWithout(t *testing.T, processor string) string {
	t.Helper()
	base, err := os.ReadFile(filepath.Join(collectortest.RepoRoot(t), "config", "default.yaml"))
	require.NoError(t, err)
	cfg := strings.ReplaceAll(string(base), processor+", ", "")
	require.NotEqual(t, string(base), cfg, "%s is not in a pipeline of default.yaml", processor)
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	return path
}

func TestSessionsNewestFirstAndSince(t *testing.T) {
	c := collectortest.Start(t, collectortest.Options{})
	files := corpusTraceFiles(t)
	src := sourceSpans(t, files)
	var total int64
	for _, spans := range src {
		total += int64(len(spans))
	}
	cli(t, c, append([]string{"import", "--endpoint", c.GRPC}, files...)...)
	waitForSpans(t, c, total)
	var rows []struct {
		Start time.Time `json:"start"`
	}
	require.NoError(t, json.Unmarshal([]byte(cli(t, c, "sessions", "--json")), &rows))
	require.True(t, sort.SliceIsSorted(rows, func(i, j int) bool { return rows[i].Start.After(rows[j].Start) }), "newest first")
	// The corpus runs are from 2024-2025: none started in the last hour, all since 2020.
	assert.Equal(t, "[]\n", cli(t, c, "sessions", "--json", "--since", "1h"))
	require.NoError(t, json.Unmarshal([]byte(cli(t, c, "sessions", "--json", "--since", "2020-01-01T00:00:00Z")), &rows))
	assert.Len(t, rows, len(src))
	table := cli(t, c, "sessions")
	assert.Contains(t, table, "SESSION")
	_, _, err := c.CLI("sessions", "--since", "yesterday")
	assert.Error(t, err)
}

// TestMalformedImportSendsNothing: a malformed file fails naming the file and the position, and
// nothing from it reaches the store; a good file in the same call is still imported.
func TestMalformedImportSendsNothing(t *testing.T) {
	c := collectortest.Start(t, collectortest.Options{})
	dir := t.TempDir()
	bad := filepath.Join(dir, "broken.json")
	// Valid spans first, then a syntax error on line 3: nothing may be sent from this file.
	require.NoError(t, os.WriteFile(bad, []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[
{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"ok"}]}]}],
 "oops" }`), 0o600))
	_, errOut, err := c.CLI("import", "--endpoint", c.GRPC, bad)
	require.Error(t, err)
	assert.Contains(t, errOut, "broken.json:3:")
	// The store exists from start-up; give any stray request time to land, then it must be empty.
	time.Sleep(1 * time.Second)
	assert.Equal(t, "[]\n", cli(t, c, "sessions", "--json"))
}

// TestEmptyCassetteImportRefused: a nock recording of no request ("[]") is refused naming the
// file and the reason, and creates no run (it used to store an empty "fixture nock" run).
func TestEmptyCassetteImportRefused(t *testing.T) {
	c := collectortest.Start(t, collectortest.Options{})
	empty := filepath.Join(t.TempDir(), "no-request.json")
	require.NoError(t, os.WriteFile(empty, []byte("[]\n"), 0o600))
	_, errOut, err := c.CLI("import", "--endpoint", c.GRPC, empty)
	require.Error(t, err)
	assert.Contains(t, errOut, empty+":1:1: nock recording: no HTTP exchange recorded, nothing to import")
	time.Sleep(1 * time.Second) // as above: any stray request would have landed
	assert.Equal(t, "[]\n", cli(t, c, "sessions", "--json"))
}

// TestConfigErrorsNameTheField: an unknown or wrong-typed field fails at start naming it.
func TestConfigErrorsNameTheField(t *testing.T) {
	bin := collectortest.BinDir(t)
	root := collectortest.RepoRoot(t)
	base, err := os.ReadFile(filepath.Join(root, "config", "default.yaml"))
	require.NoError(t, err)
	for name, tc := range map[string]struct{ from, to, want string }{
		"unknown field": {"      retention: 168h", "      retention: 168h\n      retension: 1h", "retension"},
		"wrong type":    {"      retention: 168h", "      retention: [a, b]", "retention"},
	} {
		t.Run(name, func(t *testing.T) {
			require.Contains(t, string(base), tc.from)
			cfg := filepath.Join(t.TempDir(), "bad.yaml")
			require.NoError(t, os.WriteFile(cfg, []byte(strings.Replace(string(base), tc.from, tc.to, 1)), 0o600))
			cmd := exec.Command(filepath.Join(bin, "otelcol-runagain"), "validate", "--config", cfg)
			cmd.Env = append(os.Environ(), "RUNAGAIN_DATA_DIR="+t.TempDir())
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "%s", out)
			assert.Contains(t, string(out), tc.want)
			assert.Contains(t, string(out), "runagain_storage", "the error names the component holding the field")
		})
	}
}

// TestInvalidSpansDoNotCrash: a request holding a span with an empty trace id is refused as a
// whole (HTTP 400, the reason in the OTLP Status message; agent_redaction refuse_invalid_spans) and
// nothing of it is stored; a span with invalid UTF-8 is stored as received; the collector keeps serving.
func TestInvalidSpansDoNotCrash(t *testing.T) {
	c := collectortest.Start(t, collectortest.Options{})
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	good := ss.Spans().AppendEmpty()
	good.SetName("bad utf8")
	good.SetTraceID([16]byte{0xaa, 1})
	good.SetSpanID([8]byte{0xbb, 1})
	good.Attributes().PutStr("gen_ai.input.messages", string([]byte{'[', '"', 0xff, 0xfe, '"', ']'}))
	noID := ss.Spans().AppendEmpty()
	noID.SetName("no trace id")
	noID.SetSpanID([8]byte{0xbb, 2})
	post := func(td ptrace.Traces) (int, string) {
		body, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		require.NoError(t, err)
		resp, err := http.Post("http://"+c.HTTP+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, msg := post(td)
	t.Logf("OTLP/HTTP answer for a request with an empty trace id: %d %q", code, msg)
	assert.Equal(t, http.StatusOK, code, "the valid span accepted, the invalid one quarantined (TestMixedRequestQuarantined)")

	// the valid span alone is stored
	ss.Spans().RemoveIf(func(s ptrace.Span) bool { return s.Name() == "no trace id" })
	code, msg = post(td)
	require.Equal(t, http.StatusOK, code, msg)
	deadline := time.Now().Add(20 * time.Second)
	var stored bool
	for time.Now().Before(deadline) && !stored {
		if _, err := os.Stat(filepath.Join(c.DataDir, "hot.db")); err == nil {
			stored = strings.Contains(cli(t, c, "sessions", "--json"), "aa01000000000000")
		}
		time.Sleep(200 * time.Millisecond)
	}
	hr, err := http.Get("http://" + c.Health)
	require.NoError(t, err)
	hr.Body.Close()
	assert.Equal(t, http.StatusOK, hr.StatusCode, "collector still healthy")
	require.True(t, stored, "span with invalid UTF-8 not stored:\n%s", c.Output())
	raw := cli(t, c, "show", "--json", "aa010000000000000000000000000000")
	assert.Contains(t, raw, "bad utf8")
	assert.True(t, utf8.ValidString(raw), "show --json prints valid UTF-8 JSON")
	assert.True(t, json.Valid([]byte(raw)))
	assert.NotContains(t, cli(t, c, "sessions", "--json"), `"trace_id": "00000000000000000000000000000000"`)
}
