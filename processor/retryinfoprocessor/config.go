// SPDX-License-Identifier: Apache-2.0

package retryinfoprocessor // import "github.com/runagain/runagain/processor/retryinfoprocessor"

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/confmap"

	"github.com/runagain/runagain/internal/confdur"
)

// Config is the retry_info processor's configuration: how long a refused client is told to wait
// before it sends the request again (OTLP "Failures" and "Throttling": the gRPC status carries
// google.rpc.RetryInfo, which the otlp receiver also writes as the HTTP Retry-After header).
type Config struct {
	// OverloadDelay is the wait given with a memory_limiter refusal (sent as gRPC
	// RESOURCE_EXHAUSTED, HTTP 429). Whole seconds: Retry-After carries seconds. Default 1s.
	OverloadDelay time.Duration `mapstructure:"overload_delay"`
	// UnavailableDelay is the wait given with any other retryable refusal (a tier that could
	// not write, a full disk, a full queue; sent as gRPC UNAVAILABLE, HTTP 503). Default 5s.
	UnavailableDelay time.Duration `mapstructure:"unavailable_delay"`

	_ struct{}
}

// Bounds of the delays: Retry-After is sent in whole seconds (a delay under 1 s would read
// "retry now"), and a client told to wait longer than MaxDelay is better told the service is
// gone.
const (
	MinDelay = time.Second
	MaxDelay = time.Hour
)

func createDefaultConfig() *Config {
	return &Config{OverloadDelay: time.Second, UnavailableDelay: 5 * time.Second}
}

// Unmarshal decodes the section; a duration setting whose value is not a duration is an error
// naming its path, the value and what to write, and a key that names no setting is named by its
// path with the nearest setting (internal/confdur: the collector's decoder drops the value from
// its error and names a Go type for an unknown key).
func (c *Config) Unmarshal(conf *confmap.Conf) error { return confdur.Decode(conf, c) }

// Validate checks each delay is whole seconds within [MinDelay, MaxDelay]; errors name the
// field.
func (c *Config) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"overload_delay", c.OverloadDelay}, {"unavailable_delay", c.UnavailableDelay}} {
		switch {
		case f.d < MinDelay || f.d > MaxDelay:
			errs = append(errs, fmt.Errorf("%s: must be between %s and %s (Retry-After is whole seconds), got %s", f.name, MinDelay, MaxDelay, f.d))
		case f.d%time.Second != 0:
			errs = append(errs, fmt.Errorf("%s: must be whole seconds (Retry-After is whole seconds, %s would be sent as %s), got %s", f.name, f.d, f.d.Truncate(time.Second), f.d))
		}
	}
	return errors.Join(errs...)
}
