package main

import (
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/binlogstream/binlogstream"
)

// resolveTables lists the source's base tables the patterns select, with
// their columns (in row-image order) and primary keys, sorted by name.
func resolveTables(src *client.Conn, pats binlogstream.TablePatterns) ([]*table, error) {
	r, err := src.Execute(`SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, EXTRA FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')
		ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION`)
	if err != nil {
		return nil, fmt.Errorf("source: list columns: %w", err)
	}
	byName := map[string]*table{}
	var out []*table
	for i := range r.RowNumber() {
		schema, _ := r.GetString(i, 0)
		name, _ := r.GetString(i, 1)
		col, _ := r.GetString(i, 2)
		extra, _ := r.GetString(i, 3)
		if !pats.Match(schema, name) {
			continue
		}
		t := byName[schema+"."+name]
		if t == nil {
			t = &table{schema: schema, name: name}
			byName[schema+"."+name] = t
			out = append(out, t)
		}
		if !strings.Contains(strings.ToUpper(extra), "GENERATED") {
			t.write = append(t.write, len(t.cols))
		}
		t.cols = append(t.cols, col)
	}
	r, err = src.Execute(`SELECT s.TABLE_SCHEMA, s.TABLE_NAME, s.COLUMN_NAME FROM information_schema.STATISTICS s
		JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = s.TABLE_SCHEMA AND t.TABLE_NAME = s.TABLE_NAME
		WHERE s.INDEX_NAME = 'PRIMARY' AND t.TABLE_TYPE = 'BASE TABLE'
		ORDER BY s.TABLE_SCHEMA, s.TABLE_NAME, s.SEQ_IN_INDEX`)
	if err != nil {
		return nil, fmt.Errorf("source: list primary keys: %w", err)
	}
	for i := range r.RowNumber() {
		schema, _ := r.GetString(i, 0)
		name, _ := r.GetString(i, 1)
		col, _ := r.GetString(i, 2)
		if t := byName[schema+"."+name]; t != nil {
			for c, n := range t.cols {
				if n == col {
					t.key = append(t.key, c)
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("source: no table matches --tables")
	}
	r, err = src.Execute(`SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES
		WHERE TABLE_TYPE NOT IN ('BASE TABLE') AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')`)
	if err != nil {
		return nil, fmt.Errorf("source: list table types: %w", err)
	}
	kind := map[string]string{}
	for i := range r.RowNumber() {
		schema, _ := r.GetString(i, 0)
		name, _ := r.GetString(i, 1)
		typ, _ := r.GetString(i, 2)
		kind[schema+"."+name] = typ
	}
	for _, t := range out {
		switch k := kind[t.schema+"."+t.name]; {
		case k == "SYSTEM VERSIONED":
			// Its binlog holds the history rows the source's versioning
			// writes (an update is also an insert of the old row), which a
			// versioned target would write again.
			return nil, fmt.Errorf("source: table %s is system-versioned (MariaDB): binlog-replicate does not replicate such tables", t)
		case len(t.key) == 0 && k != "":
			return nil, fmt.Errorf("source: %s is a %s, not a base table: binlog-replicate replicates base tables", t, strings.ToLower(k))
		case len(t.key) == 0:
			return nil, fmt.Errorf("source: table %s has no primary key: binlog-replicate applies changes by primary key", t)
		}
	}
	return out, nil
}

// prepareTargets creates each table on the target as the source defines
// it, unless it exists, and requires it empty: the snapshot's rows are
// inserted, and a row already there would be a duplicate key or a row the
// source does not have.
func prepareTargets(src *client.Conn, tgt *target, tables []*table) error {
	for _, t := range tables {
		if err := createTarget(src, tgt, t); err != nil {
			return err
		}
		r, err := tgt.exec("SELECT 1 FROM " + t.quoted() + " LIMIT 1")
		if err != nil {
			return fmt.Errorf("target: %w", err)
		}
		if r.RowNumber() > 0 {
			return fmt.Errorf("target: table %s is not empty: binlog-replicate copies into empty tables", t)
		}
	}
	return nil
}

// createTarget creates the table on the target as the source defines it,
// unless it exists.
func createTarget(src *client.Conn, tgt *target, t *table) error {
	r, err := src.Execute("SHOW CREATE TABLE " + t.quoted())
	if err != nil {
		return fmt.Errorf("source: SHOW CREATE TABLE %s: %w", t, err)
	}
	ddl, _ := r.GetString(0, 1)
	prefix := "CREATE TABLE " + quoteIdent(t.name) + " "
	if !strings.HasPrefix(ddl, prefix) {
		return fmt.Errorf("source: SHOW CREATE TABLE %s: unexpected %q", t, firstLine(ddl))
	}
	ddl = "CREATE TABLE IF NOT EXISTS " + t.quoted() + " " + ddl[len(prefix):]
	if _, err := tgt.exec("CREATE DATABASE IF NOT EXISTS " + quoteIdent(t.schema)); err != nil {
		return fmt.Errorf("target: %w", err)
	}
	if _, err := tgt.exec(ddl); err != nil {
		return fmt.Errorf("target: create %s: %w", t, err)
	}
	return nil
}
