// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
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

// TraceIDPrefixLister is a reader that finds the trace ids starting with a prefix from an index
// (the SQLite files' run index, keyed by trace id) instead of listing every run: at most limit
// ids, in trace-id order. prefix is lower-case hex.
type TraceIDPrefixLister interface {
	TraceIDsWithPrefix(ctx context.Context, prefix string, limit int) ([]string, error)
}

// ResolveTraceID turns a trace id, or an unambiguous prefix of one, into the full lower-case trace
// id of a run r holds. A full id (32 hex characters) is returned as is, without reading r (Run
// says whether it exists). A prefix of MinTraceIDPrefix to 31 hex characters must start exactly
// one trace id: no match wraps ErrNotFound; more than one wraps ErrAmbiguousTraceID and names up to
// 5 candidates; anything else wraps ErrBadTraceID. Each tier is asked through its index
// (TraceIDPrefixLister: a range of the run index's key, as many rows as candidates), a tier
// without one by streaming its runs (EachRun, memory bounded by its page).
func ResolveTraceID(ctx context.Context, r Reader, id string) (string, error) {
	id = strings.ToLower(strings.TrimSpace(id))
	if isHex(id) && len(id) == 32 {
		return id, nil
	}
	if len(id) < MinTraceIDPrefix || len(id) > 32 || !isHex(id) {
		return "", fmt.Errorf("%w %q: want 32 hex characters, or a prefix of at least %d", ErrBadTraceID, id, MinTraceIDPrefix)
	}
	readers := []Reader{r}
	if t, ok := r.(*Tiered); ok {
		readers = t.Readers
	}
	var found []string
	seen := map[string]bool{}
	add := func(tid string) {
		if strings.HasPrefix(tid, id) && !seen[tid] {
			seen[tid] = true
			found = append(found, tid)
		}
	}
	for _, tr := range readers {
		if pl, ok := tr.(TraceIDPrefixLister); ok {
			ids, err := pl.TraceIDsWithPrefix(ctx, id, maxCandidates+1)
			if err != nil {
				return "", err
			}
			for _, tid := range ids {
				add(tid)
			}
			continue
		}
		if err := EachRun(ctx, tr, RunFilter{}, func(sum RunSummary) bool { add(sum.TraceID); return true }); err != nil {
			return "", err
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%w: no run's trace id starts with %s", ErrNotFound, id)
	case 1:
		return found[0], nil
	}
	sort.Strings(found)
	n := fmt.Sprint(len(found))
	if len(found) > maxCandidates {
		// an index lists at most maxCandidates+1 of a tier's matches
		found, n = append(found[:maxCandidates], "…"), "more than "+fmt.Sprint(maxCandidates)
	}
	return "", fmt.Errorf("%w %s matches %s runs: %s", ErrAmbiguousTraceID, id, n, strings.Join(found, ", "))
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}
