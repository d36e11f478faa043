package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/runagain/runagain/internal/payloadref"
	"github.com/runagain/runagain/internal/store"
)

// noRehydrate is the --no-rehydrate flag of commands that read runs.
var noRehydrate bool

// rehydrateRun replaces offloaded payload references (K_ref) with their content (K), verifying
// each object's SHA-256. A reference that cannot be read (object expired, store down) stays as it
// is and is reported on stderr; the run is still shown.
func rehydrateRun(ctx context.Context, run *store.Run) {
	if noRehydrate {
		return
	}
	r := payloadref.NewResolver()
	defer r.Close()
	if err := r.RehydrateTraces(ctx, run.Traces); err != nil {
		fmt.Fprintf(os.Stderr, "runagain: some payloads stay as references: %v\n", err)
	}
	if err := r.RehydrateLogs(ctx, run.Logs); err != nil {
		fmt.Fprintf(os.Stderr, "runagain: some log payloads stay as references: %v\n", err)
	}
}

// printJSON writes v as indented JSON: the --json output of every read command.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
