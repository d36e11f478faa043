// SPDX-License-Identifier: Apache-2.0

//go:generate go tool mdatagen metadata.yaml

// Package partialsuccessextension implements the partial_success extension: a server middleware
// (extensionmiddleware.GRPCServer and HTTPServer) for core's otlp receiver that answers a traces
// export with OTLP partial success (rejected_spans and error_message, OTLP specification
// "Partial Success") when a pipeline component rejected part of the request through
// internal/partialsuccess (the span_quarantine processor, for spans with all-zero ids). Core's
// receiver of v0.165 always answers a successful export with an empty response
// (receiver/otlpreceiver/internal/trace/otlp.go); this wraps its transports instead of
// replacing it, so its decoding, limits, auth and telemetry stay core's.
package partialsuccessextension // import "github.com/runagain/runagain/extension/partialsuccessextension"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"

	"github.com/runagain/runagain/extension/partialsuccessextension/internal/metadata"
)

// NewFactory returns the partial_success extension factory.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, createExtension, metadata.ExtensionStability)
}

func createExtension(_ context.Context, _ extension.Settings, _ component.Config) (extension.Extension, error) {
	return &Extension{}, nil
}
