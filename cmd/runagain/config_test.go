// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/pricing"
)

// testFlags binds the CLI's store flags (the same variables) to a fresh flag set, so a test can
// mark some as given.
func testFlags(t *testing.T) *pflag.FlagSet {
	t.Helper()
	saved := []string{dataDirFlag, clickhouseFlag, clickhouseDBFlag, clickhouseHotDBFlag, coldURLFlag}
	t.Cleanup(func() {
		dataDirFlag, clickhouseFlag, clickhouseDBFlag, clickhouseHotDBFlag, coldURLFlag = saved[0], saved[1], saved[2], saved[3], saved[4]
	})
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.StringVar(&dataDirFlag, "data-dir", "./data", "")
	fs.StringVar(&clickhouseFlag, "clickhouse", "", "")
	fs.StringVar(&clickhouseDBFlag, "clickhouse-database", "default", "")
	fs.StringVar(&clickhouseHotDBFlag, "clickhouse-hot-database", "", "")
	fs.StringVar(&coldURLFlag, "cold-url", "", "")
	return fs
}

func shipped(name string) string { return filepath.Join("..", "..", "config", name) }

// TestConfigDefaultYAML: --config config/default.yaml gives the files the collector writes, with
// ${env:RUNAGAIN_DATA_DIR:-./data} expanded as the collector expands it: the variable when set,
// else ./data; --data-dir given explicitly wins over the variable.
func TestConfigDefaultYAML(t *testing.T) {
	ctx := context.Background()
	t.Setenv("RUNAGAIN_DATA_DIR", "") // restored when the test ends
	require.NoError(t, os.Unsetenv("RUNAGAIN_DATA_DIR"))
	cfg, err := loadStorageConfig(ctx, shipped("default.yaml"), testFlags(t))
	require.NoError(t, err)
	assert.Equal(t, "./data/hot.db", cfg.Hot.Get().SQLite.Get().Path, "an unset variable takes the default, as in the collector")

	t.Setenv("RUNAGAIN_DATA_DIR", "/srv/agents")
	cfg, err = loadStorageConfig(ctx, shipped("default.yaml"), testFlags(t))
	require.NoError(t, err)
	assert.Equal(t, "/srv/agents/hot.db", cfg.Hot.Get().SQLite.Get().Path)
	assert.Equal(t, "/srv/agents/warm.db", cfg.Warm.Get().SQLite.Get().Path)
	assert.Equal(t, "/srv/agents/cold", cfg.Cold.Get().Parquet.Get().URL)
	assert.Equal(t, "file:///srv/agents/blobs?create_dir=true&metadata=skip", cfg.Payloads.Get().URL)
	assert.Equal(t, "file:///srv/agents/datasets?create_dir=true&metadata=skip", cfg.Datasets.Get().URL)

	fs := testFlags(t)
	require.NoError(t, fs.Set("data-dir", "/elsewhere"))
	cfg, err = loadStorageConfig(ctx, shipped("default.yaml"), fs)
	require.NoError(t, err)
	assert.Equal(t, "/elsewhere/hot.db", cfg.Hot.Get().SQLite.Get().Path, "an explicit --data-dir overrides the variable")
}

