// SPDX-License-Identifier: Apache-2.0

package clickhousestore

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runagain/runagain/internal/store"
)

func TestQuoteAndIdent(t *testing.T) {
	assert.Equal(t, `'it\'s a \\ test'`, Quote(`it's a \ test`))
	assert.Equal(t, "`we\\`ird`", Ident("we`ird"))
	// A hostile trace id can never leave the literal: every reader validates ids first, and
	// Quote escapes what is left.
	q := (&HotReader{}).SpansQuery(`x' OR 1=1 --`)
	assert.Contains(t, q, `TraceId = 'x\' OR 1=1 --'`)
}

var update = flag.Bool("update", false, "rewrite testdata/*.golden.sql from the current DDL")

// TestDDLGolden compares the whole DDL, statement by statement, with testdata/*.golden.sql
// (go test ./internal/store/clickhousestore -run TestDDLGolden -update rewrites them; review the
// diff): TTLs from the retentions, ON CLUSTER, engines, ordering and every column. The chDB tests
// (build tag chdb) run the same DDL on a real engine.
func TestDDLGolden(t *testing.T) {
	for name, ddl := range map[string][]string{
		"warm_90d_cluster": Schema{Database: "rg", WarmTTL: 90 * 24 * time.Hour, Cluster: "c1"}.WarmDDL(),
		"warm_no_ttl":      Schema{}.WarmDDL(),
		"patterns_90d":     Schema{Database: "rg", WarmTTL: 90 * 24 * time.Hour, Cluster: "c1"}.PatternsDDL(),
		"cold_forever":     Schema{Database: "rg"}.ColdDDL(),
		"cold_1h":          Schema{ColdTTL: time.Hour}.ColdDDL(),
		"database":         {Schema{}.DatabaseDDL()},
		"quarantine_72h":   {Schema{Database: "otel", Cluster: "c1"}.QuarantineDDL(72 * time.Hour)},
	} {
		t.Run(name, func(t *testing.T) {
			got := strings.Join(ddl, ";\n\n") + ";\n"
			path := filepath.Join("testdata", name+".golden.sql")
			if *update {
				require.NoError(t, os.MkdirAll("testdata", 0o750))
				require.NoError(t, os.WriteFile(path, []byte(got), 0o600))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run with -update to create %s", path)
			assert.Equal(t, string(want), got)
		})
	}
}

func TestReaderQueriesFilters(t *testing.T) {
	since := time.Unix(1_700_000_000, 0)
	q := (&WarmReader{Schema: Schema{Database: "rg"}}).RunsQuery(store.RunFilter{Since: since, Limit: 3})
	assert.Contains(t, q, "HAVING start_ns >= 1700000000000000000")
	assert.True(t, strings.HasSuffix(q, "LIMIT 3"), q)
	q = (&HotReader{SessionKeys: []string{"a.b"}}).RunsQuery(store.RunFilter{})
	assert.Contains(t, q, "SpanAttributes['a.b'] != ''")
	assert.Contains(t, q, "ResourceAttributes['a.b']")
	assert.NotContains(t, q, "HAVING")
	assert.NotContains(t, q, "LIMIT 3")
}

func TestMissingTable(t *testing.T) {
	// The native protocol: the driver's exception, by code, wrapped or nested.
	assert.True(t, MissingTable(fmt.Errorf("read runs: %w", &clickhouse.Exception{Code: 60, Name: "DB::Exception", Message: "Table rg.otel_traces does not exist"})))
	assert.True(t, MissingTable(&clickhouse.Exception{Code: 1000, Nested: []clickhouse.Exception{{Code: 81}}}))
	assert.False(t, MissingTable(&clickhouse.Exception{Code: 47, Message: "Missing columns: 'x' while processing query: table does not exist"}),
		"another code is not a missing table, whatever the message says")
	// The HTTP protocol and chDB: the code in the text.
	assert.True(t, MissingTable(errors.New("code: 60, message: Table rg.otel_traces does not exist")))
	assert.True(t, MissingTable(errors.New("Code: 81. DB::Exception: Database nope doesn't exist. (UNKNOWN_DATABASE)")))
	assert.False(t, MissingTable(errors.New("Code: 516. DB::Exception: default: Authentication failed: password is incorrect, or there is no user with such name")))
	assert.False(t, MissingTable(errors.New("connection refused: file does not exist")))
	assert.False(t, MissingTable(nil))
}

func TestOpenDBRejectsBadEndpoint(t *testing.T) {
	_, err := OpenDB("ch:9000", "", "", nil)
	assert.ErrorContains(t, err, `clickhouse endpoint "ch:9000"`)
	db, err := OpenDB("http://127.0.0.1:1", "u", "p", map[string]string{"dial_timeout": "1s"})
	assert.NoError(t, err, "opening does not connect")
	assert.NoError(t, db.Close())
}
