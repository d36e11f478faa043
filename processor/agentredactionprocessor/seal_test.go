package agentredactionprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/runagain/runagain/internal/seal"
)

// TestSealedOriginals: with seal_originals on, the stored spans hold no planted value in clear
// (dump covers every attribute, sealed ones as bytes); seal.Restore with the key directory puts
// back every original byte for byte; after the session's key is destroyed nothing opens.
func TestSealedOriginals(t *testing.T) {
	dir := t.TempDir()
	sink := new(consumertest.TracesSink)
	cfg := createDefaultConfig().(*Config)
	cfg.HashKey = "0123456789abcdef0123456789abcdef"
	cfg.SealOriginals = SealConfig{KeyDir: dir}
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

	keys, err := seal.OpenKeys(context.Background(), dir, "")
	require.NoError(t, err)
	restored := ptrace.NewTraces()
	out.CopyTo(restored)
	rep, err := seal.Restore(context.Background(), keys, restored, nil)
	require.NoError(t, err)
	assert.Positive(t, rep.Restored)
	assert.Empty(t, rep.Erased)
	ws, rs := want.ResourceSpans().At(0).ScopeSpans().At(0).Spans(), restored.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < ws.Len(); i++ {
		got := rs.At(i).Attributes().AsRaw()
		delete(got, CountAttribute)
		delete(got, ChangedAttribute)
		assert.Equal(t, ws.At(i).Attributes().AsRaw(), got, "span %d", i)
	}

	session := seal.SessionOf(out.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0), out.ResourceSpans().At(0).Resource().Attributes())
	ok, err := keys.Destroy(session)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, keys.Close())
	keys, err = seal.OpenKeys(context.Background(), dir, "")
	require.NoError(t, err)
	again := ptrace.NewTraces()
	out.CopyTo(again)
	rep, err = seal.Restore(context.Background(), keys, again, nil)
	require.NoError(t, err)
	assert.Zero(t, rep.Restored)
	assert.NotEmpty(t, rep.Erased)
	assert.Equal(t, all, dump(again), "nothing opened after the key was destroyed")
}
