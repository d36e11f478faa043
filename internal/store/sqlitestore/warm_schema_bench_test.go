// SPDX-License-Identifier: Apache-2.0

package sqlitestore

import (
	"database/sql"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runagain/runagain/internal/testutil/benchtest"
)

// BenchmarkWarmSchemaCandidates measures, in the same run, the SQLite cost of storing span
// summaries under the warm schema (version 4) and under the layouts a version 5 could take, on
// SQLite alone: the same 22 columns, batches of 2,048 rows of 50 runs in one transaction each,
// 64 rows a statement, the rows' values built before the timer (16 KiB pages, WAL, synchronous
// NORMAL, temp_store MEMORY, as OpenWarm). Variants: "v4" (hex TEXT ids, unique (trace_id,
// span_id), index on ingested_unix_nano, ON CONFLICT DO NOTHING), "v4-ignore" (the same with
// INSERT OR IGNORE: no statement journal), "bin-ignore" (trace, span and parent ids as BLOBs of
// 16 and 8 bytes), "bin-ignore-noingested" (without the ingested index expiry uses), and
// "norowid-bin-ignore" (a WITHOUT ROWID table keyed by (trace_id, span_id) instead of a rowid
// table and a unique index). It reports CPU ns per row and file bytes per row.
//
//	go test ./internal/store/sqlitestore/ -run '^$' -bench WarmSchemaCandidates -benchtime 40x
func BenchmarkWarmSchemaCandidates(b *testing.B) {
	cols := `trace_id %[1]s NOT NULL, span_id %[1]s NOT NULL, parent_span_id %[1]s NOT NULL, session_id TEXT NOT NULL,
	  name TEXT NOT NULL, kind INTEGER NOT NULL, start_time_unix_nano INTEGER NOT NULL, end_time_unix_nano INTEGER NOT NULL,
	  status_code INTEGER NOT NULL, status_message TEXT NOT NULL, service_name TEXT NOT NULL, genai_kind TEXT NOT NULL,
	  model TEXT NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL,
	  unpriced INTEGER NOT NULL, tool_name TEXT NOT NULL, agent_name TEXT NOT NULL, error_type TEXT NOT NULL,
	  attributes BLOB NOT NULL, ingested_unix_nano INTEGER NOT NULL`
	const ingested = `CREATE INDEX s_ingested ON s (ingested_unix_nano);`
	for _, v := range []struct {
		name, ddl, insert string
		bin               bool
	}{
		{"v4", `CREATE TABLE s (` + fmt.Sprintf(cols, "TEXT") + `, UNIQUE (trace_id, span_id));` + ingested,
			`INSERT INTO s VALUES %s ON CONFLICT (trace_id, span_id) DO NOTHING`, false},
		{"v4-ignore", `CREATE TABLE s (` + fmt.Sprintf(cols, "TEXT") + `, UNIQUE (trace_id, span_id));` + ingested,
			`INSERT OR IGNORE INTO s VALUES %s`, false},
		{"bin-ignore", `CREATE TABLE s (` + fmt.Sprintf(cols, "BLOB") + `, UNIQUE (trace_id, span_id));` + ingested,
			`INSERT OR IGNORE INTO s VALUES %s`, true},
		{"bin-ignore-noingested", `CREATE TABLE s (` + fmt.Sprintf(cols, "BLOB") + `, UNIQUE (trace_id, span_id));`,
			`INSERT OR IGNORE INTO s VALUES %s`, true},
		{"norowid-bin-ignore", `CREATE TABLE s (` + fmt.Sprintf(cols, "BLOB") + `, PRIMARY KEY (trace_id, span_id)) WITHOUT ROWID;` + ingested,
			`INSERT OR IGNORE INTO s VALUES %s`, true},
	} {
		b.Run(v.name, func(b *testing.B) {
			db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "s.db")+
				"?_pragma=busy_timeout(10000)&_pragma=page_size(16384)&_pragma=temp_store(MEMORY)&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate")
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			if _, err := db.Exec(v.ddl); err != nil {
				b.Fatal(err)
			}
			const rows, stmts = 64, 32 // a batch: 32 statements of 64 rows
			st, err := db.Prepare(fmt.Sprintf(v.insert, strings.TrimSuffix(strings.Repeat(summaryPlaceholders+",", rows), ",")))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			attrs := make([]byte, 76) // the compact attributes' size on the bench's summaries
			id := func(s string) any {
				if !v.bin {
					return s
				}
				x, err := hex.DecodeString(s)
				if err != nil {
					b.Fatal(err)
				}
				return x
			}
			args := make([][]any, b.N*stmts)
			for it := 0; it < b.N; it++ {
				for c := 0; c < stmts; c++ {
					a := make([]any, 0, summaryArgs*rows)
					for r := 0; r < rows; r++ {
						n := c*rows + r
						trace := fmt.Sprintf("%016x%016x", 0xabcdef1234567+(n%50)*7919, it/4) // 50 runs, continued 4 batches
						a = append(a, id(trace), id(fmt.Sprintf("%08x%08x", it, n)), id(fmt.Sprintf("%08x%08x", it, n/2)),
							"conv-12", "chat gpt-4.1", int64(3), int64(1e18+it), int64(1e18+it+5), int64(0), "", "svc", "llm",
							"gpt-4.1", int64(1200), int64(300), 0.0123, int64(0), "", "agent", "", attrs, int64(1e18))
					}
					args[it*stmts+c] = a
				}
			}
			b.ResetTimer()
			cpu := benchtest.CPUTime()
			for it := 0; it < b.N; it++ {
				tx, err := db.Begin()
				if err != nil {
					b.Fatal(err)
				}
				s := tx.Stmt(st)
				for c := 0; c < stmts; c++ {
					if _, err := s.Exec(args[it*stmts+c]...); err != nil {
						b.Fatal(err)
					}
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu = benchtest.CPUTime() - cpu
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*stmts*rows), "cpu-ns/row")
			var size float64
			if err := db.QueryRow(`SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()`).Scan(&size); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(size/float64(b.N*stmts*rows), "file-B/row")
		})
	}
}
