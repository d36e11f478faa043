// SPDX-License-Identifier: Apache-2.0

package runagainstorageextension

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/dataset"
	"github.com/runagain/runagain/internal/payloadref"
	"github.com/runagain/runagain/internal/payloadref/ref"
	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/storetest"
)

// testClock is a settable clock; the extension's janitor reads it from its own goroutine.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// advance moves the clock on by d.
func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// blobValues returns which of values the files under dir hold, raw or zstd-decoded.
func blobValues(t *testing.T, dir string, values []string) map[string]bool {
	dec, err := zstd.NewReader(nil)
	require.NoError(t, err)
	defer dec.Close()
	found := map[string]bool{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		contents := [][]byte{raw}
		// Every zstd frame wherever it starts (a pack holds many, one after a 48-byte header each).
		for i := 0; i+4 <= len(raw); i++ {
			if bytes.HasPrefix(raw[i:], []byte{0x28, 0xb5, 0x2f, 0xfd}) {
				if plain, err := dec.DecodeAll(raw[i:], nil); err == nil {
					contents = append(contents, plain)
				} else if r, err := zstd.NewReader(bytes.NewReader(raw[i:])); err == nil {
					var one bytes.Buffer
					_, _ = one.ReadFrom(r)
					r.Close()
					contents = append(contents, one.Bytes())
				}
			}
		}
		for _, c := range contents {
			for _, v := range values {
				if bytes.Contains(c, []byte(v)) {
					found[v] = true
				}
			}
		}
		return nil
	}))
	return found
}

// TestRetentionSweepsPayloadsOfExpiredRuns: three runs reference offloaded conversations (split
// into objects per message; all three share the system prompt). One is pinned by a dataset.
// After a retention pass past the hot retention (injected clock), the blob store holds no byte
// of the expired runs' own messages, while the pinned run's payload, shared prompt included,
// still reads back whole.
func TestRetentionSweepsPayloadsOfExpiredRuns(t *testing.T) {
	t.Run("single objects", func(t *testing.T) { testRetentionSweepsPayloads(t, false) })
	t.Run("packs", func(t *testing.T) { testRetentionSweepsPayloads(t, true) })
}

// testRetentionSweepsPayloads runs the retention test on the single-object layout or, with
// packs, on the pack layout (payloads::dir: the three conversations share one pack, which the
// janitor rewrites without the expired runs' objects).
func testRetentionSweepsPayloads(t *testing.T, packs bool) {
	ctx := context.Background()
	dir := t.TempDir()
	blobs := "file://" + filepath.ToSlash(filepath.Join(dir, "blobs")) + "?create_dir=true&metadata=skip"
	cfg := NewDefaultConfig()
	cfg.Hot = configoptional.Some(HotConfig{Retention: DefaultHotRetention, SQLite: configoptional.Some(SQLiteConfig{Path: filepath.Join(dir, "hot.db")})})
	cfg.Payloads = configoptional.Some(PayloadsConfig{URL: blobs})
	payloadDir := ""
	if packs {
		payloadDir = filepath.Join(dir, "payloads")
		cfg.Payloads = configoptional.Some(PayloadsConfig{URL: blobs, Dir: payloadDir, Pack: DefaultPack})
	}
	cfg.Datasets = configoptional.Some(DatasetsConfig{URL: dataset.DefaultURL(dir)})
	require.NoError(t, cfg.Validate())
	c := &testClock{now: time.Now()}
	st, err := New(cfg, componenttest.NewNopTelemetrySettings(), c.Now)
	require.NoError(t, err)
	require.NoError(t, st.Start(ctx, componenttest.NewNopHost()))
	defer func() { require.NoError(t, st.Shutdown(ctx)) }()

	ps, err := st.PayloadStore() // the store payload_offload writes through
	require.NoError(t, err)
	prompt := "SHARED-PROMPT " + strings.Repeat("You are a careful assistant. ", 30)
	conversation := func(secret string) []byte {
		b, _ := json.Marshal([]map[string]string{{"role": "system", "content": prompt},
			{"role": "user", "content": secret + " " + strings.Repeat("tell me more about it, please. ", 30)}})
		return b
	}
	runs := map[string]storetest.Run{}
	uris := map[string]string{}
	td := ptrace.NewTraces()
	for _, seed := range []string{"expired-1", "expired-2", "pinned"} {
		r := storetest.Run{Seed: seed, Service: "svc", Model: "gpt-4.1", Start: c.Now().UnixNano(), LLMCalls: 1}
		runs[seed] = r
		res, err := ps.Put(ctx, conversation("SECRET-"+seed), true)
		require.NoError(t, err)
		require.True(t, res.Split)
		uris[seed] = res.URI
		one := storetest.Traces(r)
		store.EachSpan(one, func(s ptrace.Span) { s.Attributes().PutStr("gen_ai.input.messages_ref", res.URI) })
		one.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	}
	hot, err := st.Backend(store.TierHot)
	require.NoError(t, err)
	require.NoError(t, hot.WriteTraces(ctx, td))
	require.NoError(t, ps.Flush(ctx)) // packs: the sweep reaches uploaded packs
	if packs {
		p, _ := filepath.Glob(filepath.Join(dir, "blobs", ref.PackDir, "*"+ref.PackSuffix))
		require.Len(t, p, 1, "the three conversations share one pack")
	}

	ds, err := dataset.Open(ctx, cfg.Datasets.Get().URL)
	require.NoError(t, err)
	defer ds.Close()
	_, _, err = ds.Put(ctx, "pins", "", []*dataset.Case{{ID: "p", TraceID: storetest.TraceID("pinned").String(),
		Files: map[string][]byte{dataset.FileRun: []byte("{}")}}})
	require.NoError(t, err)

	secrets := []string{"SECRET-expired-1", "SECRET-expired-2", "SECRET-pinned", "SHARED-PROMPT"}
	before := blobValues(t, filepath.Join(dir, "blobs"), secrets)
	for _, s := range secrets {
		require.True(t, before[s], "%s not in the blob store before retention: the check would prove nothing", s)
	}

	// A pass within the retention deletes nothing.
	c.advance(DefaultHotRetention - time.Hour)
	n, err := st.RunJanitors(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Equal(t, before, blobValues(t, filepath.Join(dir, "blobs"), secrets))

	c.advance(2 * time.Hour)
	n, err = st.RunJanitors(ctx)
	require.NoError(t, err)
	assert.Positive(t, n)
	after := blobValues(t, filepath.Join(dir, "blobs"), secrets)
	assert.False(t, after["SECRET-expired-1"], "an expired run's payload bytes are gone")
	assert.False(t, after["SECRET-expired-2"])
	assert.True(t, after["SECRET-pinned"], "the pinned run's payload stays")
	assert.True(t, after["SHARED-PROMPT"], "an object shared with the pinned run stays")

	r := payloadref.NewResolver()
	defer r.Close()
	got, err := r.Fetch(ctx, uris["pinned"])
	require.NoError(t, err)
	assert.Equal(t, conversation("SECRET-pinned"), got)
	_, err = r.Fetch(ctx, uris["expired-1"])
	assert.Error(t, err, "the expired run's reference no longer resolves")
}
