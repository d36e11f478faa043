// SPDX-License-Identifier: Apache-2.0

package agentredactionprocessor

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/runagain/runagain/internal/redact"
	"github.com/runagain/runagain/internal/seal"
)

// TestSealedOriginals: with seal_originals on, the stored spans hold no planted value in clear
// (dump covers every attribute, sealed ones as bytes); seal.Restore with the key directory puts
// back every original byte for byte except the credentials, which are never sealed (the
// restored spans are what the secret rules alone make of the input); after the session's key
// is destroyed nothing opens.
func TestSealedOriginals(t *testing.T) {
	dir := t.TempDir()
	sink := new(consumertest.TracesSink)
	cfg := createDefaultConfig().(*Config)
	cfg.HashKey = "0123456789abcdef0123456789abcdef"
	cfg.SealOriginals = SealConfig{KeyDir: dir, KeyFile: filepath.Join(t.TempDir(), "master.key")}
	p, err := NewFactory().CreateTraces(context.Background(), processortest.NewNopSettings(NewFactory().Type()), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	in := newTraces()
	want := ptrace.NewTraces()
	in.CopyTo(want)
	require.NoError(t, p.ConsumeTraces(context.Background(), in))
	require.NoError(t, p.Shutdown(context.Background()))
	out := sink.AllTraces()[0]
	all := dump(out)
	for _, v := range []string{plantedKey, plantedEmail, plantedAWS, plantedPhone, plantedCard, plantedPass} {
		assert.NotContains(t, all, v)
	}

	keys, err := seal.OpenKeysWith(context.Background(), dir, cfg.SealOriginals.master())
	require.NoError(t, err)
	restored := ptrace.NewTraces()
	out.CopyTo(restored)
	rep, err := seal.Restore(context.Background(), keys, restored, nil)
	require.NoError(t, err)
	assert.Positive(t, rep.Restored)
	assert.Empty(t, rep.Erased)
	opened := dump(restored)
	for _, v := range []string{plantedKey, plantedAWS, plantedPass} {
		assert.NotContains(t, opened, v, "a credential was sealed")
	}
	for _, v := range []string{plantedEmail, plantedPhone, plantedCard} {
		assert.Contains(t, opened, v, "a PII original was not sealed")
	}
	// what the secret rules alone make of the input
	secretsOnly := new(consumertest.TracesSink)
	so := createDefaultConfig().(*Config)
	so.HashKey = cfg.HashKey
	r, err := redact.New(redact.Config{})
	require.NoError(t, err)
	for _, n := range r.Rules() {
		if r.CategoryOf(n) == redact.CategoryPII {
			so.DisabledRules = append(so.DisabledRules, n)
		}
	}
	q, err := NewFactory().CreateTraces(context.Background(), processortest.NewNopSettings(NewFactory().Type()), so, secretsOnly)
	require.NoError(t, err)
	require.NoError(t, q.ConsumeTraces(context.Background(), want))
	want = secretsOnly.AllTraces()[0]
	ws, rs := want.ResourceSpans().At(0).ScopeSpans().At(0).Spans(), restored.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < ws.Len(); i++ {
		got := rs.At(i).Attributes().AsRaw()
		delete(got, CountAttribute)
		delete(got, ChangedAttribute)
		w := ws.At(i).Attributes().AsRaw()
		delete(w, CountAttribute)
		delete(w, ChangedAttribute)
		assert.Equal(t, w, got, "span %d", i)
	}

	session := seal.SessionOf(out.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0), out.ResourceSpans().At(0).Resource().Attributes())
	ok, err := keys.Destroy(session)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, keys.Close())
	keys, err = seal.OpenKeysWith(context.Background(), dir, cfg.SealOriginals.master())
	require.NoError(t, err)
	again := ptrace.NewTraces()
	out.CopyTo(again)
	rep, err = seal.Restore(context.Background(), keys, again, nil)
	require.NoError(t, err)
	assert.Zero(t, rep.Restored)
	assert.NotEmpty(t, rep.Erased)
	assert.Equal(t, all, dump(again), "nothing opened after the key was destroyed")
}

// TestSealKeyInsideDataDirRefused: a master key file inside the data directory is refused at
// start with an error naming both paths, unless allow_key_in_data_dir; a key given by
// environment or a file outside it starts.
func TestSealKeyInsideDataDirRefused(t *testing.T) {
	data := t.TempDir()
	start := func(sc SealConfig) error {
		cfg := createDefaultConfig().(*Config)
		cfg.HashKey = "0123456789abcdef0123456789abcdef"
		sc.KeyEnv = cfg.SealOriginals.KeyEnv
		cfg.SealOriginals = sc
		p, err := NewFactory().CreateTraces(context.Background(), processortest.NewNopSettings(NewFactory().Type()), cfg, consumertest.NewNop())
		if err == nil {
			_ = p.Shutdown(context.Background())
		}
		return err
	}
	keyDir := filepath.Join(data, "keys")
	err := start(SealConfig{KeyDir: keyDir, DataDir: data})
	require.Error(t, err, "the README's old layout: master.key in <data dir>/keys")
	assert.Contains(t, err.Error(), filepath.Join(keyDir, "master.key"))
	assert.Contains(t, err.Error(), "inside the data directory "+data)
	err = start(SealConfig{KeyDir: keyDir, KeyFile: filepath.Join(data, "elsewhere", "..", "seal.key"), DataDir: data})
	require.Error(t, err, "a path that only looks outside")
	require.NoError(t, start(SealConfig{KeyDir: keyDir, DataDir: data, AllowKeyInDataDir: true}))
	require.NoError(t, start(SealConfig{KeyDir: keyDir, KeyFile: filepath.Join(t.TempDir(), "seal.key"), DataDir: data}))
	t.Setenv(seal.DefaultKeyEnv, "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	require.NoError(t, start(SealConfig{KeyDir: filepath.Join(data, "keys2"), DataDir: data}), "a key given by environment")
}
