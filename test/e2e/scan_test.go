// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"
)

// zstdMagic starts every zstd frame (RFC 8878 section 3.1.1).
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// fileContents returns what a file of the data directory holds: its raw bytes, and the output
// of every zstd frame found in it (payload objects and packs, Parquet pages compressed with
// zstd, SQLite cells), each decoded from its magic number on until the stream stops decoding.
// dec knows the data directory's zstd dictionaries, so frames made with one decode too.
func fileContents(dec *zstd.Decoder, raw []byte) [][]byte {
	out := [][]byte{raw}
	for i := 0; i+4 <= len(raw); {
		j := bytes.Index(raw[i:], zstdMagic)
		if j < 0 {
			break
		}
		i += j
		if err := dec.Reset(bytes.NewReader(raw[i:])); err == nil {
			plain, _ := io.ReadAll(io.LimitReader(dec, 256<<20)) // what decoded before any error
			if len(plain) > 0 {
				out = append(out, plain)
			}
		}
		i += 4
	}
	return out
}

// sqliteMagic starts every SQLite database file (https://www.sqlite.org/fileformat.html, 1.3).
var sqliteMagic = []byte("SQLite format 3\x00")

// sqliteCells returns every cell of every table of the SQLite file p, read through SQLite
// (read-only), so a row spread over overflow pages, or compressed whole, is seen in one piece.
func sqliteCells(t *testing.T, p string) [][]byte {
	db, err := sql.Open("sqlite", "file:"+p+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	var tables []string
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	require.NoError(t, err, p)
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		tables = append(tables, n)
	}
	require.NoError(t, rows.Err())
	rows.Close()
	var cells [][]byte
	for _, tb := range tables {
		rows, err := db.Query(`SELECT * FROM "` + tb + `"`)
		require.NoError(t, err, "%s: %s", p, tb)
		cols, err := rows.Columns()
		require.NoError(t, err)
		vals := make([]any, len(cols))
		for i := range vals {
			vals[i] = new(sql.RawBytes)
		}
		for rows.Next() {
			require.NoError(t, rows.Scan(vals...))
			for _, v := range vals {
				if b := *v.(*sql.RawBytes); len(b) > 0 {
					cells = append(cells, bytes.Clone(b))
				}
			}
		}
		require.NoError(t, rows.Err(), "%s: %s", p, tb)
		rows.Close()
	}
	return cells
}

// zstdDicts returns the zstd dictionaries of the SQLite files among files (their zstd_dicts
// tables): the hot and warm writers compress rows with them, so a scan needs them to read rows.
func zstdDicts(t *testing.T, files []string) [][]byte {
	var dicts [][]byte
	for _, p := range files {
		if head, err := os.ReadFile(p); err != nil || !bytes.HasPrefix(head, sqliteMagic) {
			continue
		}
		db, err := sql.Open("sqlite", "file:"+p+"?mode=ro")
		require.NoError(t, err)
		rows, err := db.Query(`SELECT dict FROM zstd_dicts`)
		if err == nil {
			for rows.Next() {
				var d []byte
				require.NoError(t, rows.Scan(&d))
				dicts = append(dicts, d)
			}
			rows.Close()
		}
		db.Close()
	}
	return dicts
}

// scanDir reports, for each value, the files of dir holding it: in their raw bytes, in any zstd
// frame in them (decoded with the directory's dictionaries), or, for SQLite files, in any cell
// of any table (raw or zstd-decoded). dicts is how many zstd dictionaries the scan used.
func scanDir(t *testing.T, dir string, values []string) (hits map[string][]string, files, dicts int) {
	var paths []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err == nil && !de.IsDir() {
			paths = append(paths, p)
		}
		return err
	}))
	ds := zstdDicts(t, paths)
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(256<<20), zstd.WithDecoderDicts(ds...))
	require.NoError(t, err)
	defer dec.Close()
	hits = map[string][]string{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue // a temporary file of the running collector, gone meanwhile
		}
		require.NoError(t, err)
		files++
		contents := fileContents(dec, raw)
		if bytes.HasPrefix(raw, sqliteMagic) {
			for _, cell := range sqliteCells(t, p) {
				contents = append(contents, fileContents(dec, cell)...)
			}
		}
		rel, _ := filepath.Rel(dir, p)
		for _, v := range values {
			for _, c := range contents {
				if bytes.Contains(c, []byte(v)) {
					hits[v] = append(hits[v], rel)
					break
				}
			}
		}
	}
	return hits, files, len(ds)
}