// TestConfigGatewayYAML: the production gateway's ClickHouse tiers and buckets come from its
// environment as in the collector; --clickhouse and --cold-url given explicitly override them.
func TestConfigGatewayYAML(t *testing.T) {
	ctx := context.Background()
	for k, v := range map[string]string{
		"RUNAGAIN_CLICKHOUSE_ENDPOINT": "tcp://ch.db:9000", "RUNAGAIN_CLICKHOUSE_USERNAME": "reader",
		"RUNAGAIN_CLICKHOUSE_PASSWORD": "pw", "RUNAGAIN_PAYLOAD_URL": "s3://payloads?region=eu-west-1",
		"RUNAGAIN_COLD_URL": "s3://cold?region=eu-west-1", "RUNAGAIN_REDACTION_KEY": "k",
	} {
		t.Setenv(k, v)
	}
	cfg, err := loadStorageConfig(ctx, shipped("gateway.yaml"), testFlags(t))
	require.NoError(t, err)
	hot := cfg.Hot.Get().ClickHouse.Get()
	assert.Equal(t, "tcp://ch.db:9000", hot.Endpoint)
	assert.Equal(t, "reader", hot.Username)
	assert.Equal(t, "runagain", hot.Database, "${env:RUNAGAIN_CLICKHOUSE_DATABASE:-runagain}")
	assert.True(t, hot.CreateSchema, "a boolean from ${env:...:-true}")
	assert.Equal(t, "runagain", cfg.Warm.Get().ClickHouse.Get().Database)
	assert.Equal(t, "s3://cold?region=eu-west-1", cfg.Cold.Get().Parquet.Get().URL)
	assert.Equal(t, []string{"gen_ai.conversation.id", "session.id"}, cfg.SessionKeys)

	fs := testFlags(t)
	require.NoError(t, fs.Set("clickhouse", "http://127.0.0.1:8123"))
	require.NoError(t, fs.Set("cold-url", "/tmp/cold"))
	cfg, err = loadStorageConfig(ctx, shipped("gateway.yaml"), fs)
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:8123", cfg.Hot.Get().ClickHouse.Get().Endpoint)
	assert.Equal(t, "http://127.0.0.1:8123", cfg.Warm.Get().ClickHouse.Get().Endpoint)
	assert.Equal(t, "reader", cfg.Warm.Get().ClickHouse.Get().Username, "the rest of the section stays")
	assert.False(t, cfg.Cold.Get().ClickHouse.HasValue())
	assert.Equal(t, "/tmp/cold", cfg.Cold.Get().Parquet.Get().URL)
}

// TestConfigErrors: a file without the extension, or with a bad price override, is refused with
// the file and the field named.
func TestConfigErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, writeFile(p, body))
		return p
	}
	_, err := loadStorageConfig(ctx, write("none.yaml", "extensions:\n  health_check: {}\n"), testFlags(t))
	require.ErrorContains(t, err, "no runagain_storage extension under `extensions`")
	_, err = loadStorageConfig(ctx, write("price.yaml", "extensions:\n  runagain_storage:\n    pricing:\n      models:\n        - input_mtok: 1\n"), testFlags(t))
	require.ErrorContains(t, err, "pricing::models[0].model")
	_, err = loadStorageConfig(ctx, write("two.yaml", "extensions:\n  runagain_storage/a: {}\n  runagain_storage/b: {}\n"), testFlags(t))
	require.ErrorContains(t, err, "several runagain_storage extensions")

	p := write("ok.yaml", "extensions:\n  runagain_storage:\n    pricing:\n      models:\n        - {model: my-model, input_mtok: 2, output_mtok: 4}\n")
	cfg, err := loadStorageConfig(ctx, p, testFlags(t))
	require.NoError(t, err)
	prices, err := pricing.New(cfg.Pricing)
	require.NoError(t, err)
	_, ok := prices.Table().Lookup("", "my-model")
	assert.True(t, ok, "the override is in the CLI's price table")
}

func writeFile(p, body string) error { return os.WriteFile(p, []byte(body), 0o600) }

// TestConfigDataDirNotWritable: the CLI reads the tiers read-only, so a --config whose SQLite
// files the collector could not write (here: under a regular file, which `otelcol-runagain
// validate` refuses) is still loaded; opening the store then reports what is missing.
func TestConfigDataDirNotWritable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	require.NoError(t, writeFile(file, ""))
	p := filepath.Join(dir, "ro.yaml")
	require.NoError(t, writeFile(p, "extensions:\n  runagain_storage:\n    hot:\n      sqlite:\n        path: "+filepath.Join(file, "hot.db")+"\n"))
	cfg, err := loadStorageConfig(context.Background(), p, testFlags(t))
	require.NoError(t, err)
	require.Error(t, cfg.Validate(), "the collector's validation refuses it")
	_, err = cfg.OpenReader(context.Background())
	require.ErrorContains(t, err, "no tier found")
}
