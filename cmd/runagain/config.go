// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/pflag"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/internal/pricing"
)

// configFlag is the collector configuration the CLI reads its store and prices from: the
// runagain_storage extension's section, resolved exactly as otelcol-runagain resolves it
// (confmap with the file, env and yaml providers, so ${env:RUNAGAIN_DATA_DIR:-./data} expands
// the same way). Empty: the embedded default's files under --data-dir, the default prices.
var configFlag string

func init() {
	rootCmd.PersistentFlags().StringVar(&configFlag, "config", os.Getenv("RUNAGAIN_CONFIG"),
		"collector configuration (YAML) whose runagain_storage extension says where the store is and how calls are priced, "+
			"e.g. config/default.yaml; flags given explicitly override it (env RUNAGAIN_CONFIG)")
}

var (
	storageOnce sync.Once
	storageCfg  *runagainstorageextension.Config
	storageErr  error
)

// storageConfig is the runagain_storage configuration the CLI uses: from --config with the
// explicit flags applied over it, or nil without --config.
func storageConfig() (*runagainstorageextension.Config, error) {
	storageOnce.Do(func() {
		if configFlag == "" {
			return
		}
		storageCfg, storageErr = loadStorageConfig(context.Background(), configFlag, rootCmd.PersistentFlags())
	})
	return storageCfg, storageErr
}

// loadStorageConfig reads the runagain_storage extension of the collector configuration at
// path. An explicit --data-dir is applied as RUNAGAIN_DATA_DIR before the configuration is
// resolved (the shipped configurations place every file under ${env:RUNAGAIN_DATA_DIR}); an
// explicit --clickhouse, --clickhouse-database, --clickhouse-hot-database or --cold-url replaces
// the corresponding settings after. It is validated for reading only (ValidateForReading): the
// CLI may read a data directory it cannot write.
func loadStorageConfig(ctx context.Context, path string, flags *pflag.FlagSet) (*runagainstorageextension.Config, error) {
	changed := func(name string) bool {
		f := flags.Lookup(name)
		return f != nil && f.Changed
	}
	if changed("data-dir") {
		if err := os.Setenv("RUNAGAIN_DATA_DIR", dataDirFlag); err != nil {
			return nil, err
		}
	}
	r, err := confmap.NewResolver(confmap.ResolverSettings{
		URIs:              []string{"file:" + path},
		ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory(), yamlprovider.NewFactory()},
		DefaultScheme:     "env",
	})
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	conf, err := r.Resolve(ctx)
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	exts, err := conf.Sub("extensions")
	if err != nil {
		return nil, fmt.Errorf("--config %s: extensions: %w", path, err)
	}
	typ := component.MustNewType("runagain_storage")
	var names []string
	for k := range exts.ToStringMap() {
		var id component.ID
		if err := id.UnmarshalText([]byte(k)); err == nil && id.Type() == typ {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	switch len(names) {
	case 0:
		return nil, fmt.Errorf("--config %s: no runagain_storage extension under `extensions`", path)
	case 1:
	default:
		return nil, fmt.Errorf("--config %s: several runagain_storage extensions (%s); keep one per file for the CLI", path, strings.Join(names, ", "))
	}
	sub, err := exts.Sub(names[0])
	if err != nil {
		return nil, err
	}
	cfg := runagainstorageextension.NewDefaultConfig()
	if err := sub.Unmarshal(cfg); err != nil {
		return nil, fmt.Errorf("--config %s: extensions::%s: %w", path, names[0], err)
	}
	applyFlagOverrides(cfg, changed)
	if err := cfg.ValidateForReading(); err != nil {
		return nil, fmt.Errorf("--config %s: extensions::%s: %w", path, names[0], err)
	}
	return cfg, nil
}

// applyFlagOverrides puts the explicitly given ClickHouse and cold flags over cfg.
func applyFlagOverrides(cfg *runagainstorageextension.Config, changed func(string) bool) {
	chFor := func(cur configoptional.Optional[runagainstorageextension.ClickHouseConfig], db string) configoptional.Optional[runagainstorageextension.ClickHouseConfig] {
		var c runagainstorageextension.ClickHouseConfig
		if cur.HasValue() {
			c = *cur.Get()
		} else {
			c = runagainstorageextension.ClickHouseConfig{Database: "default"}
		}
		if changed("clickhouse") {
			c.Endpoint = clickhouseFlag
		}
		if db != "" {
			c.Database = db
		}
		return configoptional.Some(c)
	}
	if changed("clickhouse") || changed("clickhouse-database") || changed("clickhouse-hot-database") {
		hotDB := ""
		if changed("clickhouse-hot-database") {
			hotDB = clickhouseHotDBFlag
		} else if changed("clickhouse-database") {
			hotDB = clickhouseDBFlag
		}
		db := ""
		if changed("clickhouse-database") {
			db = clickhouseDBFlag
		}
		if changed("clickhouse") || (cfg.Hot.HasValue() && cfg.Hot.Get().ClickHouse.HasValue()) {
			h := runagainstorageextension.HotConfig{Retention: runagainstorageextension.DefaultHotRetention}
			if cfg.Hot.HasValue() {
				h = *cfg.Hot.Get()
			}
			h.SQLite = configoptional.None[runagainstorageextension.SQLiteConfig]()
			h.ClickHouse = chFor(h.ClickHouse, hotDB)
			cfg.Hot = configoptional.Some(h)
		}
		if changed("clickhouse") || (cfg.Warm.HasValue() && cfg.Warm.Get().ClickHouse.HasValue()) {
			w := runagainstorageextension.WarmConfig{Retention: runagainstorageextension.DefaultWarmRetention}
			if cfg.Warm.HasValue() {
				w = *cfg.Warm.Get()
			}
			w.SQLite = configoptional.None[runagainstorageextension.SQLiteConfig]()
			w.ClickHouse = chFor(w.ClickHouse, db)
			cfg.Warm = configoptional.Some(w)
		}
		if !changed("cold-url") && (changed("clickhouse") || (cfg.Cold.HasValue() && cfg.Cold.Get().ClickHouse.HasValue())) {
			k := runagainstorageextension.ColdConfig{}
			if cfg.Cold.HasValue() {
				k = *cfg.Cold.Get()
			}
			k.Parquet = configoptional.None[runagainstorageextension.ParquetConfig]()
			k.ClickHouse = chFor(k.ClickHouse, db)
			cfg.Cold = configoptional.Some(k)
		}
	}
	if changed("cold-url") {
		k := runagainstorageextension.ColdConfig{}
		if cfg.Cold.HasValue() {
			k = *cfg.Cold.Get()
		}
		k.ClickHouse = configoptional.None[runagainstorageextension.ClickHouseConfig]()
		k.Parquet = configoptional.Some(runagainstorageextension.ParquetConfig{URL: coldURLFlag})
		cfg.Cold = configoptional.Some(k)
	}
}

// openPricing returns the prices the CLI shows costs with: the runagain_storage extension's
// table and overrides from --config, else the embedded table without overrides.
func openPricing() (*pricing.Prices, error) {
	cfg, err := storageConfig()
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return pricing.DefaultPrices(), nil
	}
	p, err := pricing.New(cfg.Pricing)
	if err != nil {
		return nil, errors.New("pricing: " + err.Error())
	}
	return p, nil
}
