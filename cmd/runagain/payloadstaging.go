// SPDX-License-Identifier: Apache-2.0

package main

import (
	"path/filepath"

	"github.com/runagain/runagain/internal/payloadref"
	"github.com/runagain/runagain/internal/payloadref/packfile"
)

// payloadStagingDir is the staging area of the payload store this CLI reads: packs the collector
// on this machine has made durable but not yet uploaded. It is runagain_storage's
// payloads::dir/staging with --config ("" when that configuration has no payloads section),
// else <data-dir>/payloads/staging (the embedded default's). A reader on another machine sees
// those objects once their pack is uploaded.
func payloadStagingDir() string {
	cfg, err := storageConfig()
	if err != nil {
		return "" // the caller's openReader has said why
	}
	dir := filepath.Join(dataDirFlag, "payloads")
	if cfg != nil {
		dir = ""
		if cfg.Payloads.HasValue() {
			dir = cfg.Payloads.Get().Dir
		}
	}
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, packfile.StagingDir)
}

// newPayloadResolver returns a Resolver that reads payload references, including packs still in
// payloadStagingDir; the caller closes it.
func newPayloadResolver() *payloadref.Resolver {
	return payloadref.NewResolver(payloadref.WithStagingDir(payloadStagingDir()))
}
