// SPDX-License-Identifier: Apache-2.0

// Package erase carries out a data-subject erasure (`runagain delete --session ID | --trace ID`)
// across every place runagain keeps a run: the hot, warm and cold tiers (store.Eraser), the run
// index, the regression datasets that froze the run, the sealed originals' per-session key, and
// the payload bytes in blob storage (swept once no live row references them).
//
// Order: the runs are resolved in every tier first (a session's runs are the union of what each
// tier knows), datasets are checked before anything is deleted (a run in a dataset is refused
// unless RemoveFromDatasets), then rows are deleted tier by tier, the SQLite files are rebuilt,
// the session key is destroyed and the payload bucket is swept with the hot tier's remaining
// references as the live set.
package erase

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/runagain/runagain/internal/dataset"
	"github.com/runagain/runagain/internal/seal"
	"github.com/runagain/runagain/internal/store"
)

// Tier is one tier to erase from.
type Tier struct {
	Name  string // "hot", "warm", "cold", "index"
	Where string // path, URL or endpoint, for the report
	store.Eraser
	// Compact, when set, is run after the erasure (SQLite: VACUUM and WAL truncation).
	Compact func(ctx context.Context) ([]string, error)
}

// PayloadStats is what a payload sweep removed.
type PayloadStats struct {
	ObjectsDeleted int
	BytesFreed     int64
	PacksDeleted   int
	PacksRewritten int
	// KeptShared is how many objects of the erased rows stay because live rows still reference
	// them (the same content sent by another session: content addressing stores it once).
	KeptShared int
	// KeptRecent: unreferenced objects kept because they were referenced or written after the
	// sweep began (values on their way to the hot tier).
	KeptRecent int
	// StillStaged is how many of the collector's staged packs it did not upload within the wait
	// (its bucket down or slow): erased objects they hold remain on its disk until a later pass.
	StillStaged int
}

// PayloadSweeper deletes the payload objects no live reference reaches and that were last
// referenced before its grace period; with SweepOptions.Erase it leaves no byte of an
// unreferenced object anywhere in the bucket (packs holding one are rewritten).
type PayloadSweeper interface {
	Sweep(ctx context.Context, live store.LiveRefs, o SweepOptions) (PayloadStats, error)
	Where() string
}

// SweepOptions tune a sweep.
type SweepOptions struct {
	// Erase: a data-subject erasure (no byte of a dead object may stay, e.g. in a pack).
	Erase bool
	// Erased are the references of the rows just erased: the objects they reach are deleted
	// whatever their age unless a live reference reaches them too (KeptShared).
	Erased []string
}

// Request is one erasure.
type Request struct {
	Session string // erase this session (its runs found in every tier)...
	TraceID string // ...or this one run
	// NoCompact skips rebuilding the SQLite files (faster, but stale copies of erased rows may
	// stay in their free space).
	NoCompact bool
	// RemoveFromDatasets removes the runs' cases from every dataset version holding them (each
	// such version is replaced by a version without them, or removed when nothing is left);
	// without it, an erasure of a run that is in a dataset is refused before anything is deleted.
	RemoveFromDatasets bool
}

// Plan is what an erasure will touch, resolved before anything is deleted.
type Plan struct {
	Erasure  store.Erasure
	Datasets []DatasetHit // dataset versions holding the runs
}

// DatasetHit is one dataset version holding erased runs.
type DatasetHit struct {
	Name, Version string
	Cases         []string // ids of the cases that froze erased runs
	Total         int      // cases in the version
}

// Report is what an erasure removed.
type Report struct {
	Plan
	Tiers    []store.Removed
	Datasets []string // one line per dataset version changed
	Key      string   // what happened to the session's data key
	Payloads *PayloadStats
	Where    string // payload bucket
	Notes    []string
}

// ErrInDatasets is returned (wrapped) when runs to erase are in datasets and the request does not
// say to remove them.
var ErrInDatasets = errors.New("runs are in datasets")

// Eraser holds where a run can be.
type Eraser struct {
	Tiers    []Tier
	Refs     store.RefLister // the hot tier's live references (after the erasure)
	Datasets *dataset.Store  // nil: none
	Keys     *seal.Keys      // nil: sealing never used
	Payloads PayloadSweeper  // nil: no payload bucket
}

// Resolve finds the runs of the request in every tier and the dataset versions holding them.
func (e *Eraser) Resolve(ctx context.Context, req Request) (Plan, error) {
	var p Plan
	switch {
	case req.Session != "" && req.TraceID != "":
		return p, errors.New("give --session or --trace, not both")
	case req.TraceID != "":
		id := strings.ToLower(req.TraceID)
		if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
			return p, fmt.Errorf("--trace %q: want a trace id of 32 hex characters", req.TraceID)
		}
		p.Erasure.TraceIDs = []string{id}
	case req.Session != "":
		p.Erasure.Session = req.Session
		seen := map[string]bool{}
		for _, t := range e.Tiers {
			ids, err := t.SessionTraces(ctx, req.Session)
			if err != nil {
				return p, fmt.Errorf("%s tier: %w", t.Name, err)
			}
			for _, id := range ids {
				seen[id] = true
			}
		}
		for id := range seen {
			p.Erasure.TraceIDs = append(p.Erasure.TraceIDs, id)
		}
		sort.Strings(p.Erasure.TraceIDs)
	default:
		return p, errors.New("give --session ID or --trace ID")
	}
	if e.Datasets != nil {
		hits, err := datasetHits(ctx, e.Datasets, p.Erasure.TraceIDs)
		if err != nil {
			return p, fmt.Errorf("datasets: %w", err)
		}
		p.Datasets = hits
	}
	return p, nil
}

