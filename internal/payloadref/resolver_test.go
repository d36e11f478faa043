// SPDX-License-Identifier: Apache-2.0

package payloadref

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestForeignRef reads an object an SDK upload hook wrote (not content addressed): returned as stored.
func TestForeignRef(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "0b5c_input.json"), []byte(`[{"role":"user"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := NewResolver()
	defer func() { _ = r.Close() }()
	got, err := r.Fetch(context.Background(), "file://"+dir+"/0b5c_input.json")
	if err != nil || string(got) != `[{"role":"user"}]` {
		t.Fatalf("foreign ref: %q, %v", got, err)
	}
}
