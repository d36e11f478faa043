package clickhousestore

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/stretchr/testify/assert"

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

func TestDDLRetention(t *testing.T) {
	s := Schema{Database: "rg", WarmTTL: 90 * 24 * time.Hour, Cluster: "c1"}
	for _, ddl := range s.WarmDDL() {
		assert.Contains(t, ddl, "toIntervalSecond(7776000)")
		assert.Contains(t, ddl, "ON CLUSTER `c1`")
		assert.Contains(t, ddl, "ENGINE = MergeTree")
	}
	cold := s.ColdDDL()[0]
	assert.Contains(t, cold, "AggregatingMergeTree")
	assert.NotContains(t, cold, "TTL", "cold keeps sessions forever by default")
	assert.Contains(t, Schema{ColdTTL: time.Hour}.ColdDDL()[0], "toIntervalSecond(3600)")
	assert.Equal(t, "CREATE DATABASE IF NOT EXISTS `default`", Schema{}.DatabaseDDL())
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
