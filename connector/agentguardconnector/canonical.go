// SPDX-License-Identifier: Apache-2.0

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import "github.com/runagain/runagain/internal/jsonkit"

// canonicalJSON appends to dst the canonical form of the JSON text src (jsonkit.Canonical:
// RFC 8785 through jsontext, integers kept as written): no white space, object members sorted,
// strings in their minimal escaping and floating point numbers in their shortest form, so that
// key order, spacing, "\u0041" against "A" and 1.0 against 1 do not change a tool call's
// fingerprint. ok is false for text that is not one well-formed JSON value; dst is then returned
// as given.
//
// The form is hashed into in-memory loop fingerprints only (session state, never stored or
// emitted), so its details can change between versions without breaking any stored data.
func canonicalJSON(dst []byte, src string) (out []byte, ok bool) {
	out, err := jsonkit.CanonicalString(dst, src)
	return out, err == nil
}
