// SPDX-License-Identifier: Apache-2.0

package main

import (
	"path/filepath"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/internal/payloadref"
)

// registerPayloadStaging lets every payload Resolver of the CLI read packs the collector on this
// machine has made durable but not yet uploaded: the staging area of runagain_storage's
// payloads::dir (with --config), else <data-dir>/payloads/staging (the embedded default's).
// A reader on another machine sees those objects once their pack is uploaded.
func registerPayloadStaging(cfg *runagainstorageextension.Config) {
	dir := filepath.Join(dataDirFlag, "payloads")
	if cfg != nil {
		dir = ""
		if cfg.Payloads.HasValue() {
			dir = cfg.Payloads.Get().Dir
		}
	}
	if dir != "" {
		payloadref.AddStagingDir(filepath.Join(dir, payloadref.StagingDir))
	}
}
