// SPDX-License-Identifier: Apache-2.0

package configcheck

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

// TestCheck: each file yields exactly the errors listed, in order (numbers first, then storage
// references, each in field order), and no other.
func TestCheck(t *testing.T) {
	for name, want := range map[string][]string{
		"ok.yaml": nil,
		"storage_typo.yaml": {
			`exporters::tiered::hot::sending_queue::storage: "file_storage/qeue" is not an extension declared under ` + "`extensions`" + ` (declared: file_storage/queue, runagain_storage)`,
			`exporters::tiered::warm::sending_queue::storage: extension "runagain_storage" is declared but not listed in ` + "`service::extensions`",
		},
		"moved.yaml": {
			"connectors::agent_guard::session_keys: moved to the runagain_storage extension: set `extensions::runagain_storage::session_keys` (and list runagain_storage in service::extensions); see README \"Upgrade notes\"",
			"exporters::tiered/old::hot::retention: moved to the runagain_storage extension: set `extensions::runagain_storage::hot::retention` (and list runagain_storage in service::extensions); see README \"Upgrade notes\"",
			"exporters::tiered/old::hot::sqlite: moved to the runagain_storage extension: set `extensions::runagain_storage::hot::sqlite` (and list runagain_storage in service::extensions); see README \"Upgrade notes\"",
			"processors::payload_offload::storage::url: moved to the runagain_storage extension: set `extensions::runagain_storage::payloads::url` (and list runagain_storage in service::extensions); see README \"Upgrade notes\"",
			"processors::payload_offload::compression_level: moved to the runagain_storage extension: set `extensions::runagain_storage::payloads::compression_level` (and list runagain_storage in service::extensions); see README \"Upgrade notes\"",
		},
		"huge.yaml": {
			"exporters::tiered::cold::sending_queue::queue_size: 10000000000000000000 is out of range (the largest accepted number is 9223372036854775807)",
			"exporters::tiered::hot::sending_queue::batch::min_size: 1e+30 is out of range (the largest accepted number is 9223372036854775807)",
		},
	} {
		t.Run(name, func(t *testing.T) {
			cm, err := confmaptest.LoadConf("testdata/" + name)
			require.NoError(t, err)
			c := NewFactory().Create(confmap.ConverterSettings{})
			assert.Equal(t, want, messages(c.Convert(context.Background(), cm)))
		})
	}
}

// messages are the messages of the errors joined in err (errors.Join), nil for no error.
func messages(err error) []string {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []string{err.Error()}
	}
	var out []string
	for _, e := range j.Unwrap() {
		out = append(out, e.Error())
	}
	return out
}
