// SPDX-License-Identifier: Apache-2.0

package clickhousestore

// # Failure signatures in the run index (warm tier, issue 32)
//
// Each failing run's signature (internal/patterns: computed from the run as the warm tier reads
// it back, store.WarmRun through internal/runview, as the SQLite warm file does) is kept beside
// the run index, so listing patterns reads the index and not the runs:
//
//	runagain_run_patterns  ReplacingMergeTree(version) ORDER BY trace_id, one row per run once merged
//	  trace_id            String
//	  session_id          String   the run's session ('' none): erasure by session
//	  pattern_id          String   patterns.Signature.ID ('' : the run was signed and passes)
//	  variant_id          String   patterns.Signature.VariantID
//	  agent               String   patterns.Agent: gen_ai.agent.name of the run, else service.name
//	  signature_version   UInt32   patterns.SignatureVersion it was computed with
//	  spans               UInt64   distinct span summaries the signature was computed from
//	  events              UInt64   distinct key events it was computed from
//	  version             UInt64   spans + events: what the engine keeps of a run signed twice
//	  ingested_unix_nano  Int64    retention clock (TTL, the warm retention)
//
//	runagain_pattern_signatures  ReplacingMergeTree(ingested_unix_nano) ORDER BY variant_id
//	  variant_id String, pattern_id String, signature String (patterns.Signature.JSON),
//	  ingested_unix_nano Int64 (TTL)
//
// The writer signs after it inserts a batch's summaries and events (Writer.WriteWarmRecords,
// WriteWarmTraces, WriteWarmLogs): the runs of the batch with a signal (a span of status ERROR
// or whose attributes can make it fail, patterns.SummarySignal; an alert event), and the runs of
// the batch that already have a signature row (one primary-key lookup per batch), are read back
// whole in two queries (their summaries and their key events, trace_id IN (...)) and their rows
// inserted. A run's summaries and events only grow (rows are appended, readers collapse them by
// span and event id), so a signature computed from more of them is the newer one: version is
// their count, and a retried batch writes the same row again, which the engine folds (readers
// fold what is not merged yet with argMax on (version, ingested_unix_nano)). A retried or
// re-sent batch therefore counts its runs once.
//
// WarmReader.PatternRuns lists the runs of the index (runagain_runs) in the range and joins
// their signature rows, their roots and orphans (from the summaries' parent ids: the incomplete
// flags, as the SQLite index's roots and orphans columns give them) and their key events count.
// A run whose row was computed from other counts than the run now has (a batch stored but not
// signed yet, a signing that failed), of another signature version, or with no row but errors or
// alerts (a database written before signatures were), is signed on the spot without writing.
// Runs whose only signal is being incomplete (no root yet, orphans) get no row: their flags are
// read live. Created by Writer.CreateWarm (PatternsDDL); deleted with the run by WarmEraser.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/runagain/runagain/internal/patterns"
	"github.com/runagain/runagain/internal/runview"
	"github.com/runagain/runagain/internal/store"
)

// Failure signature table names.
const (
	TableRunPatterns       = "runagain_run_patterns"
	TablePatternSignatures = "runagain_pattern_signatures"
)

// RunPatternColumns is the insert column list of runagain_run_patterns.
const RunPatternColumns = `trace_id, session_id, pattern_id, variant_id, agent, signature_version, spans, events, version, ingested_unix_nano`

// PatternSignatureColumns is the insert column list of runagain_pattern_signatures.
const PatternSignatureColumns = `variant_id, pattern_id, signature, ingested_unix_nano`

// PatternsDDL creates the failure signature tables (package comment of patternindex.go).
func (s Schema) PatternsDDL() []string {
	return []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s%s (
  trace_id String CODEC(ZSTD(1)),
  session_id String CODEC(ZSTD(1)),
  pattern_id LowCardinality(String),
  variant_id LowCardinality(String),
  agent LowCardinality(String),
  signature_version UInt32,
  spans UInt64,
  events UInt64,
  version UInt64,
  ingested_unix_nano Int64 CODEC(Delta(8), ZSTD(1))
) ENGINE = ReplacingMergeTree(version)
ORDER BY trace_id
%s
SETTINGS index_granularity = 8192`, s.Table(TableRunPatterns), s.cluster(), ttl(s.WarmTTL)),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s%s (
  variant_id String,
  pattern_id String,
  signature String CODEC(ZSTD(3)),
  ingested_unix_nano Int64
) ENGINE = ReplacingMergeTree(ingested_unix_nano)
ORDER BY variant_id
%s
SETTINGS index_granularity = 8192`, s.Table(TablePatternSignatures), s.cluster(), ttl(s.WarmTTL)),
	}
}

