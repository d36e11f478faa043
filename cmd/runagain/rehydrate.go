// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/runagain/runagain/internal/dataset"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// noRehydrate is the --no-rehydrate flag of commands that read runs.
var noRehydrate bool

// viewOptions are the read model's options from --config: the runagain_storage extension's
// prices (with overrides) and session keys, else the embedded table and the default keys.
func viewOptions() (runview.Options, error) {
	cfg, err := storageConfig()
	if err != nil {
		return runview.Options{}, err
	}
	prices, err := openPricing()
	if err != nil {
		return runview.Options{}, err
	}
	o := runview.Options{Prices: prices}
	if cfg != nil {
		o.SessionKeys = cfg.SessionKeys
	}
	return o, nil
}

// buildView reads run into the read model with the configured prices and session keys, its
// payloads rehydrated unless --no-rehydrate (a reference that cannot be read stays as it is and
// is reported on stderr). The returned function closes the resolver.
func buildView(ctx context.Context, run *store.Run) (*runview.View, func(), error) {
	o, err := viewOptions()
	if err != nil {
		return nil, nil, err
	}
	closeFn := func() {}
	if !noRehydrate {
		r := newPayloadResolver()
		o.Resolver, closeFn = r, func() { r.Close() }
	}
	v, err := runview.Build(ctx, run, o)
	if err != nil {
		closeFn()
		return nil, nil, err
	}
	if v.RehydrateErr != nil {
		fmt.Fprintf(os.Stderr, "runagain: some payloads stay as references: %v\n", v.RehydrateErr)
	}
	return v, closeFn, nil
}

// factsOf is dataset.RunFacts of run read with the configured prices and session keys; its
// payloads must already be rehydrated.
func factsOf(ctx context.Context, run *store.Run) (*dataset.Facts, error) {
	o, err := viewOptions()
	if err != nil {
		return nil, err
	}
	v, err := runview.Build(ctx, run, o)
	if err != nil {
		return nil, err
	}
	return dataset.RunFacts(v)
}

// printJSON writes v as indented JSON: the --json output of every read command.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
