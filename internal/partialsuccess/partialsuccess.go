// SPDX-License-Identifier: Apache-2.0

// Package partialsuccess carries OTLP partial success ("Partial Success" in the OTLP
// specification: rejected_spans and error_message in a successful export's response) from a
// pipeline component back to the receiver's answer. The partial_success extension, a middleware
// of the otlp receiver's gRPC and HTTP servers, puts a Result in each request's context
// (NewContext); a component that keeps part of a request from being stored as data calls Reject
// with the same context (pipelines without asynchronous steps pass it through unchanged); the
// extension then writes Rejected into the response. Without a Result in the context Reject does
// nothing, so components call it unconditionally.
package partialsuccess // import "github.com/runagain/runagain/internal/partialsuccess"

import (
	"context"
	"strings"
	"sync"
)

// Result collects the rejections of one export request. Safe for concurrent use (the receiver
// fans a request out to several pipelines).
type Result struct {
	mu       sync.Mutex
	rejected int64
	messages []string
}

type ctxKey struct{}

// NewContext returns ctx carrying a new, empty Result, and that Result.
func NewContext(ctx context.Context) (context.Context, *Result) {
	r := &Result{}
	return context.WithValue(ctx, ctxKey{}, r), r
}

// Reject records that n items (spans) of the request in ctx were not stored as data, with a
// message saying why and where they went (an error_message for the client: "SHOULD be a
// human-readable message"). It reports whether ctx carried a Result (false: the client will not
// learn of it from the response).
func Reject(ctx context.Context, n int64, message string) bool {
	r, ok := ctx.Value(ctxKey{}).(*Result)
	if !ok || n <= 0 {
		return ok
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejected += n
	if message != "" {
		r.messages = append(r.messages, message)
	}
	return true
}

// Rejected returns the count of rejected items and the messages joined with "; " (0, "" when
// none was rejected).
func (r *Result) Rejected() (int64, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rejected, strings.Join(r.messages, "; ")
}

// KeptInQuarantine is the phrase a partial-success message carries when the rejected items were
// not dropped but kept in the collector's dead-letter table (span_quarantine): a client
// (`runagain import`) that finds it in every message knows nothing was lost.
const KeptInQuarantine = "kept in the collector's dead-letter table (runagain quarantine)"