// idSet is a set of trace ids in first-seen order.
type idSet struct {
	ids  []string
	seen map[string]bool
}

func (s *idSet) add(id string) {
	if id == "" || s.seen[id] {
		return
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[id] = true
	s.ids = append(s.ids, id)
}

// quoteIDs renders ids as a list of string literals for IN (...).
func quoteIDs(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = Quote(id)
	}
	return strings.Join(q, ", ")
}

// signWarm signs the runs of a stored batch (spans and events) that can fail or are signed
// already (package comment above). Runs that cannot be rebuilt are left to the readers; a
// database without the signature tables (create_schema: false, not created) signs nothing.
// A failed query or insert is returned: the batch is stored, and a retry of it is idempotent.
func (w *Writer) signWarm(ctx context.Context, spans []store.SpanSummary, events []store.KeyEvent) error {
	if w.NoSignatures || (len(spans) == 0 && len(events) == 0) {
		return nil
	}
	var sign, rest idSet
	for _, s := range spans {
		if s.StatusCode == int32(ptrace.StatusCodeError) || patterns.SummarySignal(s.Attributes) {
			sign.add(s.TraceID)
		}
	}
	for _, e := range events {
		if e.Kind == "alert" {
			sign.add(e.TraceID)
		}
	}
	for _, s := range spans {
		if !sign.seen[s.TraceID] {
			rest.add(s.TraceID)
		}
	}
	for _, e := range events {
		if !sign.seen[e.TraceID] {
			rest.add(e.TraceID)
		}
	}
	if len(rest.ids) > 0 {
		// A missing table reads as no row (queryStrings); the inserts below then skip too.
		signed, err := queryStrings(ctx, w.DB, fmt.Sprintf("SELECT DISTINCT trace_id FROM %s WHERE trace_id IN (%s)",
			w.Schema.Table(TableRunPatterns), quoteIDs(rest.ids)))
		if err != nil {
			return fmt.Errorf("clickhouse warm tier: signatures: %w", err)
		}
		for _, id := range signed {
			sign.add(id)
		}
	}
	if len(sign.ids) == 0 {
		return nil
	}
	r := &WarmReader{DB: w.DB, Schema: w.Schema, SessionKeys: w.SessionKeys}
	sigs, err := r.sign(ctx, sign.ids)
	if err != nil {
		return fmt.Errorf("clickhouse warm tier: signatures: %w", err)
	}
	now := w.now()
	var runRows, sigRows [][]any
	variants := map[string]bool{}
	for _, id := range sign.ids {
		s, ok := sigs[id]
		if !ok {
			continue
		}
		runRows = append(runRows, []any{id, s.session, s.sig.ID(), s.sig.VariantID(), s.agent, uint32(patterns.SignatureVersion),
			s.spans, s.events, s.spans + s.events, now})
		if v := s.sig.VariantID(); v != "" && !variants[v] {
			variants[v] = true
			sigRows = append(sigRows, []any{v, s.sig.ID(), string(s.sig.JSON()), now})
		}
	}
	// The signatures first: a reader that sees a run's row finds its variant's signature.
	err = w.insert(ctx, TablePatternSignatures, PatternSignatureColumns, sigRows)
	if err == nil {
		err = w.insert(ctx, TableRunPatterns, RunPatternColumns, runRows)
	}
	if MissingTable(err) {
		return nil
	}
	return err
}

// signed is one run's signature and what it was computed from.
type signed struct {
	sig            patterns.Signature
	agent, session string
	spans, events  uint64
}

