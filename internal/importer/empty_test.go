// SPDX-License-Identifier: Apache-2.0

package importer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEmptyCassetteRefused: a cassette recording no HTTP exchange, in each cassette format
// (nock writes "[]" for a test that made no request), is detected as that format and refused
// with ErrNoExchanges naming the file, instead of becoming an empty run.
func TestEmptyCassetteRefused(t *testing.T) {
	for file, format := range map[string]string{
		"nock.json": "nock", "vcrpy.yaml": "vcrpy", "govcr.yaml": "go-vcr", "har.har": "har", "wiremock.json": "wiremock",
	} {
		t.Run(format, func(t *testing.T) {
			p := filepath.Join("testdata", "empty", file)
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			f, err := Default.Detect(p, data)
			require.NoError(t, err)
			assert.Equal(t, format, f.Name())
			_, err = ParseFile(p)
			require.ErrorIs(t, err, ErrNoExchanges)
			assert.Equal(t, p+":1:1: "+format+" recording: no HTTP exchange recorded, nothing to import (a test that made no request)", err.Error())
		})
	}
}
