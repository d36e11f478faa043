// SPDX-License-Identifier: Apache-2.0

//go:generate go tool mdatagen metadata.yaml

// Package runagainstorageextension implements the `runagain_storage` extension: the one place
// a runagain deployment says where its data lives and how it is priced. It owns
//
//   - the storage backends of the three tiers (docs/architecture.md "Storage tiers"): SQLite
//     files, ClickHouse connections, the cold tier's Parquet bucket;
//   - the payload store: the payload bucket opened once at Start (writer.Store, with its
//     pack staging area and digest index), which every payload_offload instance writes through
//     and the payload janitor collects through;
//   - their retention janitors, which skip runs pinned by datasets (a pins.Source: SetPins);
//   - the price table: the embedded genai-prices table with the configured overrides
//     (internal/pricing), used for every cost;
//   - the session keys (the attributes naming a session).
//
// It is the foundation of the distribution: it imports storage libraries only, never a feature
// (internal/dataset, internal/erase, the test runner). Components find it through the host
// (Find) and get the Storage interface, as Jaeger v2's storage exporter gets a factory from its
// jaeger_storage extension; the runagain CLI reads the same section of the same YAML
// (`runagain --config`) and opens readers with OpenReader.
package runagainstorageextension // import "github.com/runagain/runagain/extension/runagainstorageextension"
