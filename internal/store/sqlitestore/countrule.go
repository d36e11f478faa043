// SPDX-License-Identifier: Apache-2.0

package sqlitestore

// # The counting rule in the run index
//
// A run joined from an instrumented agent's spans and the proxy's recorded exchanges holds each
// LLM call twice: the agent's span and the exchange the proxy derived GenAI attributes for
// (runagain.genai.derived). The read model counts it once (internal/runview/rule); so does the
// index, with the same function: a run with a derived exchange has its tokens, cost and unpriced
// calls recomputed from its span rows through rule.Apply, in the transaction that writes them.
// Runs without a derived exchange (nearly all) keep the incremental sums unchanged.
//
//	run_exchanges (hot; warm: summary_exchanges)
//	  trace_id  TEXT  the run
//	  span_id   TEXT  a span row that is a recorded HTTP exchange with derived GenAI attributes
//	  exchange  INT   1: such an exchange; 2: one a rerun's --set edited (counted in place of
//	                  the call covering it); 0: an instrumented LLM call below another
//	  primary key (trace_id, span_id), WITHOUT ROWID; deleted with the run's span rows (trigger)
//
// Files written before the table existed have no rows in it: their runs keep the sums they had.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/runagain/runagain/internal/store"
)

// exchangesDDL creates x's exchanges table and its delete trigger.
func (x runIndex) exchangesDDL() string {
	if x.exchanges == "" {
		return ""
	}
	return `
CREATE TABLE IF NOT EXISTS ` + x.exchanges + ` (
  trace_id TEXT NOT NULL,
  span_id  TEXT NOT NULL,
  exchange INTEGER NOT NULL,
  PRIMARY KEY (trace_id, span_id)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS ` + x.spans + `_exchanges_delete AFTER DELETE ON ` + x.spans + ` BEGIN
  DELETE FROM ` + x.exchanges + ` WHERE trace_id = old.trace_id;
END;
`
}

// addExchanges records in tx the batch's rows that make the rule apply: derived exchanges
// (inserted or replaced), and LLM spans whose parent is an LLM span or that stored spans wait for.
func (x runIndex) addExchanges(ctx context.Context, tx *sql.Tx, b *RunBatch) error {
	if x.exchanges == "" {
		return nil
	}
	if err := x.nestedLLM(ctx, tx, b); err != nil {
		return fmt.Errorf("run index: nested calls: %w", err)
	}
	if len(b.exchanges) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO `+x.exchanges+` (trace_id, span_id, exchange)
	  SELECT value->>0, value->>1, value->>2 FROM json_each(?)`, jsonArg(b.exchanges)); err != nil {
		return fmt.Errorf("run index: exchanges: %w", err)
	}
	return nil
}

// nestedLLM adds to b.exchanges the batch's LLM spans whose parent is an LLM span (in the batch or
// stored) or that stored spans name as their missing parent (children written first).
func (x runIndex) nestedLLM(ctx context.Context, tx *sql.Tx, b *RunBatch) error {
	llm := map[[2]string]bool{}
	for _, f := range b.llm {
		llm[[2]string{f.TraceID, f.SpanID}] = true
	}
	for _, f := range b.llm {
		if f.ParentSpanID != "" && llm[[2]string{f.TraceID, f.ParentSpanID}] {
			b.exchanges = append(b.exchanges, [3]any{f.TraceID, f.SpanID, 0})
			continue
		}
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM `+x.spans+` WHERE trace_id = ? AND span_id = ? AND genai_kind = 'llm'
		  UNION ALL SELECT 1 FROM `+x.orphans+` WHERE trace_id = ? AND parent_span_id = ? LIMIT 1`,
			f.TraceID, f.ParentSpanID, f.TraceID, f.SpanID).Scan(&one)
		switch {
		case err == nil:
			b.exchanges = append(b.exchanges, [3]any{f.TraceID, f.SpanID, 0})
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
	}
	return nil
}

// applyRule recomputes, by rule.Apply, the tokens, cost and unpriced calls of those of traceIDs
// that hold a derived exchange, from their span rows.
func (x runIndex) applyRule(ctx context.Context, e Execer, traceIDs []string) error {
	q, ok := e.(queryer)
	if x.exchanges == "" || !ok || len(traceIDs) == 0 {
		return nil
	}
	rows, err := q.QueryContext(ctx, `SELECT DISTINCT trace_id FROM `+x.exchanges+` WHERE trace_id IN (SELECT value FROM json_each(?))`, idsJSON(traceIDs))
	if err != nil {
		return fmt.Errorf("run index: counting rule: %w", err)
	}
	var joined []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		joined = append(joined, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range joined {
		if err := x.countRun(ctx, e, q, id); err != nil {
			return fmt.Errorf("run index: counting rule: run %s: %w", id, err)
		}
	}
	return nil
}

// countRun sets the run's index sums to what rule.Apply counts over its span rows (store.CountByRule).
func (x runIndex) countRun(ctx context.Context, e Execer, q queryer, traceID string) error {
	rows, err := q.QueryContext(ctx, `SELECT s.span_id, s.parent_span_id, s.start_time_unix_nano, s.end_time_unix_nano, s.genai_kind,
	    s.model, s.input_tokens, s.output_tokens, s.cost_usd, s.unpriced, COALESCE(x.exchange, 0) IN (1, 2), COALESCE(x.exchange, 0) = 2
	  FROM `+x.spans+` AS s LEFT JOIN `+x.exchanges+` AS x ON x.trace_id = s.trace_id AND x.span_id = s.span_id
	  WHERE s.trace_id = ?`, traceID)
	if err != nil {
		return err
	}
	var per []store.RuleRow
	for rows.Next() {
		var r store.RuleRow
		if err := rows.Scan(&r.SpanID, &r.ParentSpanID, &r.Start, &r.End, &r.GenAIKind, &r.Model, &r.InputTokens, &r.OutputTokens,
			&r.CostUSD, &r.Unpriced, &r.Exchange, &r.Edited); err != nil {
			rows.Close()
			return err
		}
		per = append(per, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	t := store.CountByRule(per)
	_, err = e.ExecContext(ctx, `UPDATE runs SET input_tokens = ?, output_tokens = ?, cost_usd = ?, unpriced = ? WHERE trace_id = ?`,
		t.InputTokens, t.OutputTokens, t.CostUSD, t.Unpriced, traceID)
	return err
}
