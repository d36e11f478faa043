// SPDX-License-Identifier: Apache-2.0

package ref

import (
	"strings"
	"testing"
)

// TestPrefixPartNeedsVersion2: a prefix part in a version 1 manifest (which a reader before
// prefix parts would misread as a whole object) is refused, as is a prefix part without a
func TestPrefixPartNeedsVersion2(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	for _, doc := range []string{
		`{"v":1,"size":3,"parts":[{"ref":"` + sum + `","n":3,"m":true,"pre":true}]}`,
		`{"v":2,"size":0,"parts":[{"pre":true}]}`,
		`{"v":3,"size":0,"parts":[]}`,
	} {
		if _, err := DecodeManifest([]byte(doc)); err == nil {
			t.Fatalf("accepted %s", doc)
		}
	}
	if _, err := DecodeManifest([]byte(`{"v":2,"size":3,"parts":[{"ref":"` + sum + `","n":3,"m":true,"pre":true}]}`)); err != nil {
		t.Fatal(err)
	}
}
