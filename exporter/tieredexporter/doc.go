//go:generate go tool mdatagen metadata.yaml

// Package tieredexporter implements the `tiered` exporter: runagain's storage for agent runs,
// in tiers (DESIGN.md "Storage tiers"). Each tier is optional, configured on its own, and has its
// own exporterhelper sending queue, retry and timeout, so one tier's outage never blocks another.
//
// The hot tier keeps full spans and log records. Its embedded backend is a SQLite file whose
// schema is the contract the CLI reads; it is documented in package
// github.com/runagain/runagain/internal/store/sqlitestore.
package tieredexporter // import "github.com/runagain/runagain/exporter/tieredexporter"
