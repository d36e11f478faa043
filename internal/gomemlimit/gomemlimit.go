// SPDX-License-Identifier: Apache-2.0

// Package gomemlimit is a confmap converter of the otelcol-runagain distribution (ocb
// `converters:`): at start, before any component runs, it sets the collector process's Go soft
// memory limit (runtime/debug.SetMemoryLimit) from the machine or container it runs in, using
// github.com/KimMachineGun/automemlimit:
//
//   - GOMEMLIMIT in the environment wins (the Go runtime applied it itself; `off` included).
//   - Otherwise the limit is Ratio (0.8) of the cgroup memory limit (cgroup v1 or v2,
//     memlimit.FromCgroup), e.g. 3.2 GiB in a container limited to 4 GiB.
//   - AUTOMEMLIMIT overrides the ratio (a number in (0, 1]), and AUTOMEMLIMIT=off sets no limit
//     (automemlimit's own variable, read by memlimit.Set).
//   - Without a cgroup memory limit (a plain host, a container without limits) there is no soft
//     limit: the garbage collector paces by GOGC (100) alone, as in any Go program.
//
// Why 0.8: it is the share that config/default.yaml's memory_limiter (limit_percentage: 80,
// also of the cgroup limit) and the deploy manifests (deploy/kubernetes GOMEMLIMIT 3276MiB of
// 4Gi, the Helm chart's useGOMEMLIMIT) use, so the GC works harder exactly where memory_limiter
// starts to force collections; the other 20% covers memory the Go runtime does not manage (about
// 90 MB measured for the embedded default: the binary's code and SQLite's page caches).
// automemlimit's own default, 0.9, leaves too little of a small container for that.
//
// Why not a fixed number: session 1 set a fixed 240 MiB to meet one short benchmark's peak RSS.
// Issue 35 measured what that costs when the store grows: as the live heap neared the fixed
// limit the garbage collector ran ever more often, and CPU per span grew 3x over ten rounds of
// the same load. A limit must come from the memory the process actually has.
//
// If the live heap ever exceeds the limit, the Go runtime caps the collector's time in garbage
// collection at about half its CPU and lets the heap grow (runtime/debug.SetMemoryLimit): the
// process slows down, it does not fail. The converter never changes the configuration.
package gomemlimit // import "github.com/runagain/runagain/internal/gomemlimit"

import (
	"context"
	"errors"
	"os"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"go.opentelemetry.io/collector/confmap"
	"go.uber.org/zap"
)

// Ratio is the share of the cgroup memory limit given to the Go soft memory limit when neither
// GOMEMLIMIT nor AUTOMEMLIMIT is set (see the package doc for its source).
const Ratio = 0.8

// NewFactory returns the converter's factory (ocb manifest `converters:`).
func NewFactory() confmap.ConverterFactory {
	return confmap.NewConverterFactory(func(set confmap.ConverterSettings) confmap.Converter {
		return converter{logger: set.Logger}
	})
}

type converter struct{ logger *zap.Logger }

// Convert applies the limit (Apply) and leaves the configuration as it is. A malformed
// AUTOMEMLIMIT is an error naming the variable: the collector does not start.
func (c converter) Convert(context.Context, *confmap.Conf) error {
	res, err := Apply(memlimit.FromCgroup)
	if err != nil {
		return err
	}
	if c.logger != nil {
		c.logger.Info("Go soft memory limit", zap.String("source", res.Source), zap.Int64("bytes", res.Limit))
	}
	return nil
}

// Result is the limit in effect after Apply: Limit in bytes (math.MaxInt64 for none) and
// Source, one of "GOMEMLIMIT", "AUTOMEMLIMIT=off", "cgroup", or "none (...)" with the reason.
type Result struct {
	Limit  int64
	Source string
}

// Apply sets the process's Go soft memory limit to Ratio (or AUTOMEMLIMIT's ratio) of what
// provider reports (memlimit.FromCgroup in the collector), to no limit when provider reports
// memlimit.ErrNoLimit or another error (no readable cgroup), and keeps a GOMEMLIMIT the runtime
// already applied. Errors: a malformed or out-of-range AUTOMEMLIMIT.
func Apply(provider memlimit.Provider) (Result, error) {
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok && v != "" {
		return Result{Limit: debug.SetMemoryLimit(-1), Source: "GOMEMLIMIT"}, nil
	}
	if v, _ := os.LookupEnv("AUTOMEMLIMIT"); v == "off" {
		return Result{Limit: debug.SetMemoryLimit(-1), Source: "AUTOMEMLIMIT=off"}, nil
	}
	source := "cgroup"
	fromCgroup := func() (uint64, error) {
		l, err := provider()
		if err != nil {
			source = "none (no cgroup memory limit)"
			if !errors.Is(err, memlimit.ErrNoLimit) {
				source = "none (" + err.Error() + ")"
			}
			return 0, memlimit.ErrNoLimit // memlimit.Set: math.MaxInt64, no ratio applied
		}
		return l, nil
	}
	limit, err := memlimit.Set(memlimit.WithRatio(Ratio), memlimit.WithProvider(fromCgroup))
	if err != nil {
		return Result{Limit: debug.SetMemoryLimit(-1)}, errors.New("gomemlimit: " + err.Error() + " (environment variable AUTOMEMLIMIT: a ratio in (0, 1] or off)")
	}
	return Result{Limit: limit, Source: source}, nil
}
