// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/runagain/runagain/internal/diff"
	"github.com/runagain/runagain/internal/store"
)

// A diff page draws its pairs in pages of diffPagePairs; a run of at least collapseMin identical
// pairs is one line ("9,998 identical steps"), not drawn.
const (
	diffPagePairs = 200
	collapseMin   = 3
)

// diffItem is one line of the diff grid: a pair, or a run of identical pairs folded into one.
type diffItem struct {
	Pair *pairView
	// Fold: pairs From..To (0-based, inclusive) are "same"; ExpandURL shows them.
	Fold      bool
	From, To  int
	Count     int
	StepsA    string // "3–10000": the steps of A the fold holds
	ExpandURL string
}

// diffNav says where the page is in the alignment and where the differences are.
type diffNav struct {
	Page, Pages      int
	PrevURL, NextURL string
	Differences      int      // pairs that are not "same", in the whole alignment
	DiffLinks        []string // URL of each difference (page and anchor), at most maxDiffLinks
	MoreDiffs        int
}

const maxDiffLinks = 50

// layoutPairs folds the alignment (runs of identical pairs become one item, except the one
// whose first pair is expand) and returns the items of page (0-based, diffPagePairs items a
// page) with where the differences are. page < 0 opens the page of the first difference.
func layoutPairs(res *diff.Result, base url.Values, page, expand int) ([]diffItem, diffNav, bool) {
	n := len(res.Pairs)
	var items []diffItem
	pageOf := make([]int, n) // the page each pair is drawn on
	for i := 0; i < n; {
		j := i
		for j < n && res.Pairs[j].Op == diff.OpSame {
			j++
		}
		if j-i >= collapseMin && expand != i {
			q := url.Values{}
			for k, v := range base {
				q[k] = v
			}
			q.Set("expand", strconv.Itoa(i))
			for k := i; k < j; k++ {
				pageOf[k] = len(items) / diffPagePairs
			}
			items = append(items, diffItem{Fold: true, From: i, To: j - 1, Count: j - i,
				StepsA:    fmt.Sprintf("%d–%d", res.Pairs[i].A.Index, res.Pairs[j-1].A.Index),
				ExpandURL: "/diff?" + q.Encode() + "#pair-" + strconv.Itoa(i)})
			i = j
			continue
		}
		if j == i {
			j = i + 1
		}
		for k := i; k < j; k++ {
			pageOf[k] = len(items) / diffPagePairs
			items = append(items, diffItem{Pair: &pairView{Pair: res.Pairs[k], I: k, First: res.First != nil && res.First.Pair == k}})
		}
		i = j
	}
	pages := max(1, (len(items)+diffPagePairs-1)/diffPagePairs)
	if page < 0 {
		page = 0
		if res.First != nil {
			page = pageOf[res.First.Pair]
		}
		if expand >= 0 && expand < n {
			page = pageOf[expand]
		}
	}
	ok := page < pages
	if !ok {
		page = 0
	}
	nav := diffNav{Page: page + 1, Pages: pages}
	link := func(p int, anchor string) string {
		if p == page {
			return anchor
		}
		q := url.Values{}
		for k, v := range base {
			q[k] = v
		}
		q.Set("page", strconv.Itoa(p+1))
		return "/diff?" + q.Encode() + anchor
	}
	for i, p := range res.Pairs {
		if p.Op == diff.OpSame {
			continue
		}
		nav.Differences++
		if len(nav.DiffLinks) < maxDiffLinks {
			nav.DiffLinks = append(nav.DiffLinks, link(pageOf[i], "#pair-"+strconv.Itoa(i)))
		} else {
			nav.MoreDiffs++
		}
	}
	if page > 0 {
		nav.PrevURL = link(page-1, "")
	}
	if page+1 < pages {
		nav.NextURL = link(page+1, "")
	}
	items = items[page*diffPagePairs : min(len(items), (page+1)*diffPagePairs)]
	for k := range items {
		if pv := items[k].Pair; pv != nil {
			pv.Input = messageDiffViews(pv.Pair.Input)
			pv.Output = messageDiffViews(pv.Pair.Output)
		}
	}
	return items, nav, ok
}

// resolveTrace turns a trace id or an unambiguous prefix of one into the run's trace id
// (store.ResolveTraceID, as the CLI's show and diff): a bad id or an ambiguous prefix is a 400, no
// match a 404.
func (s *Server) resolveTrace(ctx context.Context, id string) (string, error) {
	full, err := store.ResolveTraceID(ctx, s.opts.Reader, id)
	switch {
	case errors.Is(err, store.ErrBadTraceID), errors.Is(err, store.ErrAmbiguousTraceID):
		return "", badRequest("%v", err)
	case errors.Is(err, store.ErrNotFound):
		return "", fmt.Errorf("%w: %v", errNotFound, err)
	}
	return full, err
}
