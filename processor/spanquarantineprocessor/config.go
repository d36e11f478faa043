// SPDX-License-Identifier: Apache-2.0

package spanquarantineprocessor // import "github.com/runagain/runagain/processor/spanquarantineprocessor"

import (
	"go.opentelemetry.io/collector/component"
)

// Config is the span_quarantine processor's configuration.
type Config struct {
	// Storage names the runagain_storage extension whose hot tier holds the dead-letter table
	// (SQLite: table quarantine; ClickHouse: runagain_quarantine in the hot database). Empty:
	// the only runagain_storage extension of the collector. Without one (or without a hot tier)
	// a request holding an invalid span is refused whole with INVALID_ARGUMENT (HTTP 400), as
	// nothing could keep the span.
	Storage component.ID `mapstructure:"storage"`
}

var _ component.Config = (*Config)(nil)

// Validate checks the configuration; there is nothing to get wrong but the extension's name,
// which Start checks against the host.
func (c *Config) Validate() error { return nil }

func createDefaultConfig() component.Config { return &Config{} }