// SignRunsQueries are the two SQL statements that read runs traceIDs back whole for signing:
// their span summaries and their key events (WarmReader.SpansQuery and EventsQuery for several
// runs, one row per span and event id).
func (r *WarmReader) SignRunsQueries(traceIDs []string) (spans, events string) {
	in := quoteIDs(traceIDs)
	spans = fmt.Sprintf(`SELECT trace_id, span_id, parent_span_id, session_id, toString(name), kind, start_time_unix_nano,
  end_time_unix_nano, status_code, status_message, toString(service_name), toString(genai_kind), toString(model),
  input_tokens, output_tokens, cost_usd, unpriced, toString(tool_name), toString(agent_name), toString(error_type), attributes
FROM %s WHERE trace_id IN (%s)
ORDER BY trace_id, start_time_unix_nano, span_id
LIMIT 1 BY trace_id, span_id`, r.Schema.Table(TableSpanSummaries), in)
	events = fmt.Sprintf(`SELECT event_id, trace_id, span_id, session_id, time_unix_nano, toString(kind), toString(name),
  severity_number, toString(service_name), message, attributes
FROM %s WHERE trace_id IN (%s)
ORDER BY trace_id, time_unix_nano, event_id
LIMIT 1 BY trace_id, event_id`, r.Schema.Table(TableKeyEvents), in)
	return spans, events
}

// sign reads the runs ids back (SignRunsQueries) and computes their signatures; a run not
// stored or that cannot be rebuilt is left out.
func (r *WarmReader) sign(ctx context.Context, ids []string) (map[string]signed, error) {
	sq, eq := r.SignRunsQueries(ids)
	rows, err := r.DB.QueryContext(ctx, sq)
	if MissingTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	spans, err := store.ScanSpanSummaries(rows, nil)
	if err != nil {
		return nil, err
	}
	erows, err := r.DB.QueryContext(ctx, eq)
	if err != nil && !MissingTable(err) {
		return nil, err
	}
	var events []store.KeyEvent
	if err == nil {
		if events, err = store.ScanKeyEvents(erows); err != nil {
			return nil, err
		}
	}
	bySpan := map[string][]store.SpanSummary{}
	for _, s := range spans {
		bySpan[s.TraceID] = append(bySpan[s.TraceID], s)
	}
	byEvent := map[string][]store.KeyEvent{}
	for _, e := range events {
		byEvent[e.TraceID] = append(byEvent[e.TraceID], e)
	}
	out := make(map[string]signed, len(ids))
	for _, id := range ids {
		ss, es := bySpan[id], byEvent[id]
		run, err := store.WarmRun(id, ss, es)
		if err != nil {
			continue // not stored (store.ErrNotFound), or not rebuilt: a reader tries again
		}
		v, err := runview.Build(ctx, run, runview.Options{SessionKeys: r.SessionKeys})
		if err != nil {
			continue
		}
		s := signed{sig: patterns.FromView(v), agent: patterns.Agent(v), spans: uint64(len(ss)), events: uint64(len(es))}
		for _, x := range ss {
			s.session = max(s.session, x.SessionID)
		}
		out[id] = s
	}
	return out, nil
}

