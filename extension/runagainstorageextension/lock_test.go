// SPDX-License-Identifier: Apache-2.0

package runagainstorageextension

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
)

// TestDataDirLock: a second instance on the same data directory fails at Start with ErrLocked,
// naming the process that holds the directory; once the first shuts down, the second starts.
func TestDataDirLock(t *testing.T) {
	dir := t.TempDir()
	mk := func() *Extension {
		cfg := NewDefaultConfig()
		cfg.Hot = configoptional.Some(HotConfig{Retention: DefaultHotRetention, SQLite: configoptional.Some(SQLiteConfig{Path: filepath.Join(dir, "hot.db")})})
		cfg.Warm = configoptional.Some(WarmConfig{Retention: DefaultWarmRetention, SQLite: configoptional.Some(SQLiteConfig{Path: filepath.Join(dir, "warm.db")})})
		require.NoError(t, cfg.Validate())
		s, err := New(cfg, componenttest.NewNopTelemetrySettings(), nil)
		require.NoError(t, err)
		return s
	}
	first, second := mk(), mk()
	require.NoError(t, first.Start(context.Background(), componenttest.NewNopHost()))
	b, err := os.ReadFile(filepath.Join(dir, LockFile))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprint(os.Getpid()), strings.TrimSpace(string(b)), "the lock file names its holder")

	err = second.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorIs(t, err, ErrLocked)
	assert.Contains(t, err.Error(), fmt.Sprintf("locked by pid %d", os.Getpid()))
	assert.Contains(t, err.Error(), dir)

	require.NoError(t, first.Shutdown(context.Background()))
	require.NoError(t, second.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, second.Shutdown(context.Background()))
}

// TestDataDirLockIsGofrsFlock: the data directory lock is github.com/gofrs/flock's, the lock the
// payload staging area takes too: a holder through gofrs/flock keeps Start out (ErrLocked), and
// while Start holds the directory gofrs/flock cannot take it; after Shutdown it can.
func TestDataDirLockIsGofrsFlock(t *testing.T) {
	dir := t.TempDir()
	cfg := NewDefaultConfig()
	cfg.Hot = configoptional.Some(HotConfig{Retention: DefaultHotRetention, SQLite: configoptional.Some(SQLiteConfig{Path: filepath.Join(dir, "hot.db")})})
	cfg.Warm = configoptional.None[WarmConfig]()
	cfg.Cold = configoptional.None[ColdConfig]()
	require.NoError(t, cfg.Validate())
	s, err := New(cfg, componenttest.NewNopTelemetrySettings(), nil)
	require.NoError(t, err)

	other := flock.New(filepath.Join(dir, LockFile))
	ok, err := other.TryLock()
	require.NoError(t, err)
	require.True(t, ok)
	require.ErrorIs(t, s.Start(context.Background(), componenttest.NewNopHost()), ErrLocked)
	require.NoError(t, other.Unlock())

	require.NoError(t, s.Start(context.Background(), componenttest.NewNopHost()))
	ok, err = other.TryLock()
	require.NoError(t, err)
	assert.False(t, ok, "held by the started extension")
	require.NoError(t, s.Shutdown(context.Background()))
	ok, err = other.TryLock()
	require.NoError(t, err)
	assert.True(t, ok, "released at Shutdown")
	require.NoError(t, other.Unlock())
}
