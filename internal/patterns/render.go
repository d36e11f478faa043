// SPDX-License-Identifier: Apache-2.0

package patterns

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/termsafe"
)

// sparks are the eight levels of a trend line, lowest first.
var sparks = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws days as one character each (▁ to █), scaled to the busiest day; a day
// without runs is "·".
func Sparkline(days []Day) string {
	var top int64
	for _, d := range days {
		top = max(top, d.Runs)
	}
	var b strings.Builder
	for _, d := range days {
		if d.Runs == 0 || top == 0 {
			b.WriteRune('·')
			continue
		}
		i := int((d.Runs*int64(len(sparks)) - 1) / top)
		b.WriteRune(sparks[min(i, len(sparks)-1)])
	}
	return b.String()
}

// MaxTrendDays bounds the trend drawn by WriteText (the last days are kept).
const MaxTrendDays = 30

// WriteText prints rep as `runagain patterns` does: a header with the range and the failing
// share, then one block per pattern, most runs first: count, shares, first and last seen, cost,
// the daily trend, the title, models, agents, the merge rules and the example runs. Text that
// comes from runs is escaped for the terminal (termsafe).
func WriteText(w io.Writer, rep Report, now time.Time) error {
	const minute = "2006-01-02 15:04"
	rng := "all runs"
	switch {
	case !rep.Since.IsZero() && !rep.Until.IsZero():
		rng = "from " + rep.Since.UTC().Format(minute) + " to " + rep.Until.UTC().Format(minute) + " UTC"
	case !rep.Since.IsZero():
		rng = "since " + rep.Since.UTC().Format(minute) + " UTC"
	case !rep.Until.IsZero():
		rng = "before " + rep.Until.UTC().Format(minute) + " UTC"
	}
	fmt.Fprintf(w, "%s: %s, %d failing (%s), %s\n", rng, count(rep.Runs, "run"), rep.Failing, pct(rep.Failing, rep.Runs), count(len(rep.Patterns), "pattern"))
	for i, p := range rep.Patterns {
		trend := p.Trend
		if len(trend) > MaxTrendDays {
			trend = trend[len(trend)-MaxTrendDays:]
		}
		fmt.Fprintf(w, "\n%2d. %s  %s  %.1f%% of runs  %.1f%% of failing  cost %s\n", i+1, p.ID, count(p.Runs, "run"),
			100*p.ShareOfRuns, 100*p.ShareOfFailing, pricing.FormatUSD(p.CostUSD, 0, true))
		fmt.Fprintf(w, "    %s\n", termsafe.String(p.Title))
		fmt.Fprintf(w, "    first seen %s · last seen %s · per day %s\n", ago(p.First, now), ago(p.Last, now), Sparkline(trend))
		fmt.Fprintf(w, "    models %s · agents %s\n", list(p.Models), list(p.Agents))
		if len(p.MergedBy) > 0 {
			fmt.Fprintf(w, "    %d variants, merged by %s\n", len(p.Variants), strings.Join(p.MergedBy, ", "))
		}
		fmt.Fprintf(w, "    examples %s\n", strings.Join(p.Examples, " "))
	}
	if len(rep.Patterns) > 0 {
		fmt.Fprintln(w, "\nrunagain patterns show ID: the runs of a pattern · runagain dataset add NAME --pattern ID: freeze them as regression cases")
	}
	return nil
}

// WriteShow prints one pattern and its runs as `runagain patterns show ID` does.
func WriteShow(w io.Writer, p Pattern, runs []Run, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintf(tw, "pattern %s: %s\n", p.ID, termsafe.String(p.Title))
	fmt.Fprintf(tw, "%s (%.1f%% of runs, %.1f%% of failing), first seen %s, last seen %s, cost %s\n", count(p.Runs, "run"),
		100*p.ShareOfRuns, 100*p.ShareOfFailing, p.First.UTC().Format(time.RFC3339), p.Last.UTC().Format(time.RFC3339), pricing.FormatUSD(p.CostUSD, 0, true))
	fmt.Fprintf(tw, "models %s · agents %s\n", list(p.Models), list(p.Agents))
	fmt.Fprintf(tw, "trend %s (%s .. %s)\n", Sparkline(p.Trend), p.Trend[0].Day, p.Trend[len(p.Trend)-1].Day)
	if len(p.MergedBy) > 0 {
		fmt.Fprintf(tw, "merged by %s\n", strings.Join(p.MergedBy, ", "))
	}
	fmt.Fprintf(tw, "\nVARIANT\tRUNS\tSTEPS BEFORE THE FAILURE\tAT STEP\n")
	for _, v := range p.Variants {
		var at []string
		for _, e := range v.Signature.Errors {
			s := fmt.Sprint(e.Step)
			if e.Count > 1 {
				s += fmt.Sprintf(" (x%d)", e.Count)
			}
			at = append(at, s)
		}
		shape := strings.Join(v.Signature.Shape, " > ")
		if shape == "" {
			shape = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", v.ID, v.Runs, termsafe.Cell(shape), strings.Join(at, ", "))
	}
	fmt.Fprintf(tw, "\nTRACE ID\tSESSION\tSTART\tAGENT\tMODELS\tCOST\tVARIANT\n")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t$%.4f\t%s\n", r.TraceID, termsafe.Cell(r.SessionID), r.Start.UTC().Format("2006-01-02 15:04:05"),
			termsafe.Cell(r.Agent), termsafe.Cell(list(r.Models)), r.CostUSD, r.VariantID)
	}
	return tw.Flush()
}

func pct(n, of int64) string {
	if of == 0 {
		return "0%"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}

func list(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return termsafe.String(strings.Join(s, ", "))
}

// ago is t as a UTC date and time, with how long before now when within a week.
func ago(t, now time.Time) string {
	s := t.UTC().Format("2006-01-02 15:04")
	if d := now.Sub(t); d >= 0 && d < 7*24*time.Hour {
		switch {
		case d < time.Hour:
			s += fmt.Sprintf(" (%dm ago)", int(d.Minutes()))
		case d < 48*time.Hour:
			s += fmt.Sprintf(" (%dh ago)", int(d.Hours()))
		default:
			s += fmt.Sprintf(" (%dd ago)", int(d.Hours()/24))
		}
	}
	return s
}

// count is "1 run", "2 runs": n and the noun, plural unless n is 1.
func count[N int | int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
