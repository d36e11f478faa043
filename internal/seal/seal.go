// SPDX-License-Identifier: Apache-2.0

// Package seal keeps the originals of values that redaction changed, encrypted, so that replay
// can serve the exact bytes an agent saw while nothing readable is stored in clear (issue 19).
//
// Envelope encryption: each session has a random 256-bit data key; values are sealed with
// AES-256-GCM under it. The data key itself is stored only wrapped (encrypted) by a master key
// through a gocloud.dev/secrets Keeper (Master): a KMS named by a Keeper URL (awskms://,
// gcpkms://, azurekeyvault://, hashivault://, base64key://; drivers linked in drivers.go), or a
// local key (localsecrets) given by an environment variable or read from a file outside the data
// directory (created with a random key, mode 0600, on first use). A key file inside the data
// directory is refused unless explicitly allowed: whoever holds the data directory would hold
// the key too. Wrapped data keys live one file per session in
// <dir>/sessions/<sha256 of the session id>.key.
//
// What is sealed holds no credential: the caller seals the original with the findings of the
// secret rules still redacted (only what PII rules changed comes back), and never a value whose
// every change was a credential (agentredactionprocessor).
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

// DefaultKeyEnv is the environment variable read for the local master key (base64 of 32 bytes).
const DefaultKeyEnv = "RUNAGAIN_SEAL_KEY"

// DefaultKeyFileEnv is the environment variable OpenKeys reads for the master key file.
const DefaultKeyFileEnv = "RUNAGAIN_SEAL_KEY_FILE"

// Master says where the master key that wraps the data keys comes from, first match wins:
// KeeperURL (a KMS), the environment variable KeyEnv, the file KeyFile ("" means
// <key dir>/master.key, the layout of earlier releases).
type Master struct {
	KeeperURL string
	KeyEnv    string
	KeyFile   string
	// DataDir, when set, is the data directory the key file must not be inside (refused with an
	// error naming both paths unless AllowKeyInDataDir).
	DataDir           string
	AllowKeyInDataDir bool
	// NoCreate: a missing key file is not created; the keys then open no data key (DataKey
	// names what to set) but Destroy works (runagain delete needs no master key).
	NoCreate bool
}

// OpenKeys opens the key directory dir with the master key of keeperURL when set, else of
// $RUNAGAIN_SEAL_KEY, else of the file $RUNAGAIN_SEAL_KEY_FILE, else dir/master.key (what the
// CLI uses to open what the collector sealed); it never creates a master key.
func OpenKeys(ctx context.Context, dir, keeperURL string) (*Keys, error) {
	return OpenKeysWith(ctx, dir, Master{KeeperURL: keeperURL, KeyEnv: DefaultKeyEnv, KeyFile: os.Getenv(DefaultKeyFileEnv), NoCreate: true})
}

// errNoMaster is returned by DataKey when the keys were opened without a master key.
var errNoMaster = fmt.Errorf("seal: no master key: set $%s (the key), $%s (its file) or $RUNAGAIN_SEAL_KEEPER_URL (a KMS) as for the collector", DefaultKeyEnv, DefaultKeyFileEnv)

// OpenKeysWith opens the key directory dir (created, mode 0700, when missing) with the master key
// m names.
func OpenKeysWith(ctx context.Context, dir string, m Master) (*Keys, error) {
	if dir == "" {
		return nil, errors.New("seal: no key directory")
	}
	if err := os.MkdirAll(filepath.Join(dir, "sessions"), 0o700); err != nil {
		return nil, fmt.Errorf("seal: key directory: %w", err)
	}
	keeper, err := m.keeper(ctx, dir)
	if err != nil {
		return nil, err
	}
	return &Keys{dir: dir, keeper: keeper, cache: map[string][]byte{}}, nil
}

