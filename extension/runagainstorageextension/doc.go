//go:generate go tool mdatagen metadata.yaml

// Package runagainstorageextension implements the `runagain_storage` extension: the one place
// a runagain deployment says where its data lives and how it is priced. It owns
//
//   - the storage backends of the three tiers (DESIGN.md "Storage tiers"): SQLite files,
//     ClickHouse connections, the cold tier's Parquet bucket, and the payload bucket's URL;
//   - their retention janitors, which skip runs pinned by datasets (SetPinned);
//   - the price table: the embedded genai-prices table with the configured overrides
//     (internal/pricing), used for every cost;
//   - the session keys (the attributes naming a session).
//
// The tiered exporter, payload_offload and agent_guard find it through the host (Find), as
// Jaeger v2's storage exporter finds its jaeger_storage extension; the runagain CLI reads the
// same section of the same YAML (`runagain --config`) and opens readers with OpenReader.
package runagainstorageextension // import "github.com/runagain/runagain/extension/runagainstorageextension"
