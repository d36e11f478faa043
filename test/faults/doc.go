// SPDX-License-Identifier: Apache-2.0

// Package faults is runagain's fault suite: the real binaries (bin/otelcol-runagain, bin/runagain,
// RUNAGAIN_BIN_DIR) under bad configuration, a second collector on the same data directory,
// kill -9 with the blob store down, a full disk, overload and concurrent readers. Each case is
// bounded in time and logs its counts: spans sent, acknowledged, refused (with the reason) and
// stored, and lost, which must be 0. README "Guarantees" lists what each case checks.
package faults
