// SPDX-License-Identifier: Apache-2.0

package ref

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

const (
	// PackDir is the folder (under the bucket prefix) holding every pack: packs/<id>.pack.
	PackDir = "packs/"
	// PackSuffix ends every pack key.
	PackSuffix = ".pack"
)

// Object names one object: the SHA-256 of the original bytes it stands for, and whether it is a
// manifest (a value stored whole and the same value stored split are two objects).
type Object struct {
	Sum      [32]byte
	Manifest bool
}

// Name is the object's name inside a pack and in a reference's fragment: sha256/<hex>.zst or
// sha256/<hex>.manifest.zst (the key the object would have had as a single object).
func (k Object) Name() string {
	if k.Manifest {
		return ManifestKey(k.Sum)
	}
	return ValueKey(k.Sum)
}

// PackKey is the bucket key (without the bucket prefix) of pack id.
func PackKey(id string) string { return PackDir + id + PackSuffix }

// ValidPackID: ids are what newPackID makes (hex and '-'); anything else in a reference or a
// manifest is refused, so that a pack id can never name a path outside the pack folder.
func ValidPackID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c == '-') {
			return false
		}
	}
	return true
}

// ParsePackRef splits a pack reference's key and fragment: key ".../packs/<id>.pack" and
// fragment "sha256/<hex>.zst" or "sha256/<hex>.manifest.zst". ok is false for other keys.
func ParsePackRef(key, fragment string) (prefix, id string, k Object, ok bool, err error) {
	i := strings.LastIndex(key, PackDir)
	if i < 0 || !strings.HasSuffix(key, PackSuffix) {
		return "", "", k, false, nil
	}
	id = strings.TrimSuffix(key[i+len(PackDir):], PackSuffix)
	if !ValidPackID(id) {
		return "", "", k, true, fmt.Errorf("payloadref: %q is not a pack id", id)
	}
	sum, manifest, err := ParseKey(fragment)
	if err != nil {
		return "", "", k, true, fmt.Errorf("payloadref: pack reference fragment %q: %w", fragment, err)
	}
	return key[:i], id, Object{sum, manifest}, true, nil
}

// HexSum parses a 64-digit hex SHA-256.
func HexSum(s string) (sum [32]byte, err error) {
	if len(s) != 64 {
		return sum, fmt.Errorf("bad digest %q", s)
	}
	_, err = hex.Decode(sum[:], []byte(s))
	return sum, err
}

// Location is an object in a pack (the unit the index records).
type Location struct {
	Object
	Pack string
}

// ErrHashMismatch is returned (wrapped) when stored bytes do not hash to the digest in their key.
var ErrHashMismatch = errors.New("payloadref: SHA-256 mismatch")
