// SPDX-License-Identifier: Apache-2.0

package ui

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/payloadref/ref"
	"github.com/runagain/runagain/internal/store"
)

// previewLen bounds the one-line previews of the run list and the session page (runes).
const previewLen = 140

// runPreview is what a row of the run list says about a run beyond its numbers: its name (the
// root span's, or its agent's), the first user input, and how it ended (the first error, else the
// last output), each one line.
type runPreview struct {
	Name    string
	Input   string
	Outcome string
	Failed  bool // Outcome is an error
}

// previewFetches bounds the calls whose offloaded messages a preview fetches, from each end of
// the run: the first input and the last output are what a preview shows, and a run with no user
// message in its first calls is not read call by call from the payload store.
const previewFetches = 2

// previewOf reads a run's preview from its read model: the first user input and the last output.
// A call whose messages were offloaded to the payload store is fetched (View.Rehydrate), for at
// most previewFetches calls from each end; an offloaded output that cannot be fetched ends the
// search, so the preview never shows an earlier call's output as the run's outcome.
func previewOf(ctx context.Context, c *cachedRun) runPreview {
	var p runPreview
	for _, n := range c.nodes {
		if n.Depth == 0 {
			p.Name = n.Span.Name()
			break
		}
	}
	if len(c.detail.Agents) > 0 && (p.Name == "" || !strings.Contains(p.Name, c.detail.Agents[0])) {
		if p.Name != "" {
			p.Name = c.detail.Agents[0] + " · " + p.Name
		} else {
			p.Name = c.detail.Agents[0]
		}
	}
	for _, n := range c.nodes {
		if n.Span.Status().Code() == ptrace.StatusCodeError {
			msg := n.Span.Status().Message()
			if msg == "" {
				if v, ok := n.Span.Attributes().Get(genai.AttrErrorType); ok {
					msg = v.AsString()
				}
			}
			if v, ok := n.Span.Attributes().Get("process.exit.code"); ok && msg == "" && v.Int() != 0 {
				msg = fmt.Sprintf("exit code %d", v.Int()) // a proxy's root span recorded before it said so
			}
			p.Outcome, p.Failed = oneLine(n.Span.Name()+": "+msg), true
			break
		}
	}
	// The first user input from the front, the last output from the back: a 10,000-span run's
	// preview reads the messages of a few calls, not of every call (BENCHMARKS.md, uibench).
	// messages reads call i's messages, fetching them first when they were offloaded (fetch);
	// offloaded is true when some are still references after that
	messages := func(i int, fetch bool) (cm genai.CallMessages, offloaded bool, err error) {
		n := c.nodes[i]
		if hasRef(n.Effective) || hasRef(n.Span) {
			if fetch {
				_ = c.view.Rehydrate(ctx, i) // a payload that cannot be read leaves its reference
			}
			offloaded = hasRef(n.Effective) || hasRef(n.Span)
		}
		cm, err = c.view.Messages(n)
		return cm, offloaded, err
	}
	for k, i := range c.steps {
		cm, _, err := messages(i, k < previewFetches)
		if err != nil {
			continue
		}
		for _, m := range cm.Input {
			if t := partsText(m.Parts); m.Role == "user" && t != "" {
				p.Input = oneLine(t)
				break
			}
		}
		if p.Input != "" {
			break
		}
	}
	for k := len(c.steps) - 1; k >= 0 && !p.Failed && p.Outcome == ""; k-- {
		cm, offloaded, err := messages(c.steps[k], len(c.steps)-1-k < previewFetches)
		if offloaded && len(cm.Output) == 0 {
			break // its output is in the payload store, not read here: no earlier call stands in
		}
		if err != nil {
			continue
		}
		for _, m := range cm.Output {
			if t := partsText(m.Parts); t != "" {
				p.Outcome = oneLine(t)
			}
		}
	}
	return p
}

// hasRef reports whether span holds an offloaded payload (a reference attribute: ref.IsRefKey).
func hasRef(span ptrace.Span) bool {
	found := false
	span.Attributes().Range(func(k string, _ pcommon.Value) bool {
		found = ref.IsRefKey(k)
		return !found
	})
	return found
}

func partsText(ps []genai.Part) string {
	var b strings.Builder
	for _, p := range ps {
		switch p.Type {
		case "text", "":
			b.WriteString(p.Content)
			b.WriteByte(' ')
		case "tool_call":
			b.WriteString("→ " + p.Name + "() ")
		}
	}
	return strings.TrimSpace(b.String())
}

// oneLine folds whitespace and cuts s to previewLen runes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > previewLen {
		r := []rune(s)
		s = string(r[:previewLen]) + "…"
	}
	return s
}

// sortRows orders rows by a store.RunOrder key (?sort=KEY, ?order=asc|desc; newest first by
// default): the order of the run index's ranked listing (store.RankedRuns), ties newest first.
func sortRows(rows []sessionRow, key string, desc bool) {
	o := store.RunOrder{Key: key, Asc: !desc}
	sort.SliceStable(rows, func(i, j int) bool { return o.Less(rows[i].RunSummary, rows[j].RunSummary) })
}

// matchesText reports whether a listed run contains q (lower case) in its ids, name, agents,
// models or previews.
func matchesText(r sessionRow, q string) bool {
	for _, s := range append([]string{r.TraceID, r.SessionID, r.D.Preview.Name, r.D.Preview.Input, r.D.Preview.Outcome},
		append(r.Models, r.D.Agents...)...) {
		if strings.Contains(strings.ToLower(s), q) {
			return true
		}
	}
	return false
}

// distinctIDs gives each row's trace id shortened to the fewest characters (at least 8) that
// tell it apart from every other id on the page.
func distinctIDs(rows []sessionRow) {
	for i := range rows {
		n := 8
		for j := range rows {
			if i == j {
				continue
			}
			a, b := rows[i].TraceID, rows[j].TraceID
			k := 0
			for k < len(a) && k < len(b) && a[k] == b[k] {
				k++
			}
			n = max(n, k+1)
		}
		rows[i].ShortID = rows[i].TraceID[:min(n, len(rows[i].TraceID))]
	}
}

// ---- Session page ----

type sessionPageView struct {
	Title   string
	Session string
	Turns   []sessionRow
	Err     string
}

// sessionPage lists the runs of one session (a multi-turn conversation, or an agent's session)
// oldest first: each turn's input and answer (or error), with links into each run.
func (s *Server) sessionPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("session")
	v := sessionPageView{Title: "Session " + shorten(id, 16), Session: id}
	sums, err := s.opts.Reader.Runs(r.Context(), store.RunFilter{SessionID: id})
	if err != nil {
		s.failPage(w, r, err)
		return
	}
	if len(sums) == 0 {
		s.failPage(w, r, notFoundf("no run of session %q is stored", id))
		return
	}
	for _, sum := range sums {
		v.Turns = append(v.Turns, sessionRow{RunSummary: sum, D: s.detail(r.Context(), sum)})
	}
	sortRows(v.Turns, "start", false)
	distinctIDs(v.Turns)
	s.render(w, "session.html", v)
}

// localTime is the RFC 3339 form the pages' script shows in the browser's time zone.
func localTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
