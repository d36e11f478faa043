// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/genai"
	"github.com/runagain/runagain/internal/otlpid"
	"github.com/runagain/runagain/internal/pricing"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// ShowRun is the --json shape of `runagain show`: the run's spans in order (docs/architecture.md "Order")
// and the log records that point at it.
type ShowRun struct {
	TraceID   string     `json:"trace_id"`
	SessionID string     `json:"session_id"`
	Tier      string     `json:"tier"`
	Spans     []ShowSpan `json:"spans"`
	Logs      []ShowLog  `json:"logs"`
	// CostUSD sums the priced LLM calls (USD); Unpriced counts the calls with usage and no price.
	CostUSD  float64 `json:"cost_usd"`
	Unpriced int64   `json:"unpriced"`
	// Incomplete: no root span arrived, or spans name a parent that is not stored; the orphans
	// are listed under their missing parent (ShowSpan.MissingParent, depth counted under it).
	Incomplete       bool   `json:"incomplete"`
	IncompleteReason string `json:"incomplete_reason,omitempty"`
	// Fixtures counts the recorded exchanges, and what a rerun or test run served, sent live and
	// refused (show_fixtures.go).
	Fixtures *FixtureCounts `json:"fixtures,omitempty"`
}

// ShowSpan is one span. Attributes holds plain JSON values for reading; OTLP holds the span,
// its resource and scope as an OTLP JSON traces document, where every value keeps its OTLP type.
type ShowSpan struct {
	Depth         int             `json:"depth"`
	SpanID        string          `json:"span_id"`
	ParentSpanID  string          `json:"parent_span_id"`
	Name          string          `json:"name"`
	Kind          string          `json:"kind"`
	GenAIKind     string          `json:"genai_kind"`
	Start         time.Time       `json:"start"`
	DurationMS    float64         `json:"duration_ms"`             // end minus start, clamped to 0 (see DurationNote)
	DurationNote  string          `json:"duration_note,omitempty"` // "unfinished" (end 0), "clock skew" (end before start) or "no times" (both 0): duration clamped to 0
	Status        string          `json:"status"`
	StatusMessage string          `json:"status_message,omitempty"`
	MissingParent string          `json:"missing_parent,omitempty"`    // an orphan: the id of its parent, which was not received
	HandoffFrom   string          `json:"handoff_from,omitempty"`      // handoff spans: the agent handing over
	HandoffTo     string          `json:"handoff_to,omitempty"`        // handoff spans: the target agent
	Guardrail     string          `json:"guardrail,omitempty"`         // guardrail spans: the guardrail's name
	Verdict       string          `json:"guardrail_verdict,omitempty"` // guardrail spans: "triggered" or "passed"
	Model         string          `json:"model,omitempty"`
	InputTokens   int64           `json:"input_tokens,omitempty"`
	OutputTokens  int64           `json:"output_tokens,omitempty"`
	Attributes    map[string]any  `json:"attributes"`
	Events        []ShowEvent     `json:"events,omitempty"` // span events, in recorded order
	Links         []ShowLink      `json:"links,omitempty"`  // span links, in recorded order
	Logs          []ShowLog       `json:"logs,omitempty"`   // the agent's log records for this span (not runagain's own records)
	OTLP          json.RawMessage `json:"otlp"`
	// CostUSD is the LLM call's cost in USD (the --config prices); absent for spans without
	// usage and for unpriced calls, which have Unpriced true.
	CostUSD  *float64 `json:"cost_usd,omitempty"`
	Unpriced bool     `json:"unpriced,omitempty"`
	// Step is the span's 1-based step number among the run's counted steps, LLMStep among its
	// LLM calls (`show --step N`); 0 when the span is not a step (internal/runview/rule).
	Step    int `json:"step,omitempty"`
	LLMStep int `json:"llm_step,omitempty"`
	// CoveredBy: a recorded exchange counted as part of this instrumented span's call (its
	// usage and cost are not counted again).
	CoveredBy string `json:"covered_by,omitempty"`
}

// ShowEvent is one span event.
type ShowEvent struct {
	Time       time.Time      `json:"time"`
	Name       string         `json:"name"`
	Attributes map[string]any `json:"attributes"`
}

