package main

import (
	"context"

	"github.com/runagain/runagain/internal/store"
)

// rehydrateRun replaces offloaded payload references (*_ref) with their content. It is wired to
// internal/payloadref once the payload_offload processor lands.
func rehydrateRun(context.Context, *store.Run) error { return nil }
