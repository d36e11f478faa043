// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"context"

	"github.com/runagain/runagain/internal/store"
)

// arrange is Server.arrange without payloads (tests read runs built in memory).
func arrange(run *store.Run) *cachedRun {
	s := &Server{opts: Options{NoRehydrate: true}}
	c, err := s.arrange(context.Background(), run)
	if err != nil {
		panic(err)
	}
	return c
}
