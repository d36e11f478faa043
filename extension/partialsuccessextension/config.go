// SPDX-License-Identifier: Apache-2.0

package partialsuccessextension // import "github.com/runagain/runagain/extension/partialsuccessextension"

import "go.opentelemetry.io/collector/component"

// Config is the partial_success extension's configuration. It has no settings: the extension is
// named in the otlp receiver's protocols::grpc::middlewares and protocols::http::middlewares.
type Config struct {
	_ struct{}
}

var _ component.Config = (*Config)(nil)

// Validate checks the configuration; there is nothing to set.
func (c *Config) Validate() error { return nil }

func createDefaultConfig() component.Config { return &Config{} }
