// SPDX-License-Identifier: Apache-2.0

package seal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gocloud.dev/secrets"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func span(td ptrace.Traces) ptrace.Span {
	sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{1, 2, 3})
	sp.SetSpanID(pcommon.SpanID{4, 5, 6})
	return sp
}

func TestSealRestoreDestroy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	k, err := OpenKeysWith(ctx, dir, Master{}) // the local key in dir/master.key, created
	if err != nil {
		t.Fatal(err)
	}
	td := ptrace.NewTraces()
	sp := span(td)
	sp.Attributes().PutStr("session.id", "s-1")
	sp.Attributes().PutStr("http.response.body", `{"email":"ana@example.org"}`)
	sp.Attributes().PutEmptySlice("http.request.header.authorization").AppendEmpty().SetStr("Bearer abc")
	before := Snapshot(sp.Attributes())
	sp.Attributes().PutStr("http.response.body", `{"email":"email:0123456789ab"}`)
	sp.Attributes().PutEmptySlice("http.request.header.authorization").AppendEmpty().SetStr("[REDACTED:authorization]")
	n, err := SealChanged(ctx, k, sp, pcommon.NewMap(), before)
	if err != nil || n != 2 {
		t.Fatalf("sealed %d, %v", n, err)
	}
	// the wrapped data key is not the data key, and the master key file is private
	dk, _ := k.DataKey(ctx, "s-1", false)
	files, _ := filepath.Glob(filepath.Join(dir, "sessions", "*.key"))
	if len(files) != 1 {
		t.Fatalf("session key files: %v", files)
	}
	if wrapped, _ := os.ReadFile(files[0]); string(wrapped) == string(dk) {
		t.Fatal("data key stored in clear")
	}
	if st, _ := os.Stat(filepath.Join(dir, "master.key")); st.Mode().Perm() != 0o600 {
		t.Errorf("master.key mode %v", st.Mode().Perm())
	}
	// a sealed value moved to another span does not open
	moved := ptrace.NewTraces()
	sp.CopyTo(span(moved))
	moved.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).SetSpanID(pcommon.SpanID{9})
	if _, err := Restore(ctx, k, moved, nil); err == nil {
		t.Error("a sealed value opened on another span")
	}

	c := ptrace.NewTraces()
	td.CopyTo(c)
	rep, err := Restore(ctx, k, c, nil)
	if err != nil || rep.Restored != 2 {
		t.Fatalf("restored %d: %v", rep.Restored, err)
	}
	got := c.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes()
	if v, _ := got.Get("http.response.body"); v.Str() != `{"email":"ana@example.org"}` {
		t.Errorf("body %q", v.Str())
	}
	if v, _ := got.Get("http.request.header.authorization"); v.Slice().At(0).Str() != "Bearer abc" {
		t.Errorf("header %v", v.AsRaw())
	}
	if _, ok := got.Get(AttrPrefix + "http.response.body"); ok {
		t.Error("sealed attribute left after restoring")
	}

	if ok, err := k.Destroy("s-1"); !ok || err != nil {
		t.Fatalf("destroy: %v %v", ok, err)
	}
	if _, err := k.DataKey(ctx, "s-1", false); !errors.Is(err, ErrErased) {
		t.Fatalf("after destroy: %v", err)
	}
	c = ptrace.NewTraces()
	td.CopyTo(c)
	rep, err = Restore(ctx, k, c, nil)
	if err != nil || rep.Restored != 0 || len(rep.Erased) != 1 {
		t.Fatalf("after destroy: %+v %v", rep, err)
	}
}

// TestRestoreReportsUnsealedDifferences: without sealing, the responses redaction changed are
// reported with their keys and value counts; a span where only a request header changed is not.
func TestRestoreReportsUnsealedDifferences(t *testing.T) {
	td := ptrace.NewTraces()
	a := span(td)
	ch := a.Attributes().PutEmptyMap(RedactionChangedAttribute)
	ch.PutInt("http.response.body", 3)
	ch.PutInt("http.request.header.authorization", 1)
	b := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().AppendEmpty()
	b.SetSpanID(pcommon.SpanID{7})
	b.Attributes().PutEmptyMap(RedactionChangedAttribute).PutInt("http.request.header.authorization", 1)
	rep, err := Restore(context.Background(), nil, td, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Differs) != 1 || rep.Differs[0].Values != 3 || rep.Differs[0].Keys[0] != "http.response.body" {
		t.Errorf("%+v", rep.Differs)
	}
}

