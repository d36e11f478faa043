// SPDX-License-Identifier: Apache-2.0

package ref

import (
	"encoding/json"
	"fmt"
)

// ManifestVersion is the version written in a Manifest without prefix parts (Part.Pre);
// ManifestVersionPrefix in one with them. Readers take both; a reader older than prefix parts
// refuses a version 2 manifest with a clear error instead of misreading it.
const (
	ManifestVersion       = 1
	ManifestVersionPrefix = 2
)

// Manifest rebuilds one value from parts: the value is the concatenation of its parts, in order.
// It is stored as JSON, zstd-compressed, under ManifestKey(SHA-256 of the value).
type Manifest struct {
	// V is ManifestVersion.
	V int `json:"v"`
	// Size is the length of the rebuilt value in bytes.
	Size int64 `json:"size"`
	// Parts, concatenated, give the value.
	Parts []Part `json:"parts"`
}

// Part is either literal bytes (Lit) or a reference to another object in the same bucket and
// under the same prefix: Ref is the hex SHA-256 of the bytes the part stands for, Size their
// length, and M tells whether the object is a manifest (ManifestKey) or a value (ValueKey).
// P is the id of the pack holding the object (packs/<P>.pack); empty for a single object
// (the layout before packs). With Pre (manifest version 2) the part is the first Size bytes of
// the referenced object, which may be longer: a resent conversation's next value is the previous
// value's bytes but its closing bracket plus the new messages, so its manifest names the
// previous value's manifest once instead of repeating every part of it (see planDelta).
type Part struct {
	Lit  []byte `json:"lit,omitempty"`
	Ref  string `json:"ref,omitempty"`
	Size int64  `json:"n,omitempty"`
	M    bool   `json:"m,omitempty"`
	P    string `json:"p,omitempty"`
	Pre  bool   `json:"pre,omitempty"`
}

// DecodeManifest parses and checks a manifest document.
func DecodeManifest(b []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("payloadref: bad manifest: %w", err)
	}
	if m.V != ManifestVersion && m.V != ManifestVersionPrefix {
		return nil, fmt.Errorf("payloadref: manifest version %d, want %d or %d", m.V, ManifestVersion, ManifestVersionPrefix)
	}
	var total int64
	for i, p := range m.Parts {
		switch {
		case p.Ref != "" && p.Lit != nil:
			return nil, fmt.Errorf("payloadref: manifest part %d has both lit and ref", i)
		case p.Pre && (p.Ref == "" || m.V < ManifestVersionPrefix):
			return nil, fmt.Errorf("payloadref: manifest part %d: a prefix part needs a ref and manifest version %d", i, ManifestVersionPrefix)
		case p.Ref != "":
			if p.Size < 0 {
				// A reader slices a prefix part's object to it: refused here, not a panic there.
				return nil, fmt.Errorf("payloadref: manifest part %d: negative size %d", i, p.Size)
			}
			if len(p.Ref) != 64 {
				return nil, fmt.Errorf("payloadref: manifest part %d: ref %q is not a SHA-256 hex digest", i, p.Ref)
			}
			if p.P != "" && !ValidPackID(p.P) {
				return nil, fmt.Errorf("payloadref: manifest part %d: %q is not a pack id", i, p.P)
			}
			total += p.Size
		default:
			total += int64(len(p.Lit))
		}
	}
	if total != m.Size {
		return nil, fmt.Errorf("payloadref: manifest parts add up to %d bytes, manifest says %d", total, m.Size)
	}
	return &m, nil
}
