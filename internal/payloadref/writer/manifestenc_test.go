// SPDX-License-Identifier: Apache-2.0

package writer

import (
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/runagain/runagain/internal/payloadref/ref"
)

// manifestOfReflect is the manifest encoding before appendManifestJSON: encoding/json of a Manifest.
func manifestOfReflect(n *node) []byte {
	m := ref.Manifest{V: ref.ManifestVersion, Size: int64(n.span.end - n.span.start), Parts: make([]ref.Part, 0, len(n.children))}
	for _, c := range n.children {
		if c.isRef {
			m.Parts = append(m.Parts, ref.Part{Ref: hex.EncodeToString(c.sum[:]), Size: int64(c.span.end - c.span.start), M: c.manifest, P: c.pack})
		} else {
			m.Parts = append(m.Parts, ref.Part{Lit: c.lit})
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// TestManifestEncoding: the hand-written manifest encoder writes the bytes encoding/json wrote
// (so manifests keep their format and size), for every manifest of planned trees: literal runs
// (escaped and binary-looking bytes included), references to values and sub-manifests, with and
// without pack ids.
func TestManifestEncoding(t *testing.T) {
	values := [][]byte{conversation("enc", 3), conversation("enc <&> \"q\"", 150)}
	for _, sh := range shapes {
		values = append(values, []byte(sh))
	}
	values = append(values, []byte("[\x01\x7f"+msg("user", string(make([]byte, 300)))+",\"\\u2028\","+msg("tool", "é€𝄞 "+string(make([]byte, 400)))+"]"))
	checked := 0
	for _, v := range values {
		plan := planSplit(v, 256, 8)
		if plan == nil {
			continue
		}
		var walk func(n *node, packed bool)
		walk = func(n *node, packed bool) {
			for i := range n.children {
				if c := &n.children[i]; c.isRef && packed {
					c.pack = "18c0000000000000-0123456789ab"
				}
			}
			got := manifestOf(n)
			if want := manifestOfReflect(n); string(got) != string(want) {
				t.Fatalf("manifest differs from encoding/json:\n got %s\nwant %s", got, want)
			}
			if _, err := ref.DecodeManifest(got); err != nil {
				t.Fatal(err)
			}
			checked++
			for i := range n.children {
				if c := &n.children[i]; c.manifest {
					walk(c, packed)
				}
			}
		}
		walk(plan, false)
		walk(plan, true)
	}
	if checked < 10 {
		t.Fatalf("only %d manifests checked", checked)
	}
}
