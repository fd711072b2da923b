package binlogstream

// The names below are the internal packages' own, re-exported: the
// public API's seams onto internal/schema and internal/rows, kept in one
// place.

import (
	"github.com/binlogstream/binlogstream/internal/rows"
	"github.com/binlogstream/binlogstream/internal/schema"
)

// Column is one column of a Table: its name, declared type (Type,
// DataType, Length, Precision, Scale, FSP, Elems, Unsigned), charset and
// collation, nullability, whether it is generated, and the Table_map's
// type code and metadata (BinlogType, BinlogMeta). Its fields are
// documented at internal/schema's Column, which it is an alias of.
type Column = schema.Column

// ErrCorruptEvent is matched by errors for bytes that cannot be the binlog
// event they claim to be: a bad checksum, an impossible length, a LogPos
// that disagrees with the event's offset, a missing magic number.
var ErrCorruptEvent = rows.ErrCorrupt
