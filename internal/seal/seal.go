// Package seal keeps the originals of values that redaction changed, encrypted, so that replay
// can serve the exact bytes an agent saw while nothing readable is stored in clear (issue 19).
//
// Envelope encryption: each session has a random 256-bit data key; values are sealed with
// AES-256-GCM under it. The data key itself is stored only wrapped (encrypted) by a master key
// through a gocloud.dev/secrets Keeper: by default a local key (localsecrets, the key in
// <dir>/master.key, mode 0600, created on first use); otherwise a Keeper URL: base64key://,
// awskms:// or gcpkms:// (drivers linked in drivers.go). Wrapped data keys live one file per session in
// <dir>/sessions/<sha256 of the session id>.key.
//
// Crypto-shredding: Destroy removes a session's wrapped data key. Every sealed copy of that
// session's originals, wherever it went (hot tier rows, exports, backups, packs, Parquet), can
// then no longer be opened; Open reports ErrErased.
//
// On spans: a sealed original is a bytes attribute AttrPrefix+<attribute key> holding
// version(1) | nonce(12) | AES-GCM(type(1) | original), with the trace id, span id and attribute
// key as additional data (a sealed value moved to another span or key does not open);
// AttrSession names the session whose key sealed it.
package seal

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"gocloud.dev/secrets"
	"gocloud.dev/secrets/localsecrets"
)

// Attribute names on spans.
const (
	// AttrPrefix prefixes the sealed original of the attribute named after it.
	AttrPrefix = "runagain.sealed."
	// AttrSession is the session whose data key sealed the span's originals (string).
	AttrSession = "runagain.sealed.session"
)

// ErrErased is returned when a session's data key was destroyed (or never existed where a sealed
// value says it should): its originals cannot be opened.
var ErrErased = errors.New("the session's key was destroyed: the sealed originals are erased")

// Keys holds the per-session data keys of one key directory. It is safe for concurrent use.
type Keys struct {
	dir    string
	keeper *secrets.Keeper
	mu     sync.Mutex
	cache  map[string][]byte // session -> data key
}

// OpenKeys opens the key directory dir (created, mode 0700, when missing). keeperURL is a
// gocloud.dev/secrets URL of the master key; "" means the local key in dir/master.key.
func OpenKeys(ctx context.Context, dir, keeperURL string) (*Keys, error) {
	if dir == "" {
		return nil, errors.New("seal: no key directory")
	}
	if err := os.MkdirAll(filepath.Join(dir, "sessions"), 0o700); err != nil {
		return nil, fmt.Errorf("seal: key directory: %w", err)
	}
	var keeper *secrets.Keeper
	if keeperURL == "" {
		key, err := localMasterKey(filepath.Join(dir, "master.key"))
		if err != nil {
			return nil, err
		}
		keeper = localsecrets.NewKeeper(key)
	} else {
		k, err := secrets.OpenKeeper(ctx, keeperURL)
		if err != nil {
			return nil, fmt.Errorf("seal: keeper_url: %w", err)
		}
		keeper = k
	}
	return &Keys{dir: dir, keeper: keeper, cache: map[string][]byte{}}, nil
}

// Exists reports whether dir holds a key directory made by OpenKeys.
func Exists(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "sessions"))
	return err == nil
}

// localMasterKey reads the base64 key in path, creating it (32 random bytes, mode 0600) when
// missing; concurrent creators agree on one key.
func localMasterKey(path string) ([32]byte, error) {
	var key [32]byte
	for range 2 {
		b, err := os.ReadFile(path)
		if err == nil {
			raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
			if err != nil || len(raw) != 32 {
				return key, fmt.Errorf("seal: %s: not a base64 256-bit key", path)
			}
			copy(key[:], raw)
			return key, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return key, fmt.Errorf("seal: %w", err)
		}
		if _, err := rand.Read(key[:]); err != nil {
			return key, err
		}
		if err := writeExclusive(path, []byte(base64.StdEncoding.EncodeToString(key[:])+"\n")); err != nil && !errors.Is(err, fs.ErrExist) {
			return key, fmt.Errorf("seal: %w", err)
		}
	}
	return key, fmt.Errorf("seal: %s: could not create the master key", path)
}

// writeExclusive creates path with data (mode 0600), failing with fs.ErrExist if it exists.
func writeExclusive(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer os.Remove(name)
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Link(name, path) // fails with EEXIST when another writer won
}

func (k *Keys) sessionPath(session string) string {
	sum := sha256.Sum256([]byte(session))
	return filepath.Join(k.dir, "sessions", hex.EncodeToString(sum[:16])+".key")
}

// DataKey returns the data key of session. With create, a missing key is made (random, wrapped
// by the master key, written once); without, a missing key is ErrErased.
func (k *Keys) DataKey(ctx context.Context, session string, create bool) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if dk, ok := k.cache[session]; ok {
		return dk, nil
	}
	path := k.sessionPath(session)
	for range 2 {
		wrapped, err := os.ReadFile(path)
		if err == nil {
			dk, err := k.keeper.Decrypt(ctx, wrapped)
			if err != nil {
				return nil, fmt.Errorf("seal: unwrapping the data key of session %q: %w", session, err)
			}
			k.cache[session] = dk
			return dk, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("seal: %w", err)
		}
		if !create {
			return nil, ErrErased
		}
		dk := make([]byte, 32)
		if _, err := rand.Read(dk); err != nil {
			return nil, err
		}
		wrapped, err = k.keeper.Encrypt(ctx, dk)
		if err != nil {
			return nil, fmt.Errorf("seal: wrapping a data key: %w", err)
		}
		if err := writeExclusive(path, wrapped); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("seal: %w", err)
		}
	}
	return nil, fmt.Errorf("seal: session %q: could not create its data key", session)
}

// Destroy removes the data key of session (crypto-shredding): every value sealed under it is
// unreadable from then on. It reports whether there was a key.
func (k *Keys) Destroy(session string) (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.cache, session)
	path := k.sessionPath(session)
	// overwrite before unlinking, so the wrapped key does not linger in the file's blocks
	if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
		if st, err := f.Stat(); err == nil {
			_, _ = f.Write(make([]byte, st.Size()))
			_ = f.Sync()
		}
		f.Close()
	}
	err := os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("seal: %w", err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return true, nil
}

// Close releases the keeper.
func (k *Keys) Close() error { return k.keeper.Close() }

const version = 1

// Seal encrypts plaintext with AES-256-GCM under key, binding aad.
func Seal(key, plaintext, aad []byte) ([]byte, error) {
	g, err := gcm(key)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 1+g.NonceSize(), 1+g.NonceSize()+len(plaintext)+g.Overhead())
	out[0] = version
	if _, err := rand.Read(out[1:]); err != nil {
		return nil, err
	}
	return g.Seal(out, out[1:1+g.NonceSize()], plaintext, aad), nil
}

// Open decrypts a value made by Seal.
func Open(key, sealed, aad []byte) ([]byte, error) {
	g, err := gcm(key)
	if err != nil {
		return nil, err
	}
	if len(sealed) < 1+g.NonceSize()+g.Overhead() || sealed[0] != version {
		return nil, errors.New("seal: not a sealed value")
	}
	return g.Open(nil, sealed[1:1+g.NonceSize()], sealed[1+g.NonceSize():], aad)
}

func gcm(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}
