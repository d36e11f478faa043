package configcheck

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

func TestCheck(t *testing.T) {
	for name, want := range map[string][]string{
		"ok.yaml": nil,
		"storage_typo.yaml": {
			`exporters::tiered::hot::sending_queue::storage: "file_storage/qeue" is not an extension declared under ` + "`extensions`" + ` (declared: file_storage/queue, runagain_storage)`,
			`exporters::tiered::warm::sending_queue::storage: extension "runagain_storage" is declared but not listed in ` + "`service::extensions`",
		},
		"huge.yaml": {
			"exporters::tiered::hot::sending_queue::batch::min_size: 1e+30 is out of range",
			"exporters::tiered::cold::sending_queue::queue_size: 10000000000000000000 is out of range",
		},
	} {
		t.Run(name, func(t *testing.T) {
			cm, err := confmaptest.LoadConf("testdata/" + name)
			require.NoError(t, err)
			c := NewFactory().Create(confmap.ConverterSettings{})
			err = c.Convert(context.Background(), cm)
			if want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