// ShowLink is one span link: the span it points at (32 and 16 lowercase hex characters) and its
// attributes.
type ShowLink struct {
	TraceID    string         `json:"trace_id"`
	SpanID     string         `json:"span_id"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// ShowLog is one log record pointing at the run: an agent's record (for example a
// gen_ai.user.message event, listed under its span) or runagain's own (an agent_guard alert, a
// replay divergence: event names runagain.*, listed beside the run). Body keeps its JSON shape.
type ShowLog struct {
	Time       time.Time      `json:"time"`
	EventName  string         `json:"event_name,omitempty"`
	SpanID     string         `json:"span_id,omitempty"`
	Severity   string         `json:"severity,omitempty"`
	Body       any            `json:"body"`
	Attributes map[string]any `json:"attributes"`
}

func init() {
	var asJSON bool
	var step, tool int
	cmd := &cobra.Command{
		Use:   "show TRACE_ID",
		Short: "Show one run as an ordered tree with every span's timing, status, attributes and full inputs and outputs",
		Long: `Show one run as an ordered tree (docs/architecture.md "Order": start time, parent before child, span id;
an SDK sequence attribute wins) with every span's timing, status, model, tokens and every attribute
in full. Offloaded payloads (K_ref) are fetched from blob storage and verified unless --no-rehydrate.

--step N prints exactly what the model received at the N-th LLM call of the run (1-based): its
input messages, system instructions and tool definitions, byte for byte as recorded, then the
HTTP and MCP exchanges it made.

--tool N prints the N-th tool call of the run (1-based): its arguments and result as recorded
and the exchanges it made (a tool API's HTTP requests, an MCP server's tools/call request and
response).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := openReader()
			if err != nil {
				return err
			}
			defer r.Close()
			traceID, err := store.ResolveTraceID(cmd.Context(), r, args[0])
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("no run with trace id %s in %s", strings.ToLower(strings.TrimSpace(args[0])), storeName())
			}
			if err != nil {
				return err
			}
			run, err := r.Run(cmd.Context(), traceID)
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("no run with trace id %s in %s", traceID, storeName())
			}
			if err != nil {
				return err
			}
			v, closeView, err := buildView(cmd.Context(), run)
			if err != nil {
				return err
			}
			defer closeView()
			if cmd.Flags().Changed("step") && cmd.Flags().Changed("tool") {
				return errors.New("--step and --tool: give one (--step N: the N-th LLM call; --tool N: the N-th tool call)")
			}
			if cmd.Flags().Changed("step") {
				in, err := v.StepInput(step)
				if err != nil {
					return err
				}
				return printStep(cmd.OutOrStdout(), in, asJSON)
			}
			if cmd.Flags().Changed("tool") {
				in, err := v.ToolStep(tool)
				if err != nil {
					return err
				}
				return printToolStep(cmd.OutOrStdout(), in, asJSON)
			}
			view, err := buildShow(v)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), view)
			}
			printShow(cmd.OutOrStdout(), view)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for machines")
	cmd.Flags().IntVar(&step, "step", 0, "print only the model input of the N-th LLM call (1-based)")
	cmd.Flags().IntVar(&tool, "tool", 0, "print only the N-th tool call (1-based): arguments, result and the exchanges it made")
	cmd.Flags().BoolVar(&noRehydrate, "no-rehydrate", false, "show payload references (K_ref) instead of fetching the payloads")
	rootCmd.AddCommand(cmd)
}

// parseTraceID reads a trace id as 32 hex characters (either case).
func parseTraceID(s string) (pcommon.TraceID, error) { return otlpid.ParseTraceID(s) }

