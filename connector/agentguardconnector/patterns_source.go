// SPDX-License-Identifier: Apache-2.0

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"context"
	"time"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/internal/store"
)

// patternSourceOf is the run index the pattern watcher reads: the hot tier's, when the
// runagain_storage extension's hot backend keeps failure signatures in its run index
// (store.PatternReader: the SQLite hot tier). Otherwise nil and why.
func patternSourceOf(st runagainstorageextension.Storage) (patternSource, string) {
	if st == nil {
		return nil, "the collector has no runagain_storage extension"
	}
	b, err := st.Backend("hot")
	if err != nil {
		return nil, "no hot tier to read patterns from: " + err.Error()
	}
	pr, ok := b.(store.PatternReader)
	if !ok {
		return nil, "the hot tier's backend keeps no failure patterns in its run index (only the SQLite hot tier does)"
	}
	return readerSource(pr), ""
}

// readerSource streams a store.PatternReader's failing runs as the watcher reads them.
func readerSource(pr store.PatternReader) patternSource {
	return func(ctx context.Context, since, until time.Time, yield func(patternRun) error) error {
		return pr.PatternRuns(ctx, store.PatternFilter{Since: since, Until: until}, func(r store.PatternRun) error {
			if r.PatternID == "" {
				return nil
			}
			return yield(patternRun{trace: r.TraceID, session: r.SessionID, pattern: r.PatternID, agent: r.Agent, start: r.Start})
		})
	}
}