// PatternRunsQuery is the SQL WarmReader.PatternRuns issues: the runs of the run index that
// started in f's range (whose summaries are still stored), newest first, with their signature
// row (argMax by version, then ingestion), their roots and orphans, and their key events.
// Columns: trace_id, session, start_ns, models, cost, errors, rule (as IndexedRunsQuery), spans
// (distinct span ids), roots, orphans, events, alerts, then the signature row's signed (0: none),
// pattern_id, variant_id, agent, signature_version, spans, events.
func (r *WarmReader) PatternRunsQuery(f store.PatternFilter) string {
	runs := r.Schema.Table(TableRuns)
	pick := fmt.Sprintf("SELECT trace_id FROM %s GROUP BY trace_id", runs)
	if f.TraceIDs != nil {
		ids := quoteIDs(f.TraceIDs)
		if ids == "" {
			ids = "''"
		}
		pick = fmt.Sprintf("SELECT trace_id FROM %s WHERE trace_id IN (%s) GROUP BY trace_id", runs, ids)
	}
	conds := startConds(f.Since, f.Until)
	if len(conds) > 0 {
		pick += " HAVING " + strings.Join(conds, " AND ")
	}
	return fmt.Sprintf(`SELECT i.trace_id, i.session, i.start_ns, i.models, i.cost, i.errors, i.rule, i.nspans,
  c.roots, toInt64(arrayCount(x -> x != '' AND NOT has(c.ids, x), c.parents)) AS orphans, e.events, e.alerts,
  p.signed, p.pattern_id, p.variant_id, p.agent, p.signature_version, p.spans, p.events
FROM (
  SELECT trace_id, max(session_id) AS session, min(start_time_unix_nano) AS start_ns,
    groupUniqArrayMerge(spans) AS s, groupUniqArrayMerge(rule_spans) AS rs,
    arrayMap(x -> x.1, arrayFilter(x -> x.3 = 0, rs)) AS llm,
    arrayStringConcat(arraySort(arrayDistinct(arrayFilter(m -> m != '', arrayMap(x -> x.2, s)))), ',') AS models,
    toFloat64(arraySum(x -> x.6, s)) AS cost, toInt64(arraySum(x -> x.5, s)) AS errors,
    toUInt8(arrayExists(x -> x.3 = 1 OR has(llm, x.2), rs)) AS rule,
    toUInt64(length(arrayDistinct(arrayMap(x -> x.1, s)))) AS nspans
  FROM %[1]s WHERE trace_id IN (%[2]s)
  GROUP BY trace_id
) AS i
INNER JOIN (
  SELECT trace_id, toInt64(countIf(parent_span_id = '')) AS roots, groupArray(span_id) AS ids, groupArray(parent_span_id) AS parents
  FROM (SELECT trace_id, span_id, parent_span_id FROM %[3]s WHERE trace_id IN (%[2]s) LIMIT 1 BY trace_id, span_id)
  GROUP BY trace_id
) AS c ON c.trace_id = i.trace_id
LEFT JOIN (
  SELECT trace_id, toUInt64(uniqExact(event_id)) AS events, toInt64(uniqExactIf(event_id, kind = 'alert')) AS alerts
  FROM %[4]s WHERE trace_id IN (%[2]s)
  GROUP BY trace_id
) AS e ON e.trace_id = i.trace_id
LEFT JOIN (
  SELECT trace_id, toUInt8(1) AS signed, tupleElement(t, 1) AS pattern_id, tupleElement(t, 2) AS variant_id,
    tupleElement(t, 3) AS agent, tupleElement(t, 4) AS signature_version, tupleElement(t, 5) AS spans, tupleElement(t, 6) AS events
  FROM (
    SELECT trace_id, argMax(tuple(toString(pattern_id), toString(variant_id), toString(agent), signature_version, spans, events),
      tuple(version, ingested_unix_nano)) AS t
    FROM %[5]s WHERE trace_id IN (%[2]s)
    GROUP BY trace_id
  )
) AS p ON p.trace_id = i.trace_id
ORDER BY i.start_ns DESC, i.trace_id`, runs, pick, r.Schema.Table(TableSpanSummaries), r.Schema.Table(TableKeyEvents),
		r.Schema.Table(TableRunPatterns))
}

