// SPDX-License-Identifier: Apache-2.0

package patterns

import "testing"

// TestMemoMatchesTheSameSpansOnly: a remembered signature is returned for the same set of
// spans in any order, and not once a span was added or changed its end or status.
func TestMemoMatchesTheSameSpansOnly(t *testing.T) {
	fp := func(spans ...[3]int64) Fingerprint {
		var f Fingerprint
		for _, s := range spans {
			f.Add("span"+string(rune('a'+s[0])), "chat", 100, s[1], int32(s[2]), "")
		}
		return f
	}
	m := NewMemo(2)
	sig := Signature{FinishReasons: []string{"length"}}
	m.Put("run1", fp([3]int64{0, 200, 0}, [3]int64{1, 300, 2}), sig, "agent")
	if got, agent, ok := m.Get("run1", fp([3]int64{1, 300, 2}, [3]int64{0, 200, 0})); !ok || agent != "agent" || len(got.FinishReasons) != 1 {
		t.Fatalf("same spans in another order: %v %q %v", ok, agent, got)
	}
	for name, other := range map[string]Fingerprint{
		"a span more":  fp([3]int64{0, 200, 0}, [3]int64{1, 300, 2}, [3]int64{2, 400, 0}),
		"another end":  fp([3]int64{0, 200, 0}, [3]int64{1, 301, 2}),
		"other status": fp([3]int64{0, 200, 0}, [3]int64{1, 300, 0}),
		"none":         {},
	} {
		if _, _, ok := m.Get("run1", other); ok {
			t.Errorf("%s: matched", name)
		}
	}
	if _, _, ok := m.Get("run2", fp([3]int64{0, 200, 0}, [3]int64{1, 300, 2})); ok {
		t.Error("another run matched")
	}
	var none *Memo
	none.Put("run1", fp([3]int64{0, 200, 0}), sig, "")
	if _, _, ok := none.Get("run1", fp([3]int64{0, 200, 0})); ok {
		t.Error("nil memo remembered")
	}
}

// TestKeysAreTheIDs: Keys gives what ID, VariantID and JSON give, and nothing for a passing run.
func TestKeysAreTheIDs(t *testing.T) {
	sig := Signature{Version: SignatureVersion, FinishReasons: []string{"length"}, Shape: []string{"chat", "tool lookup"}}
	id, vid, js := sig.Keys()
	if id != sig.ID() || vid != sig.VariantID() || string(js) != string(sig.JSON()) || id == "" || id == vid {
		t.Fatalf("Keys %q %q %s; ID %q VariantID %q JSON %s", id, vid, js, sig.ID(), sig.VariantID(), sig.JSON())
	}
	if id, vid, js := (Signature{}).Keys(); id != "" || vid != "" || js != nil {
		t.Fatalf("passing run: %q %q %s", id, vid, js)
	}
}
