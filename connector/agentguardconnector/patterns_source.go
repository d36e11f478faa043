// SPDX-License-Identifier: Apache-2.0

package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"context"
	"strings"
	"time"

	"github.com/runagain/runagain/extension/runagainstorageextension"
	"github.com/runagain/runagain/internal/store"
)

// patternSourceOf is the run index the pattern watcher reads: the hot tier's, when the
// runagain_storage extension's hot backend keeps failure signatures in its run index (the SQLite
// hot tier), else the warm tier's (SQLite or ClickHouse: the gateway's shape, whose hot tier is
// the contrib clickhouseexporter's tables). Otherwise nil and why.
func patternSourceOf(st runagainstorageextension.Storage) (patternSource, string) {
	if st == nil {
		return nil, "the collector has no runagain_storage extension"
	}
	var why []string
	for _, tier := range []string{"hot", "warm"} {
		b, err := st.Backend(tier)
		if err != nil {
			why = append(why, "no "+tier+" tier: "+err.Error())
			continue
		}
		if pr, ok := b.(store.PatternReader); ok {
			return readerSource(pr), ""
		}
		why = append(why, "the "+tier+" tier's backend keeps no failure patterns in its run index")
	}
	return nil, "no tier to read patterns from (" + strings.Join(why, "; ") + ")"
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