// Run erases what req names and reports what it removed. When the runs are in datasets and
// req.RemoveFromDatasets is false it returns an error wrapping ErrInDatasets, having deleted
// nothing. Tiers are erased in order; the first failure stops the erasure and is returned with
// the report of what was removed so far (running it again finishes it: erasure is idempotent).
func (e *Eraser) Run(ctx context.Context, req Request) (*Report, error) {
	p, err := e.Resolve(ctx, req)
	if err != nil {
		return nil, err
	}
	rep := &Report{Plan: p}
	if len(p.Datasets) > 0 && !req.RemoveFromDatasets {
		var names []string
		for _, h := range p.Datasets {
			names = append(names, fmt.Sprintf("%s@%s (cases %s)", h.Name, dataset.Short(h.Version), strings.Join(h.Cases, ", ")))
		}
		return rep, fmt.Errorf("%w: %s; their cases hold full copies of the runs (spans and payloads). "+
			"Give --remove-from-datasets to remove those cases too (each version is replaced by one without them), "+
			"or remove the versions yourself (runagain dataset rm)", ErrInDatasets, strings.Join(names, "; "))
	}
	if len(p.Datasets) > 0 {
		lines, err := removeFromDatasets(ctx, e.Datasets, p.Datasets, p.Erasure.TraceIDs)
		rep.Datasets = lines
		if err != nil {
			return rep, fmt.Errorf("datasets: %w", err)
		}
	}
	var erasedRefs []string
	for _, t := range e.Tiers {
		r, err := t.Erase(ctx, p.Erasure)
		r.Tier, r.Where = t.Name, t.Where
		erasedRefs = append(erasedRefs, r.PayloadRefs...)
		if err == nil && t.Compact != nil && !req.NoCompact && r.Total() > 0 {
			var notes []string
			notes, err = t.Compact(ctx)
			r.Notes = append(r.Notes, notes...)
		}
		rep.Tiers = append(rep.Tiers, r)
		if err != nil {
			return rep, fmt.Errorf("%s tier: %w", t.Name, err)
		}
	}
	if e.Keys != nil {
		name := p.Erasure.Session
		if name == "" {
			name = req.TraceID // a run without a session is its own session: its key is named by its trace id
		}
		ok, err := e.Keys.Destroy(name)
		switch {
		case err != nil:
			return rep, fmt.Errorf("sealed originals: %w", err)
		case ok:
			rep.Key = "data key destroyed: its sealed originals can no longer be opened"
		default:
			rep.Key = "no data key (nothing was sealed for it, or it was destroyed before)"
		}
	}
	if e.Payloads != nil && e.Refs != nil {
		rep.Where = e.Payloads.Where()
		st, err := e.Payloads.Sweep(ctx, store.LiveRefsOf(ctx, e.Refs), SweepOptions{Erase: true, Erased: erasedRefs})
		if err != nil {
			return rep, fmt.Errorf("payloads: %w", err)
		}
		rep.Payloads = &st
	}
	return rep, nil
}

func datasetHits(ctx context.Context, ds *dataset.Store, traceIDs []string) ([]DatasetHit, error) {
	if len(traceIDs) == 0 {
		return nil, nil
	}
	erased := map[string]bool{}
	for _, id := range traceIDs {
		erased[id] = true
	}
	names, err := ds.Names(ctx)
	if err != nil {
		return nil, err
	}
	var hits []DatasetHit
	for _, n := range names {
		vs, err := ds.Versions(ctx, n)
		if errors.Is(err, dataset.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, m := range vs {
			h := DatasetHit{Name: m.Name, Version: m.Version, Total: len(m.Cases)}
			for _, c := range m.Cases {
				if erased[strings.ToLower(c.TraceID)] {
					h.Cases = append(h.Cases, c.ID)
				}
			}
			if len(h.Cases) > 0 {
				hits = append(hits, h)
			}
		}
	}
	return hits, nil
}

// removeFromDatasets replaces each version holding erased runs by a version of the same dataset
// without those cases (written first), then removes the old version (Remove deletes the objects
// no remaining version uses). A version left with no case is removed.
func removeFromDatasets(ctx context.Context, ds *dataset.Store, hits []DatasetHit, traceIDs []string) ([]string, error) {
	erased := map[string]bool{}
	for _, id := range traceIDs {
		erased[id] = true
	}
	var lines []string
	for _, h := range hits {
		m, err := ds.Resolve(ctx, h.Name+"@"+h.Version)
		if err != nil {
			return lines, err
		}
		cases, err := ds.Cases(ctx, m)
		if err != nil {
			return lines, err
		}
		var keep []*dataset.Case
		for _, c := range cases {
			if !erased[strings.ToLower(c.TraceID)] {
				keep = append(keep, c)
			}
		}
		line := fmt.Sprintf("%s@%s: removed %d of %d cases (%s)", h.Name, dataset.Short(h.Version), len(h.Cases), h.Total, strings.Join(h.Cases, ", "))
		if len(keep) > 0 {
			nm, _, err := ds.Put(ctx, h.Name, m.Note, keep)
			if err != nil {
				return lines, err
			}
			line += fmt.Sprintf("; replaced by %s@%s", h.Name, dataset.Short(nm.Version))
		} else {
			line += "; version removed"
		}
		if err := ds.Remove(ctx, h.Name, h.Version); err != nil {
			return lines, err
		}
		lines = append(lines, line)
	}
	return lines, nil
}
