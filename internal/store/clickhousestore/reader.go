// SPDX-License-Identifier: Apache-2.0

// Readers of the three tiers on ClickHouse: hot_reader.go (the contrib clickhouseexporter's
// tables), warm_reader.go (span summaries and key events), cold_reader.go (sessions). This file
// holds what they share: the query handle, the filter clauses, the summary scan, the "table
// missing" test and Open.

package clickhousestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/runagain/runagain/internal/otlpid"
	"github.com/runagain/runagain/internal/store"
)

// Querier is what the readers need of a database handle (*sql.DB).
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func closeFn(f func() error) error {
	if f == nil {
		return nil
	}
	return f()
}

// having renders f's time range and session as a HAVING clause on the listing's start column and
// its session expression ("" when f has neither).
func having(f store.RunFilter, col, session string) string {
	var conds []string
	if !f.Since.IsZero() {
		conds = append(conds, fmt.Sprintf("%s >= %d", col, f.Since.UnixNano()))
	}
	if !f.Until.IsZero() {
		conds = append(conds, fmt.Sprintf("%s < %d", col, f.Until.UnixNano()))
	}
	if f.SessionID != "" {
		conds = append(conds, fmt.Sprintf("%s = %s", session, Quote(f.SessionID)))
	}
	if len(conds) == 0 {
		return ""
	}
	return "\nHAVING " + strings.Join(conds, " AND ")
}

func limit(f store.RunFilter) string {
	if f.Limit <= 0 {
		return ""
	}
	return fmt.Sprintf("\nLIMIT %d", f.Limit)
}

func scanSummaries(rows *sql.Rows, tier string, withCost bool) ([]store.RunSummary, error) {
	// withCost: the query has two more columns, cost_usd and unpriced.
	defer rows.Close()
	var out []store.RunSummary
	for rows.Next() {
		var r store.RunSummary
		var start, end int64
		var models string
		dest := []any{&r.TraceID, &r.SessionID, &start, &end, &r.Spans, &models, &r.InputTokens, &r.OutputTokens, &r.Errors}
		if withCost {
			dest = append(dest, &r.CostUSD, &r.Unpriced)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if r.SessionID == "" {
			r.SessionID = r.TraceID
		}
		r.Start, r.End = time.Unix(0, start).UTC(), time.Unix(0, end).UTC()
		r.Models = split(models)
		r.Tier = tier
		out = append(out, r)
	}
	return out, rows.Err()
}

func split(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ",")
}

// ClickHouse error codes (ClickHouse src/Common/ErrorCodes.cpp) that mean "not there".
const (
	codeUnknownIdentifier = 47 // UNKNOWN_IDENTIFIER: a column a newer schema added
	codeUnknownTable      = 60 // UNKNOWN_TABLE
	codeUnknownDatabase   = 81 // UNKNOWN_DATABASE
)

// codeInText finds "Code: 60" / "code: 81," in an exception rendered as text (the HTTP
// protocol's errors, which clickhouse-go does not decode into an Exception).
var codeInText = regexp.MustCompile(`(?i)\bcode: (\d+)\b`)

// MissingTable reports whether err says a table or database does not exist (ClickHouse codes
// 60 UNKNOWN_TABLE, 81 UNKNOWN_DATABASE): a tier that was never configured reads as empty. It
// reads the code of the driver's *clickhouse.Exception (native protocol, nested exceptions
// included), else the code in the error text (HTTP protocol, chDB).
func MissingTable(err error) bool { return hasCode(err, codeUnknownTable, codeUnknownDatabase) }

// missingColumn reports whether err says a column does not exist (code 47 UNKNOWN_IDENTIFIER):
// a table created by an older release that the writer has not upgraded yet.
func missingColumn(err error) bool { return hasCode(err, codeUnknownIdentifier) }

// hasCode reports whether err carries one of codes, as MissingTable reads them.
func hasCode(err error, codes ...int32) bool {
	if err == nil {
		return false
	}
	missing := func(code int32) bool { return slices.Contains(codes, code) }
	var ex *clickhouse.Exception
	if errors.As(err, &ex) {
		if missing(ex.Code) {
			return true
		}
		for _, n := range ex.Nested {
			if missing(n.Code) {
				return true
			}
		}
		return false
	}
	for _, m := range codeInText.FindAllStringSubmatch(err.Error(), -1) {
		if c, convErr := strconv.Atoi(m[1]); convErr == nil && missing(int32(c)) {
			return true
		}
	}
	return false
}

func traceIDFrom(s string) (pcommon.TraceID, error) { return otlpid.ParseTraceID(s) }

func spanIDFrom(s string) (pcommon.SpanID, error) { return otlpid.ParseSpanID(s) }

var (
	_ store.Reader = (*HotReader)(nil)
	_ store.Reader = (*WarmReader)(nil)
	_ store.Reader = (*ColdReader)(nil)
)

// Open returns a store.Reader over all three tiers on one ClickHouse endpoint, in fallback
// order hot, warm, cold; the returned reader's Close closes the connection.
func Open(db *sql.DB, hot HotTables, schema Schema, sessionKeys []string) store.Reader {
	t := store.NewTiered(&HotReader{DB: db, Tables: hot, SessionKeys: sessionKeys},
		&WarmReader{DB: db, Schema: schema, SessionKeys: sessionKeys}, &ColdReader{DB: db, Schema: schema, closer: db.Close})
	return t
}
