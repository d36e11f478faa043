// SPDX-License-Identifier: Apache-2.0

package dataset

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/fixture"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// NewCase freezes the run read as v into a case: what `runagain dataset add` and the UI's
// "Add to dataset" form do for each run. v must be built from the hot tier with its payloads
// rehydrated (a run only in warm or cold has lost its spans and payloads: an error says so).
// id is the case id ("" for the trace id), input the case input ("" for the first LLM call's
// last user message), expects the --expect values (KIND=VALUE), each parsed against the run's
// facts; an unparsable one is an error naming it.
//
// problems says why the case cannot pass `runagain test`, without refusing it: no recorded HTTP
// or MCP exchange to replay, an expectation the recorded run itself fails (`--strict` refuses
// the version then).
func NewCase(v *runview.View, id, input string, expects []string) (c *Case, problems []string, err error) {
	if v.Tier != store.TierHot {
		return nil, nil, fmt.Errorf("run %s is only in the %s tier (past the hot retention): its spans and payloads are gone, it cannot be frozen", v.TraceID, v.Tier)
	}
	facts, err := RunFacts(v)
	if err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", v.TraceID, err)
	}
	ex := &CaseExpect{Input: input}
	for _, s := range expects {
		e, err := ParseExpect(s, facts)
		if err != nil {
			return nil, nil, fmt.Errorf("run %s: %w", v.TraceID, err)
		}
		ex.Expect = append(ex.Expect, e)
	}
	c, err = Freeze(id, v.TraceID, v.Run.Traces, v.Run.Logs, ex)
	if err != nil {
		return nil, nil, err
	}
	return c, c.Problems(facts), nil
}

// Problems says why a frozen case cannot pass runagain test: no recorded exchange to replay,
// or an expectation the recorded run already fails (a no_pattern expectation is left out: a case
// frozen from a pattern is in it by design, and the fixed agent's run must not be).
func (c *Case) Problems(facts *Facts) []string {
	var out []string
	if c.Fixtures() == 0 {
		out = append(out, fmt.Sprintf("case %s: run %s has no recorded HTTP exchanges, so runagain test cannot replay it (record the agent with runagain proxy --record)", c.ID, c.TraceID))
	}
	for _, e := range c.Expect.Expect {
		if e.NoPattern != "" {
			continue
		}
		if f := e.Check(facts); f != nil {
			out = append(out, fmt.Sprintf("case %s: the recorded run itself fails %s", c.ID, f))
		}
	}
	return out
}

// Fixtures counts the case's recorded HTTP exchanges (fixture.IsFixture spans).
func (c *Case) Fixtures() int {
	n := 0
	store.EachSpan(c.Traces, func(s ptrace.Span) {
		if fixture.IsFixture(s) {
			n++
		}
	})
	return n
}

// Add stores a new version of dataset name: the newest version's cases with cases added, a case
// with the id of an older one replacing it (the order: cases first, then the kept ones). created
// is false when that exact version already exists (Put). A dataset that does not exist yet is
// created; other errors reading the newest version are returned and nothing is stored.
func (s *Store) Add(ctx context.Context, name, note string, cases []*Case) (m *Manifest, created bool, err error) {
	if err := CheckName(name); err != nil {
		return nil, false, err
	}
	all := append([]*Case(nil), cases...)
	if vs, err := s.Versions(ctx, name); err == nil {
		old, err := s.Cases(ctx, vs[0])
		if err != nil {
			return nil, false, err
		}
		given := map[string]bool{}
		for _, c := range cases {
			given[c.ID] = true
		}
		for _, o := range old {
			if !given[o.ID] {
				all = append(all, o)
			}
		}
	} else if !errors.Is(err, ErrNotFound) {
		return nil, false, err
	}
	return s.Put(ctx, name, note, all)
}