// PatternRuns implements store.PatternReader over the warm tier's run index and its failure
// signatures (package comment of patternindex.go): runs are streamed newest first, then those
// signed on the spot and those whose cost the counting rule recounts. A database without the
// run index or the signature tables has no patterns to list: it is an error naming the fix (the
// collector's warm writer creates them, create_schema).
func (r *WarmReader) PatternRuns(ctx context.Context, f store.PatternFilter, yield func(store.PatternRun) error) error {
	rows, err := r.DB.QueryContext(ctx, r.PatternRunsQuery(f))
	if err != nil {
		if MissingTable(err) || missingColumn(err) {
			return fmt.Errorf("clickhouse warm tier: patterns: no run index with failure signatures in database %s (the collector's warm writer creates it with create_schema): %w", r.Schema.db(), err)
		}
		return fmt.Errorf("clickhouse warm tier: patterns: %w", err)
	}
	var later, recount []store.PatternRun
	rule := map[string]bool{}
	for rows.Next() {
		var p store.PatternRun
		var start, errs, roots, orphans, alerts int64
		var models string
		var cost float64
		var ruled, hasRow uint8
		var spans, events, sigSpans, sigEvents uint64
		var sigVersion uint32
		if err := rows.Scan(&p.TraceID, &p.SessionID, &start, &models, &cost, &errs, &ruled, &spans, &roots, &orphans,
			&events, &alerts, &hasRow, &p.PatternID, &p.VariantID, &p.Agent, &sigVersion, &sigSpans, &sigEvents); err != nil {
			rows.Close()
			return fmt.Errorf("clickhouse warm tier: patterns: %w", err)
		}
		p.Start, p.Models, p.CostUSD, p.Tier = time.Unix(0, start).UTC(), split(models), cost, store.TierWarm
		if p.SessionID == "" {
			p.SessionID = p.TraceID
		}
		current := hasRow == 1 && sigVersion == patterns.SignatureVersion && sigSpans == spans && sigEvents == events
		switch {
		case hasRow == 1 && !current, hasRow == 0 && (errs > 0 || alerts > 0):
			p.PatternID, p.VariantID, p.Agent = "", "", ""
			later = append(later, p)
			rule[p.TraceID] = ruled == 1
			continue
		case p.PatternID == "":
			p.Agent = ""
			if roots == 0 || orphans > 0 {
				p.PatternID, p.VariantID, p.Signature = patterns.IncompleteOnly(roots, orphans)
			}
		}
		if ruled == 1 {
			recount = append(recount, p)
			continue
		}
		if !f.Keep(p) {
			continue
		}
		if err := yield(p); err != nil {
			rows.Close()
			return err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("clickhouse warm tier: patterns: %w", err)
	}
	const chunk = 500 // runs read back per query
	for i := 0; i < len(later); i += chunk {
		part := later[i:min(i+chunk, len(later))]
		ids := make([]string, len(part))
		for j, p := range part {
			ids[j] = p.TraceID
		}
		sigs, err := r.sign(ctx, ids)
		if err != nil {
			return fmt.Errorf("clickhouse warm tier: patterns: signatures: %w", err)
		}
		for _, p := range part {
			s, ok := sigs[p.TraceID]
			if !ok {
				continue // erased meanwhile, or not rebuilt
			}
			p.PatternID, p.VariantID, p.Agent = s.sig.ID(), s.sig.VariantID(), s.agent
			if s.sig.Failing() {
				p.Signature = s.sig.JSON()
			}
			if rule[p.TraceID] {
				recount = append(recount, p)
				continue
			}
			if !f.Keep(p) {
				continue
			}
			if err := yield(p); err != nil {
				return err
			}
		}
	}
	return r.yieldRecounted(ctx, recount, f, yield)
}

// yieldRecounted recounts the cost of runs by the counting rule (RuleRowsQuery), then yields
// those f keeps.
func (r *WarmReader) yieldRecounted(ctx context.Context, runs []store.PatternRun, f store.PatternFilter, yield func(store.PatternRun) error) error {
	const chunk = 500
	for i := 0; i < len(runs); i += chunk {
		part := runs[i:min(i+chunk, len(runs))]
		ids := make([]string, len(part))
		for j, p := range part {
			ids[j] = p.TraceID
		}
		rows, err := r.DB.QueryContext(ctx, r.RuleRowsQuery(ids))
		if err != nil {
			return fmt.Errorf("clickhouse warm tier: patterns: counting rule: %w", err)
		}
		byRun := map[string][]store.RuleRow{}
		for rows.Next() {
			var tid string
			var x store.RuleRow
			var derived uint8
			if err := rows.Scan(&tid, &x.SpanID, &x.ParentSpanID, &x.Start, &x.End, &x.GenAIKind, &x.Model, &derived,
				&x.InputTokens, &x.OutputTokens, &x.CostUSD, &x.Unpriced); err != nil {
				rows.Close()
				return fmt.Errorf("clickhouse warm tier: patterns: counting rule: %w", err)
			}
			x.Exchange = derived == 1
			byRun[tid] = append(byRun[tid], x)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("clickhouse warm tier: patterns: counting rule: %w", err)
		}
		for _, p := range part {
			p.CostUSD = store.CountByRule(byRun[p.TraceID]).CostUSD
			if !f.Keep(p) {
				continue
			}
			if err := yield(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// PatternSignatures implements store.PatternReader: the stored signature JSON of each of ids.
func (r *WarmReader) PatternSignatures(ctx context.Context, ids []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(ids) == 0 {
		return out, nil
	}
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	rows, err := r.DB.QueryContext(ctx, fmt.Sprintf("SELECT variant_id, argMax(signature, ingested_unix_nano) FROM %s WHERE variant_id IN (%s) GROUP BY variant_id",
		r.Schema.Table(TablePatternSignatures), quoteIDs(sorted)))
	if MissingTable(err) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("clickhouse warm tier: pattern signatures: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, sig string
		if err := rows.Scan(&id, &sig); err != nil {
			return nil, err
		}
		out[id] = []byte(sig)
	}
	return out, rows.Err()
}

var _ store.PatternReader = (*WarmReader)(nil)
