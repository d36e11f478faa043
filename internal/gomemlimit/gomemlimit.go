// Package gomemlimit is a confmap converter of the otelcol-runagain distribution (ocb
// `converters:`): when the environment sets no GOMEMLIMIT, it gives the collector process the
// distribution's default Go soft memory limit, DefaultLimit (runtime/debug.SetMemoryLimit), at
// start, before any component runs. GOGC stays at the Go default (100): the limit only makes the
// garbage collector run earlier when the heap would otherwise grow past it.
//
// Why: the embedded default (config/default.yaml) must stay within the peak RSS budget of issue
// 17 (346 MB for `make bench`'s load). Of the collector's resident memory about 60 MB are the
// binary's own code and read-only data and some 30 MB are SQLite page caches and other memory the
// Go runtime does not manage, so the Go heap has to stay near 240 MiB; with GOGC alone the heap
// reaches twice its live size between collections, which is what made the peaks. Measured on
// `make bench`'s runagain load, three alternating runs each on the same binary: peak RSS 344,
// 321, 343 MB without a limit, 317, 309, 306 MB with it; CPU s per 1,000 spans 0.170, 0.187,
// 0.176 against 0.179, 0.175, 0.182 (within the runs' noise); collections 35-38 against 37-39.
// A higher GOGC under the limit (150, 200, 400, off; BENCHMARKS.md, "GOGC with the 240 MiB
// limit") collects up to a third less often, but each collection marks a larger heap: the GC
// CPU of a whole run and the peak RSS stay the same, so GOGC is left at the default.
//
// If the live heap ever exceeds the limit, the Go runtime caps the collector's time in garbage
// collection at about half its CPU and lets the heap grow (runtime/debug.SetMemoryLimit): the
// process slows down, it does not fail. A machine with a larger budget sets GOMEMLIMIT itself
// (deploy/kubernetes and the Helm chart set it to 80% of the container's memory limit); any
// value, `off` included, replaces this default.
//
// The converter never changes the configuration.
package gomemlimit // import "github.com/runagain/runagain/internal/gomemlimit"

import (
	"context"
	"os"
	"runtime/debug"

	"go.opentelemetry.io/collector/confmap"
)

// DefaultLimit is the soft memory limit of the collector process when GOMEMLIMIT is not set:
// 240 MiB (see the package doc for the budget and the measurement behind it).
const DefaultLimit int64 = 240 << 20

// NewFactory returns the converter's factory (ocb manifest `converters:`).
func NewFactory() confmap.ConverterFactory {
	return confmap.NewConverterFactory(func(confmap.ConverterSettings) confmap.Converter { return converter{} })
}

type converter struct{}

// Convert applies the default limit (Apply) and leaves the configuration as it is.
func (converter) Convert(context.Context, *confmap.Conf) error {
	Apply(os.LookupEnv)
	return nil
}

// Apply sets DefaultLimit as the process's Go soft memory limit unless lookup finds GOMEMLIMIT
// (the Go runtime has then applied that value itself), and returns the limit in effect, in bytes.
func Apply(lookup func(string) (string, bool)) int64 {
	if _, set := lookup("GOMEMLIMIT"); set {
		return debug.SetMemoryLimit(-1)
	}
	debug.SetMemoryLimit(DefaultLimit)
	return DefaultLimit
}