func (m Master) keeper(ctx context.Context, dir string) (*secrets.Keeper, error) {
	if m.KeeperURL != "" {
		k, err := secrets.OpenKeeper(ctx, m.KeeperURL)
		if err != nil {
			return nil, fmt.Errorf("seal: keeper_url: %w", err)
		}
		return k, nil
	}
	if m.KeyEnv != "" {
		if v := strings.TrimSpace(os.Getenv(m.KeyEnv)); v != "" {
			raw, err := base64.StdEncoding.DecodeString(v)
			if err != nil || len(raw) != 32 {
				return nil, fmt.Errorf("seal: $%s: not a base64 256-bit key (make one with: head -c 32 /dev/urandom | base64)", m.KeyEnv)
			}
			var key [32]byte
			copy(key[:], raw)
			return localsecrets.NewKeeper(key), nil
		}
	}
	path := m.KeyFile
	if path == "" {
		path = filepath.Join(dir, "master.key")
	}
	if m.DataDir != "" && !m.AllowKeyInDataDir {
		if k, d, in := inside(path, m.DataDir); in {
			return nil, fmt.Errorf("seal: the master key file %s is inside the data directory %s: whoever holds the data directory could open every sealed original; "+
				"keep the key outside it (seal_originals.key_file, $%s), give it by environment ($%s), use a KMS (seal_originals.keeper_url), "+
				"or accept the risk with seal_originals.allow_key_in_data_dir: true", k, d, DefaultKeyFileEnv, m.KeyEnv)
		}
	}
	if m.NoCreate {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	key, err := localMasterKey(path)
	if err != nil {
		return nil, err
	}
	return localsecrets.NewKeeper(key), nil
}

// inside reports whether path lies in dir (after making both absolute and resolving symbolic
// links as far as they exist), and returns both as compared.
func inside(path, dir string) (string, string, bool) {
	p, d := resolve(path), resolve(dir)
	rel, err := filepath.Rel(d, p)
	return p, d, err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func resolve(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if r, err := filepath.EvalSymlinks(a); err == nil {
		return r
	}
	if r, err := filepath.EvalSymlinks(filepath.Dir(a)); err == nil {
		return filepath.Join(r, filepath.Base(a))
	}
	return a
}

// Rewrap re-encrypts every session's data key with next (master key rotation): the sealed
// originals stay as they are, and from then on only next opens them. It returns how many data
// keys it rewrapped. A key that already opens with next (a rotation cut short and run again) is
// left as it is and not counted; a key that opens with neither is an error naming its file, and
// nothing after it is rewritten. Each file is replaced atomically (a temporary file renamed
// over it). Keys then uses next (Close closes it) and closes the previous keeper.
func (k *Keys) Rewrap(ctx context.Context, next *secrets.Keeper) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.keeper == nil {
		return 0, errNoMaster
	}
	files, err := filepath.Glob(filepath.Join(k.dir, "sessions", "*.key"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range files {
		wrapped, err := os.ReadFile(f)
		if err != nil {
			return n, fmt.Errorf("seal: %w", err)
		}
		dk, err := k.keeper.Decrypt(ctx, wrapped)
		if err != nil {
			if _, err2 := next.Decrypt(ctx, wrapped); err2 == nil {
				continue // rewrapped by an earlier run
			}
			return n, fmt.Errorf("seal: %s opens with neither the current nor the new master key: %w", f, err)
		}
		w2, err := next.Encrypt(ctx, dk)
		if err != nil {
			return n, fmt.Errorf("seal: wrapping with the new master key: %w", err)
		}
		tmp := f + ".new"
		if err := os.WriteFile(tmp, w2, 0o600); err != nil {
			return n, fmt.Errorf("seal: %w", err)
		}
		if err := os.Rename(tmp, f); err != nil {
			return n, fmt.Errorf("seal: %w", err)
		}
		n++
	}
	old := k.keeper
	k.keeper = next
	if old != nil {
		_ = old.Close()
	}
	return n, nil
}

// Rotation is the outcome of Rotate.
type Rotation struct {
	Rewrapped int    // data keys rewrapped by this run
	Sessions  int    // data keys in the directory
	NewKey    string // where the new master key is: its keeper URL (without secrets), file or variable
}

// Rotate rewraps every session data key of the key directory dir from the master key cur names
// to the one next names (master key rotation, Keys.Rewrap): the sealed originals are not
// touched. next's key file is created (random, mode 0600) when missing, and refused inside
// next.DataDir unless next.AllowKeyInDataDir, as at collector start. Errors: no key directory at
// dir, no current master key (cur names none that exists), next the same key file as cur, a
// data key that opens with neither key (named). Running it again after an interruption finishes
// the rotation (keys already rewrapped are skipped).
func Rotate(ctx context.Context, dir string, cur, next Master) (Rotation, error) {
	var r Rotation
	if !Exists(dir) {
		return r, fmt.Errorf("seal: no session keys in %s (sealing was never enabled there)", dir)
	}
	cur.NoCreate = true
	next.NoCreate = false
	if next.KeeperURL == "" && (next.KeyEnv == "" || os.Getenv(next.KeyEnv) == "") {
		if next.KeyFile == "" {
			return r, errors.New("seal: no new master key: give a keeper URL, a key file or a key variable")
		}
		curFile := cur.KeyFile
		if cur.KeeperURL == "" && (cur.KeyEnv == "" || os.Getenv(cur.KeyEnv) == "") {
			if curFile == "" {
				curFile = filepath.Join(dir, "master.key")
			}
			if resolve(curFile) == resolve(next.KeyFile) {
				return r, fmt.Errorf("seal: the new master key file %s is the current one", next.KeyFile)
			}
		}
		r.NewKey = next.KeyFile
	} else if next.KeeperURL != "" {
		r.NewKey = redactURL(next.KeeperURL)
	} else {
		r.NewKey = "$" + next.KeyEnv
	}
	keys, err := OpenKeysWith(ctx, dir, cur)
	if err != nil {
		return r, err
	}
	defer keys.Close()
	if keys.keeper == nil {
		return r, errNoMaster
	}
	nk, err := next.keeper(ctx, dir)
	if err != nil {
		return r, err
	}
	files, _ := filepath.Glob(filepath.Join(dir, "sessions", "*.key"))
	r.Sessions = len(files)
	r.Rewrapped, err = keys.Rewrap(ctx, nk)
	if err != nil {
		_ = nk.Close()
	}
	return r, err
}

// redactURL drops a keeper URL's query and userinfo (a base64key:// URL is the key itself).
func redactURL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return "(keeper URL)"
	}
	if scheme == "base64key" {
		return "base64key://(key given)"
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	return scheme + "://" + rest
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
	if k.keeper == nil {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && !create {
			return nil, ErrErased
		}
		return nil, errNoMaster
	}
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
func (k *Keys) Close() error {
	if k.keeper == nil {
		return nil
	}
	return k.keeper.Close()
}

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