// buildShow is the --json shape of the run's View: every span in run order, with the kind,
// usage and cost the read model counted (internal/runview).
func buildShow(v *runview.View) (*ShowRun, error) {
	view := &ShowRun{TraceID: v.TraceID, SessionID: v.SessionID, Tier: v.Tier, Spans: []ShowSpan{}, Logs: []ShowLog{},
		Incomplete: v.Incomplete, IncompleteReason: v.IncompleteReason, CostUSD: v.Totals.CostUSD, Unpriced: v.Totals.Unpriced, Fixtures: v.Fixtures()}
	var jm ptrace.JSONMarshaler
	for _, n := range v.Nodes {
		s := n.Span
		raw, err := jm.MarshalTraces(store.SpanTraces(n.ResourceSpans, n.ScopeSpans, s))
		if err != nil {
			return nil, fmt.Errorf("encode span %s: %w", s.SpanID(), err)
		}
		// pdata's JSON encoder copies string bytes as they are; JSON must be UTF-8, so invalid
		// sequences (stored as received) are shown as U+FFFD, as encoding/json does.
		raw = bytes.ToValidUTF8(raw, []byte("\uFFFD"))
		dur, note := store.SpanDuration(s.StartTimestamp(), s.EndTimestamp())
		parent := ""
		if !s.ParentSpanID().IsEmpty() {
			parent = s.ParentSpanID().String()
		}
		sp := ShowSpan{
			Depth: n.Depth, SpanID: s.SpanID().String(), ParentSpanID: parent, Name: s.Name(),
			Kind: s.Kind().String(), GenAIKind: string(n.Kind),
			Start:      s.StartTimestamp().AsTime().UTC(),
			DurationMS: float64(dur) / 1e6, DurationNote: note,
			Status: s.Status().Code().String(), StatusMessage: s.Status().Message(),
			Model: genai.Model(n.Effective.Attributes()), InputTokens: n.RecordedUsage.Input, OutputTokens: n.RecordedUsage.Output,
			Attributes: s.Attributes().AsRaw(), Events: showEvents(s), Links: showLinks(s), OTLP: raw, MissingParent: n.MissingParent,
		}
		if n.Step != nil {
			sp.Step, sp.LLMStep = n.Step.Index, n.Step.LLMStep
		}
		if n.Verdict.CoveredBy >= 0 {
			sp.CoveredBy = v.Nodes[n.Verdict.CoveredBy].SpanID()
		}
		switch {
		case n.Cost.Unpriced:
			sp.Unpriced = true
		case n.Verdict.CountUsage && n.Cost.HasUsage:
			usd := n.Cost.USD
			sp.CostUSD = &usd
		}
		switch n.Kind {
		case genai.KindHandoff:
			sp.HandoffFrom, sp.HandoffTo = genai.Handoff(s)
		case genai.KindGuardrail:
			sp.Guardrail, sp.Verdict = genai.Guardrail(s)
		}
		for _, lr := range n.Logs {
			sp.Logs = append(sp.Logs, showLog(lr))
		}
		view.Spans = append(view.Spans, sp)
	}
	for _, r := range v.Records {
		view.Logs = append(view.Logs, showLog(r.LogRecord))
	}
	return view, nil
}

func showEvents(s ptrace.Span) []ShowEvent {
	var out []ShowEvent
	for i := 0; i < s.Events().Len(); i++ {
		e := s.Events().At(i)
		out = append(out, ShowEvent{Time: e.Timestamp().AsTime().UTC(), Name: e.Name(), Attributes: e.Attributes().AsRaw()})
	}
	return out
}

func showLinks(s ptrace.Span) []ShowLink {
	var out []ShowLink
	for i := 0; i < s.Links().Len(); i++ {
		l := s.Links().At(i)
		sl := ShowLink{TraceID: l.TraceID().String(), SpanID: l.SpanID().String()}
		if l.Attributes().Len() > 0 {
			sl.Attributes = l.Attributes().AsRaw()
		}
		out = append(out, sl)
	}
	return out
}

func showLog(lr plog.LogRecord) ShowLog {
	l := ShowLog{Time: runview.RecordTime(lr), EventName: runview.EventName(lr), Severity: lr.SeverityText(),
		Body: lr.Body().AsRaw(), Attributes: lr.Attributes().AsRaw()}
	if !lr.SpanID().IsEmpty() {
		l.SpanID = lr.SpanID().String()
	}
	return l
}

