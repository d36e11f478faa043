package runagainstorageextension // import "github.com/runagain/runagain/extension/runagainstorageextension"

import (
	"context"
	"errors"

	"github.com/runagain/runagain/internal/store"
)

// QuarantineWriter stores spans that cannot be stored as spans in the hot tier's dead-letter
// table (store.QuarantinedSpan), idempotently.
type QuarantineWriter interface {
	Quarantine(ctx context.Context, spans []store.QuarantinedSpan) error
}

// Quarantiner is implemented by the extension (beside Storage): the span_quarantine processor
// asserts it on what Find returns.
type Quarantiner interface {
	// QuarantineWriter returns the hot tier's dead-letter table. It fails when the extension is
	// not started, or the hot tier is not on SQLite (ClickHouse has no dead-letter table yet).
	QuarantineWriter() (QuarantineWriter, error)
}

var _ Quarantiner = (*Extension)(nil)

// QuarantineWriter implements Quarantiner.
func (s *Extension) QuarantineWriter() (QuarantineWriter, error) {
	b, err := s.Backend("hot")
	if err != nil {
		return nil, err
	}
	h, ok := b.(*hotSQLite)
	if !ok {
		return nil, errors.New("runagain_storage: the dead-letter table needs the hot tier on SQLite")
	}
	return h.db, nil
}
