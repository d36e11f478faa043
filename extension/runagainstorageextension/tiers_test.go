// SPDX-License-Identifier: Apache-2.0

package runagainstorageextension

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configoptional"

	"github.com/runagain/runagain/internal/store/sqlitestore"
)

// localConfig is the embedded default's layout under dir: hot.db, warm.db, cold/.
func localConfig(dir string) *Config {
	cfg := NewDefaultConfig()
	cfg.Hot = configoptional.Some(HotConfig{Retention: DefaultHotRetention, SQLite: configoptional.Some(SQLiteConfig{Path: filepath.Join(dir, "hot.db")})})
	cfg.Warm = configoptional.Some(WarmConfig{Retention: DefaultWarmRetention, SQLite: configoptional.Some(SQLiteConfig{Path: filepath.Join(dir, "warm.db")})})
	cfg.Cold = configoptional.Some(ColdConfig{Parquet: configoptional.Some(ParquetConfig{URL: filepath.Join(dir, "cold")})})
	return cfg
}

// TestOpenTiersSkipsMissing: OpenTiers (the one walk of the tiers behind OpenReader and
// `runagain delete`) opens the real SQLite files that exist, in tier order, skips and never
// creates the missing warm file and cold directory, and fails naming the paths looked for when
// no tier exists.
func TestOpenTiersSkipsMissing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := localConfig(dir)

	_, err := cfg.OpenTiers(ctx, true)
	require.ErrorIs(t, err, ErrNoTier)
	assert.Contains(t, err.Error(), filepath.Join(dir, "hot.db"))
	assert.Contains(t, err.Error(), filepath.Join(dir, "cold"))

	db, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.NoError(t, os.Mkdir(filepath.Join(dir, "cold"), 0o750))

	for _, readOnly := range []bool{true, false} {
		tiers, err := cfg.OpenTiers(ctx, readOnly)
		require.NoError(t, err)
		require.Len(t, tiers, 2)
		assert.Equal(t, "hot", tiers[0].Name)
		assert.Equal(t, filepath.Join(dir, "hot.db"), tiers[0].Where)
		assert.NotNil(t, tiers[0].HotSQLite)
		assert.Equal(t, "cold", tiers[1].Name)
		assert.NotNil(t, tiers[1].Cold)
		for _, tr := range tiers {
			require.NoError(t, tr.Close())
		}
		assert.NoFileExists(t, filepath.Join(dir, "warm.db"), "a missing tier is not created (readOnly %v)", readOnly)
	}
}

// TestOpenTiersFailsNamingTheFile: a tier that fails to open (warm.db is not a SQLite file)
// fails OpenTiers naming the file, though the hot tier before it opened.
func TestOpenTiersFailsNamingTheFile(t *testing.T) {
	dir := t.TempDir()
	cfg := localConfig(dir)
	db, err := sqlitestore.Open(filepath.Join(dir, "hot.db"), sqlitestore.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "warm.db"), []byte("not a database, long enough to have a header"), 0o600))

	_, err = cfg.OpenTiers(context.Background(), false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "warm.db")
}