func printShow(w io.Writer, v *ShowRun) {
	var start, end time.Time
	for i, s := range v.Spans {
		e := s.Start.Add(time.Duration(s.DurationMS * 1e6)) // clamped: never before its start
		if i == 0 || s.Start.Before(start) {
			start = s.Start
		}
		if e.After(end) {
			end = e
		}
	}
	fmt.Fprintf(w, "run %s  session %s  tier %s\n", v.TraceID, v.SessionID, v.Tier)
	printFixtureCounts(w, v.Fixtures)
	if v.Incomplete {
		fmt.Fprintf(w, "INCOMPLETE: %s; what arrived is shown, orphans under their missing parent\n", v.IncompleteReason)
	}
	orphansOf := map[string]int{}
	for _, s := range v.Spans {
		if s.MissingParent != "" {
			orphansOf[s.MissingParent]++
		}
	}
	placed := map[string]bool{}
	if len(v.Spans) > 0 {
		fmt.Fprintf(w, "start %s  duration %s  spans %d  cost %s\n\n", start.Format(time.RFC3339Nano), end.Sub(start).Round(time.Millisecond), len(v.Spans),
			pricing.FormatUSD(v.CostUSD, v.Unpriced, v.CostUSD > 0))
	} else {
		fmt.Fprintf(w, "no spans are kept for this run any more (past the %s tier's retention); what is known:\n", v.Tier)
	}
	for _, s := range v.Spans {
		if p := s.MissingParent; p != "" && !placed[p] {
			placed[p] = true
			fmt.Fprintf(w, "%s▸ [missing] parent span %s not received (%d orphan span(s) below arrived without it)\n",
				strings.Repeat("  ", max(s.Depth-1, 0)), p, orphansOf[p])
		}
		ind := strings.Repeat("  ", s.Depth)
		fmt.Fprintf(w, "%s▸ [%s] %s  +%s  %s  %s", ind, s.GenAIKind, s.Name,
			s.Start.Sub(start).Round(time.Millisecond), time.Duration(s.DurationMS*1e6).Round(time.Microsecond), s.Status)
		if s.StatusMessage != "" {
			fmt.Fprintf(w, " (%s)", s.StatusMessage)
		}
		if s.DurationNote != "" {
			fmt.Fprintf(w, "  [duration clamped to 0: %s]", s.DurationNote)
		}
		fmt.Fprintf(w, "  span %s\n", s.SpanID)
		switch genai.Kind(s.GenAIKind) {
		case genai.KindHandoff:
			fmt.Fprintf(w, "%s    handoff %s → %s\n", ind, dash(s.HandoffFrom), dash(s.HandoffTo))
		case genai.KindGuardrail:
			verdict := s.Verdict
			if verdict == "" {
				verdict = "verdict not recorded"
			}
			fmt.Fprintf(w, "%s    guardrail %s: %s\n", ind, s.Guardrail, verdict)
		}
		if s.Model != "" || s.InputTokens != 0 || s.OutputTokens != 0 {
			tokens := fmt.Sprintf("tokens in %d out %d", s.InputTokens, s.OutputTokens)
			if s.InputTokens == 0 && s.OutputTokens == 0 && !hasUsage(s.Attributes) {
				tokens = "usage not recorded" // not a call that used no tokens
			}
			fmt.Fprintf(w, "%s    model %s  %s%s\n", ind, dash(s.Model), tokens, spanCostText(s))
		}
		keys := make([]string, 0, len(s.Attributes))
		for k := range s.Attributes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "%s    %s: %s\n", ind, k, indentValue(s.Attributes[k], ind+"      "))
		}
		for _, e := range s.Events {
			fmt.Fprintf(w, "%s    event %s  %s\n", ind, e.Name, e.Time.Format(time.RFC3339Nano))
			printAttrs(w, e.Attributes, ind+"        ")
		}
		for _, l := range s.Links {
			fmt.Fprintf(w, "%s    link trace %s span %s\n", ind, l.TraceID, l.SpanID)
			printAttrs(w, l.Attributes, ind+"        ")
		}
		for _, l := range s.Logs {
			fmt.Fprintf(w, "%s    log record %s  %s", ind, dash(l.EventName), l.Time.Format(time.RFC3339Nano))
			if l.Severity != "" {
				fmt.Fprintf(w, "  %s", l.Severity)
			}
			fmt.Fprintln(w)
			if l.Body != nil {
				fmt.Fprintf(w, "%s        body: %s\n", ind, indentValue(l.Body, ind+"          "))
			}
			printAttrs(w, l.Attributes, ind+"        ")
		}
	}
	if len(v.Logs) > 0 {
		fmt.Fprintf(w, "\nrecords pointing at this run (%d)\n", len(v.Logs))
		for _, l := range v.Logs {
			fmt.Fprintf(w, "  %s  %s  span %s  %s\n", l.Time.Format(time.RFC3339Nano), dash(l.EventName), dash(l.SpanID), indentValue(l.Body, "    "))
			printAttrs(w, l.Attributes, "      ")
		}
	}
}

// printAttrs prints attributes sorted by key, one a line, values in full (JSON for structured values).
func printAttrs(w io.Writer, attrs map[string]any, ind string) {
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s%s: %s\n", ind, k, indentValue(attrs[k], ind+"  "))
	}
}

// indentValue renders a value in full (never truncated); multi-line strings continue indented.
func indentValue(v any, ind string) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case []byte:
		s = fmt.Sprintf("bytes(%d) %x", len(x), x)
	case nil:
		s = "null"
	default:
		// Maps and slices (OTLP Map bodies, structured attributes) as JSON, never Go map[...] text.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(x); err != nil {
			s = fmt.Sprintf("(value not representable as JSON: %v)", err)
		} else {
			s = strings.TrimSuffix(buf.String(), "\n")
		}
	}
	return strings.ReplaceAll(s, "\n", "\n"+ind)
}

// hasUsage reports whether attrs (a span's attributes by key) record token usage under any
// key genai.TokenUsage reads (genai.UsageKeys).
func hasUsage(attrs map[string]any) bool {
	for _, k := range genai.UsageKeys() {
		if _, ok := attrs[k]; ok {
			return true
		}
	}
	return false
}
