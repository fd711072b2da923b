package main

import (
	"context"
	"strings"

	"github.com/binlogstream/binlogstream"
)

// estimateRows asks server d for its estimate of each table's rows
// (schema.table): information_schema.TABLES.TABLE_ROWS, which InnoDB
// takes from sampled statistics, so it can be off either way. A table
// the server does not list is left out.
func estimateRows(d binlogstream.DSN) func(ctx context.Context, tables []string) (map[string]uint64, error) {
	return func(ctx context.Context, tables []string) (map[string]uint64, error) {
		c, err := d.Connect(ctx)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		args := make([]any, len(tables))
		for i, t := range tables {
			args[i] = t
		}
		r, err := c.Execute("SELECT CONCAT(TABLE_SCHEMA, '.', TABLE_NAME), IFNULL(TABLE_ROWS, 0) FROM information_schema.TABLES "+
			"WHERE CONCAT(TABLE_SCHEMA, '.', TABLE_NAME) IN (?"+strings.Repeat(", ?", len(tables)-1)+")", args...)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		rows := make(map[string]uint64, r.RowNumber())
		for i := range r.RowNumber() {
			id, _ := r.GetString(i, 0)
			n, _ := r.GetUint(i, 1)
			rows[id] = n
		}
		return rows, nil
	}
}
