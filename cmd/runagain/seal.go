package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"

	fx "github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/seal"
)

// Sealed originals (issue 19): the collector's agent_redaction keeps, when seal_originals is
// on, the original of every value it redacts, encrypted with its session's data key in
// <data dir>/keys (internal/seal). replay unseals the recorded exchanges it serves; delete
// --session destroys a session's key (delete.go).

// keysDir is where the session keys are: $RUNAGAIN_SEAL_KEY_DIR, else <data dir>/keys (what
// config/default.yaml gives agent_redaction's seal_originals.key_dir).
func keysDir() string {
	if d := os.Getenv("RUNAGAIN_SEAL_KEY_DIR"); d != "" {
		return d
	}
	return filepath.Join(dataDirFlag, "keys")
}

// openKeys opens the key directory, or returns nil when there is none (sealing never used).
// The master key is the local one unless $RUNAGAIN_SEAL_KEEPER_URL names a gocloud.dev/secrets keeper.
func openKeys(ctx context.Context) (*seal.Keys, error) {
	dir := keysDir()
	if !seal.Exists(dir) {
		return nil, nil
	}
	return seal.OpenKeys(ctx, dir, os.Getenv("RUNAGAIN_SEAL_KEEPER_URL"))
}

// unsealForReplay puts the sealed originals of the run's recorded exchanges back, so replay
// serves the exact bytes the agent saw, and says on errOut what it could not give back: originals
// erased with their session's key, and responses redaction changed with no sealed original.
func unsealForReplay(ctx context.Context, td ptrace.Traces, errOut io.Writer) error {
	keys, err := openKeys(ctx)
	if err != nil {
		return fmt.Errorf("sealed originals: %w", err)
	}
	if keys != nil {
		defer keys.Close()
	}
	rep, err := seal.Restore(ctx, keys, td, fx.IsFixture)
	if err != nil {
		return fmt.Errorf("sealed originals: %w", err)
	}
	if rep.Restored > 0 {
		fmt.Fprintf(errOut, "runagain replay: %d redacted values unsealed: serving the exact recorded bytes\n", rep.Restored)
	}
	if len(rep.Erased) > 0 {
		fmt.Fprintf(errOut, "runagain replay: the originals of %d recorded exchanges were erased (their session's key was destroyed by runagain delete --session): "+
			"serving the redacted bytes, which differ from what the agent saw (spans %s)\n", len(rep.Erased), strings.Join(rep.Erased, ", "))
	}
	if len(rep.Differs) > 0 {
		var parts []string
		values := int64(0)
		for _, d := range rep.Differs {
			parts = append(parts, fmt.Sprintf("span %s: %s", d.SpanID, strings.Join(d.Keys, ", ")))
			values += d.Values
		}
		fmt.Fprintf(errOut, "runagain replay: %d recorded responses were changed by redaction and have no sealed originals (%d values): "+
			"they are served redacted and differ from what the agent saw (%s); record with agent_redaction seal_originals enabled for exact replay\n",
			len(rep.Differs), values, strings.Join(parts, "; "))
	}
	return nil
}
