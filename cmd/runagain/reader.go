package main

import (
	"fmt"
	"path/filepath"

	"github.com/runagain/runagain/internal/store"
	"github.com/runagain/runagain/internal/store/sqlitestore"
)

// openReader opens the store the collector's embedded default writes under --data-dir.
func openReader() (store.Reader, error) {
	path := filepath.Join(dataDirFlag, "hot.db")
	db, err := sqlitestore.Open(path, sqlitestore.Options{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("open store in %s (is --data-dir / RUNAGAIN_DATA_DIR the collector's data directory?): %w", dataDirFlag, err)
	}
	return db, nil
}
