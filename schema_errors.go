package binlogstream

import (
	"errors"
	"fmt"
)

// ErrSchemaMismatch is matched by a *SchemaMismatchError.
var ErrSchemaMismatch = errors.New("binlogstream: the binlog's table does not match the schema history")

// ErrSchemaHistory is matched by errors that say the schema history cannot
// follow the binlog: a DDL statement that contradicts it (ALTER of a
// column it does not have), a store that is corrupt or from another
// binlog.
var ErrSchemaHistory = errors.New("binlogstream: schema history")

// SchemaMismatchError stops a stream whose Table_map does not match the
// schema the history holds for the table at that position: a DDL the
// binlog never saw (SET sql_log_bin=0), a restored backup, a lost history
// record, or a token from another topology. No row of the table is
// delivered with names the history cannot vouch for.
type SchemaMismatchError struct {
	Table    string   // `schema`.`table`
	Position Position // where the Table_map starts
	GTID     string   // the transaction's GTID, if any
	Diff     string   // what differs
}

func (e *SchemaMismatchError) Error() string {
	at := e.Position.String()
	if e.GTID != "" {
		at += " (GTID " + e.GTID + ")"
	}
	return fmt.Sprintf("binlogstream: table %s at %s does not match the schema history: %s "+
		"(a DDL missing from the binlog, such as one run with sql_log_bin=0, a restored backup, a lost schema "+
		"history record, or a resume token from another server)", e.Table, at, e.Diff)
}

func (e *SchemaMismatchError) Unwrap() error { return ErrSchemaMismatch }
