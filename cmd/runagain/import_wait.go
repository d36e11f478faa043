// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/store"
)

// defaultImportWait bounds how long `runagain import` waits for its runs to become readable:
// the tiers write in batches, so a run shows up a second or two after its spans were accepted.
const defaultImportWait = 15 * time.Second

// importPoll is the pause between two reads of the store while waiting.
const importPoll = 100 * time.Millisecond

// sentRun is one imported run: its trace id, how many spans were sent, and the file it came from.
type sentRun struct {
	file    string
	traceID string
	spans   int
}

// runsOf lists the traces of td with their span counts, in trace id order.
func runsOf(file string, td ptrace.Traces) []sentRun {
	n := map[string]int{}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				if sp := spans.At(k); !sp.TraceID().IsEmpty() && !sp.SpanID().IsEmpty() {
					n[sp.TraceID().String()]++ // an invalid span is quarantined, not a run
				}
			}
		}
	}
	out := make([]sentRun, 0, len(n))
	for id, c := range n {
		out = append(out, sentRun{file: file, traceID: id, spans: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].traceID < out[j].traceID })
	return out
}

// waitReadable polls the store (openReader) until every run in runs is readable with at least
// as many spans as were sent, or until wait has passed. Without a local store (no hot.db under
// --data-dir and no ClickHouse configured) there is nothing to wait for and it returns nil.
func waitReadable(ctx context.Context, runs []sentRun, wait time.Duration) error {
	if clickhouseFlag == "" && !exists(filepath.Join(dataDirFlag, "hot.db")) {
		return nil
	}
	deadline := time.Now().Add(wait)
	pending := append([]sentRun(nil), runs...)
	var lastErr error
	for {
		if rd, err := openReader(); err != nil {
			lastErr = err
		} else {
			var still []sentRun
			for _, r := range pending {
				run, err := rd.Run(ctx, r.traceID)
				switch {
				case err == nil && run.Traces.SpanCount() >= r.spans:
				case err == nil:
					lastErr = fmt.Errorf("run %s has %d of %d spans", r.traceID, run.Traces.SpanCount(), r.spans)
					still = append(still, r)
				case errors.Is(err, store.ErrNotFound):
					still = append(still, r)
				default:
					lastErr = err
					still = append(still, r)
				}
			}
			rd.Close()
			pending = still
		}
		if len(pending) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var ids []string
			for _, r := range pending {
				ids = append(ids, r.file+": "+r.traceID)
			}
			msg := fmt.Sprintf("sent, but not readable in %s after %s (is the collector writing there?): %s",
				storeName(), wait, strings.Join(ids, ", "))
			if lastErr != nil {
				msg += fmt.Sprintf(" (last: %v)", lastErr)
			}
			return errors.New(msg)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(importPoll):
		}
	}
}

func storeName() string {
	if configFlag != "" {
		return "the store of " + configFlag
	}
	if clickhouseFlag != "" {
		return clickhouseFlag
	}
	if abs, err := filepath.Abs(dataDirFlag); err == nil {
		return abs
	}
	return dataDirFlag
}
