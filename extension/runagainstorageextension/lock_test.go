package runagainstorageextension

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
)

// TestDataDirLock: a second instance on the same data directory fails at Start with ErrLocked,
// naming the process that holds the directory; once the first shuts down, the second starts.
func TestDataDirLock(t *testing.T) {
	dir := t.TempDir()
	mk := func() *Storage {
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
