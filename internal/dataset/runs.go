// SPDX-License-Identifier: Apache-2.0

package dataset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/otlpid"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// Rehydrator reads a run's offloaded payloads back in place (payloadref.Resolver).
type Rehydrator interface {
	RehydrateTraces(ctx context.Context, td ptrace.Traces) error
	RehydrateLogs(ctx context.Context, ld plog.Logs) error
}

// RunsAdd is what FreezeRuns freezes: the runs TraceIDs (trace ids as given, 32 hex characters
// around optional spaces), each as one case.
type RunsAdd struct {
	TraceIDs []string
	CaseID   string   // case id of the one run given ("" for its trace id)
	Input    string   // case input ("" for the first LLM call's last user message)
	Expects  []string // KIND=VALUE expectations, applied to every run (ParseExpect)
	// View reads each run (prices, session keys; its Resolver is not used); Rehydrator, when
	// set, reads the run's offloaded payloads back first (a case must hold its bytes).
	View       runview.Options
	Rehydrator Rehydrator
}

// FreezeRuns reads each run of a from rd (it must be in the hot tier), rehydrates it and freezes
// it as a case (NewCase): what `runagain dataset add NAME TRACE_ID...` stores with Store.Add.
// problems are NewCase's, for every run in order; an error names the run it is about, and
// nothing is frozen then.
func FreezeRuns(ctx context.Context, rd store.Reader, a RunsAdd) (cases []*Case, problems []string, err error) {
	opts := a.View
	opts.Resolver = nil // rehydrated here, with messages per signal
	for _, arg := range a.TraceIDs {
		tid, err := otlpid.ParseTraceID(strings.TrimSpace(arg))
		if err != nil {
			return nil, nil, err
		}
		run, err := rd.Run(ctx, tid.String())
		if err != nil {
			return nil, nil, fmt.Errorf("run %s: %w", arg, err)
		}
		if a.Rehydrator != nil {
			if err := a.Rehydrator.RehydrateTraces(ctx, run.Traces); err != nil {
				return nil, nil, fmt.Errorf("run %s: rehydrating payloads: %w", arg, err)
			}
			if err := a.Rehydrator.RehydrateLogs(ctx, run.Logs); err != nil {
				return nil, nil, fmt.Errorf("run %s: rehydrating log payloads: %w", arg, err)
			}
		}
		v, err := runview.Build(ctx, run, opts)
		if err != nil {
			return nil, nil, fmt.Errorf("run %s: %w", arg, err)
		}
		c, probs, err := NewCase(v, a.CaseID, a.Input, a.Expects)
		if err != nil {
			return nil, nil, err
		}
		problems = append(problems, probs...)
		cases = append(cases, c)
	}
	return cases, problems, nil
}

// Listing is one dataset of Store.List: its newest version.
type Listing struct {
	Name     string    `json:"name"`
	Versions int       `json:"versions"`
	Latest   string    `json:"latest"` // the newest version's id
	Cases    int       `json:"cases"`  // in the newest version
	Created  time.Time `json:"created"`
	Note     string    `json:"note,omitempty"`
}

// List is every dataset of the store with its newest version, by name (`runagain dataset
// list`). A name whose versions are all gone is left out.
func (s *Store) List(ctx context.Context) ([]Listing, error) {
	names, err := s.Names(ctx)
	if err != nil {
		return nil, err
	}
	out := []Listing{}
	for _, n := range names {
		vs, err := s.Versions(ctx, n)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Listing{n, len(vs), vs[0].Version, len(vs[0].Cases), vs[0].Created, vs[0].Note})
	}
	return out, nil
}

// View reads the case's frozen run through the read model with opts (prices, session keys;
// the case holds its payloads, so opts.Resolver is not used).
func (c *Case) View(ctx context.Context, opts runview.Options) (*runview.View, error) {
	opts.Resolver = nil
	return runview.Build(ctx, &store.Run{TraceID: c.TraceID, Traces: c.Traces, Logs: c.Logs}, opts)
}

// Input is what `runagain test` gives the command as RUNAGAIN_CASE_INPUT: expect.yaml's input,
// else the last user message of the run's first LLM call (Facts.Input) read from v, the case's
// View; "" when there is neither (or v is nil).
func (c *Case) Input(v *runview.View) string {
	if c.Expect != nil && c.Expect.Input != "" {
		return c.Expect.Input
	}
	if v == nil {
		return ""
	}
	if f, err := RunFacts(v); err == nil {
		return f.Input
	}
	return ""
}

// Select keeps the cases of m whose ids are given, in the version's order; an id the version
// does not have is an error naming it. No ids: all cases.
func Select(m *Manifest, cases []*Case, ids []string) ([]*Case, error) {
	if len(ids) == 0 {
		return cases, nil
	}
	want := map[string]bool{}
	for _, c := range ids {
		want[c] = true
	}
	var sel []*Case
	for _, c := range cases {
		if want[c.ID] {
			sel = append(sel, c)
			delete(want, c.ID)
		}
	}
	for _, c := range ids {
		if want[c] {
			return nil, fmt.Errorf("--case %s: dataset %s@%s has no such case", c, m.Name, Short(m.Version))
		}
	}
	return sel, nil
}
