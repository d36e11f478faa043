// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"

	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// showOf is what `runagain show --json` prints for run, read with the default options.
func showOf(run *store.Run) (*ShowRun, error) {
	v, err := runview.Build(context.Background(), run, runview.Options{})
	if err != nil {
		return nil, err
	}
	return buildShow(v)
}
