// SPDX-License-Identifier: Apache-2.0

package seal

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRotate: Rotate rewraps every session key from the current key file to a new one (created),
// after which only the new key opens what was sealed; a rotation cut short is finished by running
// it again; the new key being the current one, a new key file inside the data directory, no key
// directory and no current key are errors that name what is wrong.
func TestRotate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	oldFile := filepath.Join(t.TempDir(), "old.key")
	k, err := OpenKeysWith(ctx, dir, Master{KeyFile: oldFile})
	require.NoError(t, err)
	sealed := map[string][]byte{}
	for _, s := range []string{"s1", "s2", "s3"} {
		dk, err := k.DataKey(ctx, s, true)
		require.NoError(t, err)
		sealed[s], err = Seal(dk, []byte("original of "+s), []byte(s))
		require.NoError(t, err)
	}
	require.NoError(t, k.Close())

	opens := func(m Master) map[string]bool {
		keys, err := OpenKeysWith(ctx, dir, m)
		require.NoError(t, err)
		defer keys.Close()
		got := map[string]bool{}
		for s, v := range sealed {
			dk, err := keys.DataKey(ctx, s, false)
			if err != nil {
				continue
			}
			pt, err := Open(dk, v, []byte(s))
			got[s] = err == nil && string(pt) == "original of "+s
		}
		return got
	}

	// cut short: one key already under the new master (as an interrupted run leaves it)
	newFile := filepath.Join(t.TempDir(), "new.key")
	nk, err := Master{KeyFile: newFile}.keeper(ctx, dir)
	require.NoError(t, err)
	ok, err := Master{KeyFile: oldFile}.keeper(ctx, dir)
	require.NoError(t, err)
	files, _ := filepath.Glob(filepath.Join(dir, "sessions", "*.key"))
	require.Len(t, files, 3)
	w, _ := os.ReadFile(files[0])
	dk, err := ok.Decrypt(ctx, w)
	require.NoError(t, err)
	w2, err := nk.Encrypt(ctx, dk)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(files[0], w2, 0o600))

	r, err := Rotate(ctx, dir, Master{KeyFile: oldFile}, Master{KeyFile: newFile})
	require.NoError(t, err)
	assert.Equal(t, Rotation{Rewrapped: 2, Sessions: 3, NewKey: newFile}, r)
	assert.Equal(t, map[string]bool{"s1": true, "s2": true, "s3": true}, opens(Master{KeyFile: newFile}))
	assert.Empty(t, trueOnly(opens(Master{KeyFile: oldFile})), "the old key opens nothing")

	// again, to a keeper URL: from the new file to a base64key:// key
	raw := make([]byte, 32)
	raw[0] = 7
	url := "base64key://" + base64.URLEncoding.EncodeToString(raw)
	r, err = Rotate(ctx, dir, Master{KeyFile: newFile}, Master{KeeperURL: url})
	require.NoError(t, err)
	assert.Equal(t, 3, r.Rewrapped)
	assert.Equal(t, "base64key://(key given)", r.NewKey, "the key itself is not printed")
	assert.Len(t, trueOnly(opens(Master{KeeperURL: url})), 3)

	// errors
	_, err = Rotate(ctx, dir, Master{KeeperURL: url}, Master{KeyFile: ""})
	assert.ErrorContains(t, err, "no new master key")
	_, err = Rotate(ctx, dir, Master{KeyFile: newFile}, Master{KeyFile: newFile})
	assert.ErrorContains(t, err, "is the current one")
	data := t.TempDir()
	inside := filepath.Join(data, "keys", "next.key")
	_, err = Rotate(ctx, dir, Master{KeeperURL: url}, Master{KeyFile: inside, DataDir: data})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), inside) && strings.Contains(err.Error(), data), err)
	_, err = Rotate(ctx, t.TempDir(), Master{KeeperURL: url}, Master{KeyFile: newFile})
	assert.ErrorContains(t, err, "no session keys in")
	_, err = Rotate(ctx, dir, Master{KeyFile: filepath.Join(t.TempDir(), "missing.key")}, Master{KeyFile: filepath.Join(t.TempDir(), "n.key")})
	assert.ErrorIs(t, err, errNoMaster)
	_, err = Rotate(ctx, dir, Master{KeyFile: oldFile}, Master{KeyFile: filepath.Join(t.TempDir(), "n.key")})
	assert.ErrorContains(t, err, "opens with neither the current nor the new master key", "the old key is no longer current")
}

func trueOnly(m map[string]bool) []string {
	var out []string
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	return out
}
