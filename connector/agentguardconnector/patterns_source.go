package agentguardconnector // import "github.com/runagain/runagain/connector/agentguardconnector"

import (
	"github.com/runagain/runagain/extension/runagainstorageextension"
)

// patternSourceOf is the run index the pattern watcher reads: the hot tier's, when the
// runagain_storage extension has one that holds failure patterns. Otherwise nil and why.
func patternSourceOf(st runagainstorageextension.Storage) (patternSource, string) {
	if st == nil {
		return nil, "the collector has no runagain_storage extension"
	}
	return nil, "the hot tier's run index holds no failure patterns"
}
