// SPDX-License-Identifier: Apache-2.0

package redact

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/runagain/runagain/internal/secretfile"
)

// KeyFileBytes is the size of a generated HMAC key (256 bits: RFC 2104 section 3 advises a key
// at least as long as the hash output, 32 bytes for SHA-256).
const KeyFileBytes = 32

// MinKeyBytes is the shortest key accepted from a key file: 128 bits, the least RFC 2104
// section 3 advises (a key shorter than the hash output weakens the HMAC).
const MinKeyBytes = 16

// LoadOrCreateKeyFile returns the HMAC key stored in path (hex, one line). When the file does not
// exist it draws a random key, writes it with mode 0600 (creating the directory) and returns it,
// so every process pointed at the same file (collector restarts, `runagain replay`) hashes a value
// to the same token. Errors name the path; an empty or non-hex file is an error, never replaced,
// and so is a file readable by group or others (secretfile.CheckPrivate).
func LoadOrCreateKeyFile(path string) ([]byte, error) {
	if b, err := os.ReadFile(path); err == nil {
		if err := secretfile.CheckPrivate(path); err != nil {
			return nil, fmt.Errorf("redaction key file: %w", err)
		}
		key, err := hex.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(key) < MinKeyBytes {
			return nil, fmt.Errorf("redaction key file %s: want one line of hex, at least %d bytes (%d hex digits)", path, MinKeyBytes, 2*MinKeyBytes)
		}
		return key, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("redaction key file: %w", err)
	}
	key := make([]byte, KeyFileBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("redaction key file %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("redaction key file: %w", err)
	}
	// Write the key to a temporary file, then link it into place: a concurrent reader sees either
	// no file or the whole key, and of two processes creating it at once the second uses the first's.
	tmp, err := os.CreateTemp(dir, ".redaction-key-*")
	if err != nil {
		return nil, fmt.Errorf("redaction key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(hex.EncodeToString(key) + "\n"); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("redaction key file %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("redaction key file %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, os.ErrExist) {
		return LoadOrCreateKeyFile(path)
	} else if err != nil {
		return nil, fmt.Errorf("redaction key file: %w", err)
	}
	return key, nil
}