// TestKeeperURLs: the cloud KMS drivers are linked (their schemes are known), and a scheme that is
// not gives an error naming keeper_url.
func TestKeeperURLs(t *testing.T) {
	for _, s := range []string{"base64key", "awskms", "gcpkms"} {
		if !secrets.DefaultURLMux().ValidKeeperScheme(s) {
			t.Errorf("keeper scheme %s not linked", s)
		}
	}
	_, err := OpenKeys(context.Background(), t.TempDir(), "nosuchkms://key")
	if err == nil || !strings.Contains(err.Error(), "keeper_url") {
		t.Errorf("got %v", err)
	}
	// a base64key:// master key given by URL wraps and unwraps like the local one
	k, err := OpenKeys(context.Background(), t.TempDir(), "base64key://smGbjm71Nxd1Ig5FS0wj9SlbzAIrnolCz9bQQ6uAhl4=")
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	a, err := k.DataKey(context.Background(), "s", true)
	if err != nil {
		t.Fatal(err)
	}
	k.cache = map[string][]byte{}
	b, err := k.DataKey(context.Background(), "s", false)
	if err != nil || string(a) != string(b) {
		t.Fatalf("unwrapped a different key: %v", err)
	}
}

// TestRewrap: after rotating the master key, every session's data key opens with the new key
// only, and what was sealed under it opens as before.
func TestRewrap(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	oldFile, newFile := filepath.Join(t.TempDir(), "old.key"), filepath.Join(t.TempDir(), "new.key")
	k, err := OpenKeysWith(ctx, dir, Master{KeyFile: oldFile})
	if err != nil {
		t.Fatal(err)
	}
	dk, err := k.DataKey(ctx, "s1", true)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := Seal(dk, []byte("original"), nil)
	if err != nil {
		t.Fatal(err)
	}
	nk, err := OpenKeysWith(ctx, t.TempDir(), Master{KeyFile: newFile}) // makes the new key
	if err != nil {
		t.Fatal(err)
	}
	next := nk.keeper
	if n, err := k.Rewrap(ctx, next); err != nil || n != 1 {
		t.Fatalf("rewrapped %d: %v", n, err)
	}
	if _, err := OpenKeysWith(ctx, dir, Master{KeyFile: oldFile}); err != nil {
		t.Fatal(err)
	}
	stale, _ := OpenKeysWith(ctx, dir, Master{KeyFile: oldFile})
	if _, err := stale.DataKey(ctx, "s1", false); err == nil {
		t.Error("the old master key still opens the rewrapped data key")
	}
	fresh, _ := OpenKeysWith(ctx, dir, Master{KeyFile: newFile})
	dk2, err := fresh.DataKey(ctx, "s1", false)
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := Open(dk2, sealed, nil); err != nil || string(pt) != "original" {
		t.Fatalf("sealed value after rotation: %q %v", pt, err)
	}
}

// TestKeyFileInsideDataDir: a key file in the data directory, also through a symbolic link or
// "..", is refused naming both paths; outside, or allowed, it is used.
func TestKeyFileInsideDataDir(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	for _, kf := range []string{filepath.Join(data, "keys", "master.key"), filepath.Join(link, "seal.key"), filepath.Join(data, "x", "..", "seal.key")} {
		_, err := OpenKeysWith(ctx, t.TempDir(), Master{KeyFile: kf, DataDir: data})
		if err == nil || !strings.Contains(err.Error(), "inside the data directory") || !strings.Contains(err.Error(), "seal.key") && !strings.Contains(err.Error(), "master.key") {
			t.Errorf("%s: %v", kf, err)
		}
	}
	if _, err := OpenKeysWith(ctx, t.TempDir(), Master{KeyFile: filepath.Join(data, "seal.key"), DataDir: data, AllowKeyInDataDir: true}); err != nil {
		t.Error(err)
	}
	if _, err := OpenKeysWith(ctx, t.TempDir(), Master{KeyFile: filepath.Join(t.TempDir(), "seal.key"), DataDir: data}); err != nil {
		t.Error(err)
	}
}

// TestOpenKeysCreatesNoMasterKey: the CLI's OpenKeys without a master key creates none in the
// key directory; it can still destroy a session's key, and opening one says what to set.
func TestOpenKeysCreatesNoMasterKey(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	kf := filepath.Join(t.TempDir(), "seal.key")
	c, err := OpenKeysWith(ctx, dir, Master{KeyFile: kf})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.DataKey(ctx, "s1", true); err != nil {
		t.Fatal(err)
	}
	c.Close()
	t.Setenv(DefaultKeyEnv, "")
	t.Setenv(DefaultKeyFileEnv, "")
	k, err := OpenKeys(ctx, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if _, err := os.Stat(filepath.Join(dir, "master.key")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenKeys made a master key in the key directory: %v", err)
	}
	if _, err := k.DataKey(ctx, "s1", false); err == nil || !strings.Contains(err.Error(), DefaultKeyFileEnv) {
		t.Fatalf("DataKey without a master key: %v", err)
	}
	if ok, err := k.Destroy("s1"); !ok || err != nil {
		t.Fatalf("Destroy without a master key: %v %v", ok, err)
	}
}
