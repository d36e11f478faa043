// SPDX-License-Identifier: Apache-2.0

// Package configcheck is a confmap converter of the otelcol-runagain distribution (ocb
// `converters:`): it checks the resolved configuration for mistakes that the components' own
// Validate cannot see, so that `otelcol-runagain validate --config` and the start both fail
// with the field named:
//
//   - a `sending_queue::storage` (at any depth under an exporter, e.g. the tiered exporter's
//     `hot::sending_queue::storage`) that names no extension declared under `extensions` and
//     enabled in `service::extensions` (core otherwise fails only at start, with "no storage
//     client extension found" and no field named);
//   - a number whose magnitude is 2^63 or more (`min_size: 1e30`): no integer field can hold it,
//     and mapstructure's float-to-integer conversion would wrap it silently;
//   - a setting that moved from a component to the runagain_storage extension (the tiered
//     exporter's backends, payload_offload's bucket, agent_guard's pricing and session keys):
//     the error names the field and the extension's field that replaces it (moved.go), where
//     the component alone could only say "invalid keys".
//
// The converter only reads the configuration; it never changes it.
package configcheck // import "github.com/runagain/runagain/internal/configcheck"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/confmap"
)

// NewFactory returns the converter's factory (ocb manifest `converters:`).
func NewFactory() confmap.ConverterFactory {
	return confmap.NewConverterFactory(func(confmap.ConverterSettings) confmap.Converter { return checker{} })
}

type checker struct{}

// Convert returns every mistake found, each naming its field (path with `::`).
func (checker) Convert(_ context.Context, conf *confmap.Conf) error {
	return Check(conf.ToStringMap())
}

// Check checks a whole collector configuration (see the package doc).
func Check(cfg map[string]any) error {
	errs := checkMoved(cfg)
	walkNumbers("", cfg, &errs)

	declared := map[string]bool{}
	if m, ok := cfg["extensions"].(map[string]any); ok {
		for id := range m {
			declared[id] = true
		}
	}
	enabled := map[string]bool{}
	if svc, ok := cfg["service"].(map[string]any); ok {
		if l, ok := svc["extensions"].([]any); ok {
			for _, v := range l {
				if s, ok := v.(string); ok {
					enabled[s] = true
				}
			}
		}
	}
	if exps, ok := cfg["exporters"].(map[string]any); ok {
		ids := make([]string, 0, len(exps))
		for id := range exps {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			walkStorage("exporters::"+id, exps[id], declared, enabled, &errs)
		}
	}
	return errors.Join(errs...)
}

func walkNumbers(path string, v any, errs *[]error) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walkNumbers(join(path, k), x[k], errs)
		}
	case []any:
		for i, e := range x {
			walkNumbers(fmt.Sprintf("%s[%d]", path, i), e, errs)
		}
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) || math.Abs(x) >= math.MaxInt64 {
			*errs = append(*errs, fmt.Errorf("%s: %v is out of range (the largest accepted number is %d)", path, x, int64(math.MaxInt64)))
		}
	case float32:
		walkNumbers(path, float64(x), errs)
	case uint64:
		if x > math.MaxInt64 {
			*errs = append(*errs, fmt.Errorf("%s: %v is out of range (the largest accepted number is %d)", path, x, int64(math.MaxInt64)))
		}
	}
}

func walkStorage(path string, v any, declared, enabled map[string]bool, errs *[]error) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := join(path, k)
		if k == "sending_queue" {
			if q, ok := m[k].(map[string]any); ok {
				if s, ok := q["storage"].(string); ok && s != "" {
					switch {
					case !declared[s]:
						*errs = append(*errs, fmt.Errorf("%s::storage: %q is not an extension declared under `extensions` (declared: %s)", p, s, list(declared)))
					case !enabled[s]:
						*errs = append(*errs, fmt.Errorf("%s::storage: extension %q is declared but not listed in `service::extensions`", p, s))
					}
				}
			}
			continue
		}
		walkStorage(p, m[k], declared, enabled, errs)
	}
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "::" + k
}

func list(m map[string]bool) string {
	if len(m) == 0 {
		return "none"
	}
	l := make([]string, 0, len(m))
	for k := range m {
		l = append(l, k)
	}
	sort.Strings(l)
	return strings.Join(l, ", ")
}
