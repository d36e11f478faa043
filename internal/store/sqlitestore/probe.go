// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"database/sql/driver"
	"strings"
	"sync/atomic"

	"modernc.org/sqlite"
)

// RowsReadProbe counts the rows a query rewritten by ProbeRowsRead visited: the read benchmark
// and the tests report rows read with it, rather than time.
var RowsReadProbe atomic.Int64

// probeFunc is the SQL function ProbeRowsRead adds: it counts one visited row and is true.
const probeFunc = "runagain_rows_read"

func init() {
	// Not deterministic, so SQLite calls it once per row it visits.
	if err := sqlite.RegisterScalarFunction(probeFunc, 1, func(*sqlite.FunctionContext, []driver.Value) (driver.Value, error) {
		RowsReadProbe.Add(1)
		return int64(1), nil
	}); err != nil {
		panic(err)
	}
}

// ProbeRowsRead returns q (a query of RunsQuery's shape: FROM one table, optional WHERE, ORDER
// BY; or of AggregateRunsQuery's: FROM table AS s GROUP BY) with a WHERE term that adds one to
// RowsReadProbe for every row SQLite visits before LIMIT stops it. The term uses no index, so
// the plan is q's.
func ProbeRowsRead(q string) string {
	term := probeFunc + "(trace_id)"
	if i := strings.Index(q, " AS s GROUP BY "); i >= 0 {
		return q[:i] + " AS s WHERE " + term + q[i+len(" AS s"):]
	}
	if i := strings.Index(q, " WHERE "); i >= 0 {
		return q[:i] + " WHERE " + term + " AND " + q[i+len(" WHERE "):]
	}
	if i := strings.Index(q, " ORDER BY "); i >= 0 {
		return q[:i] + " WHERE " + term + q[i:]
	}
	return q + " WHERE " + term
}
