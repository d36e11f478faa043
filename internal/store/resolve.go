// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// MinTraceIDPrefix is the shortest trace-id prefix ResolveTraceID accepts (hex characters): short
// enough to type, long enough (16^6 ids) that a store of a few thousand runs rarely holds two.
const MinTraceIDPrefix = 6

// Errors of ResolveTraceID, for callers that map them (the UI: 400 and 404).
var (
	// ErrBadTraceID: neither 32 hex characters nor a hex prefix of at least MinTraceIDPrefix.
	ErrBadTraceID = errors.New("bad trace id")
	// ErrAmbiguousTraceID: the prefix starts more than one run's trace id.
	ErrAmbiguousTraceID = errors.New("ambiguous trace id prefix")
)

// maxCandidates bounds how many matching trace ids an ambiguous prefix's error lists.
const maxCandidates = 5

// ResolveTraceID turns a trace id, or an unambiguous prefix of one, into the full lower-case trace
// id of a run r holds. A full id (32 hex characters) is returned as is, without reading r (Run
// says whether it exists). A prefix of MinTraceIDPrefix to 31 hex characters streams r's runs
// (EachRun, every tier, memory bounded by its page) and must start exactly one trace id: no match wraps ErrNotFound; more than
// one wraps ErrAmbiguousTraceID and names up to 5 candidates; anything else wraps ErrBadTraceID.
func ResolveTraceID(ctx context.Context, r Reader, id string) (string, error) {
	id = strings.ToLower(strings.TrimSpace(id))
	if isHex(id) && len(id) == 32 {
		return id, nil
	}
	if len(id) < MinTraceIDPrefix || len(id) > 32 || !isHex(id) {
		return "", fmt.Errorf("%w %q: want 32 hex characters, or a prefix of at least %d", ErrBadTraceID, id, MinTraceIDPrefix)
	}
	var found []string
	seen := map[string]bool{}
	err := EachRun(ctx, r, RunFilter{}, func(sum RunSummary) bool {
		if strings.HasPrefix(sum.TraceID, id) && !seen[sum.TraceID] {
			seen[sum.TraceID] = true
			found = append(found, sum.TraceID)
		}
		return true
	})
	if err != nil {
		return "", err
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%w: no run's trace id starts with %s", ErrNotFound, id)
	case 1:
		return found[0], nil
	}
	n := len(found)
	if n > maxCandidates {
		found = append(found[:maxCandidates], "…")
	}
	return "", fmt.Errorf("%w %s matches %d runs: %s", ErrAmbiguousTraceID, id, n, strings.Join(found, ", "))
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}
