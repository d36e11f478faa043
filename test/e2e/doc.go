// SPDX-License-Identifier: Apache-2.0

// Package e2e holds end-to-end tests of the otelcol-runagain distribution and the runagain CLI:
// the real binaries (built by `make build`, found through RUNAGAIN_BIN_DIR) on temporary data
// directories, fed with real agent traces from the corpus (RUNAGAIN_CORPUS).
package e2e
