package binlogstream

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// What a snapshot taken while streaming is asked to do (SnapshotConfig)
// and reports (SnapshotStats, SnapshotKeyError).

// SnapshotConfig makes a streamer read tables while it streams
// (Config.Snapshot): each table in key chunks, each chunk in one short
// transaction on a connection of its own (a consistent snapshot on
// MariaDB, a locking read between watermarks on MySQL), delivered as
// SnapshotRead events when the stream reaches the chunk's binlog position.
// See "Snapshots" in doc.go for the contract.
type SnapshotConfig struct {
	// Tables selects the base tables to read, from those that exist when
	// the snapshot starts.
	Tables TablePatterns
	// ChunkRows is the rows per chunk read. 0 means DefaultChunkRows.
	ChunkRows int
	// Readers is how many chunk reads run at once (one connection each).
	// 0 means 1. Up to Readers tables are read at once, and with more
	// than one reader the reads of one table overlap too: each read first
	// finds where its range ends (the key ChunkRows rows on, an ordered
	// read of the key's index) and the next read starts there. A range
	// that rows were inserted into before its read holds up to twice
	// ChunkRows rows; past that it ends early and the read after it is
	// made again.
	Readers int
	// Keyless says what to do with a selected table that has no primary
	// key and no UNIQUE key of NOT NULL columns, which cannot be read in
	// key chunks: KeylessRefuse (the default) fails the Run at its start,
	// before anything is delivered, with a *SnapshotKeyError naming every
	// such table; KeylessSkip reads the others and logs a warning naming
	// each one left unread (its row changes stream as they come).
	Keyless KeylessPolicy
}

// KeylessPolicy is SnapshotConfig.Keyless.
type KeylessPolicy int

const (
	// KeylessRefuse fails the snapshot when a selected table has no key.
	KeylessRefuse KeylessPolicy = iota
	// KeylessSkip leaves such tables unread, with a warning each.
	KeylessSkip
)

// ErrNoSnapshotKey is matched by a *SnapshotKeyError.
var ErrNoSnapshotKey = errors.New("binlogstream: snapshot: a table has no primary key and no UNIQUE key of NOT NULL columns")

// SnapshotKeyError refuses a snapshot of tables that cannot be read in key
// chunks: they have no primary key and no UNIQUE key of NOT NULL columns.
// Leave them out of SnapshotConfig.Tables, give them a key, or set
// SnapshotConfig.Keyless to KeylessSkip.
type SnapshotKeyError struct {
	// Tables are the tables, "schema.table", in order.
	Tables []string
}

func (e *SnapshotKeyError) Error() string {
	names := make([]string, len(e.Tables))
	for i, id := range e.Tables {
		db, tbl, _ := strings.Cut(id, ".")
		names[i] = quoteName(db, tbl)
	}
	return fmt.Sprintf("binlogstream: snapshot: %s: no primary key and no UNIQUE key of NOT NULL columns, so the rows cannot be read in key chunks; "+
		"leave these tables out of SnapshotConfig.Tables, give them a key, or set SnapshotConfig.Keyless to KeylessSkip "+
		"(their changes still stream, their rows are not read)", strings.Join(names, ", "))
}

// Unwrap makes errors.Is(err, ErrNoSnapshotKey) true.
func (e *SnapshotKeyError) Unwrap() error { return ErrNoSnapshotKey }

// DefaultChunkRows is SnapshotConfig.ChunkRows when it is 0: enough rows
// that a chunk's round trips and transaction are a small part of its
// read, few enough that its read view lives for a short SELECT
// (BenchmarkRealSnapshotStreamCost reports how long).
const DefaultChunkRows = 8192

func (c *SnapshotConfig) validate() error {
	if c.ChunkRows < 0 || c.Readers < 0 {
		return configError("negative Snapshot.ChunkRows or Snapshot.Readers")
	}
	if c.Keyless != KeylessRefuse && c.Keyless != KeylessSkip {
		return configError("Snapshot.Keyless %d: want KeylessRefuse or KeylessSkip", c.Keyless)
	}
	if c.ChunkRows == 0 {
		c.ChunkRows = DefaultChunkRows
	}
	if c.Readers == 0 {
		c.Readers = 1
	}
	return nil
}

// SnapshotStats are a snapshot's counters (BinlogStreamer.SnapshotStats).
type SnapshotStats struct {
	// Tables is how many tables are still to read or being read;
	// Pending names them (schema.table, sorted). A caller may keep
	// Pending: it is never changed.
	Tables  int
	Pending []string
	// Rows counts SnapshotRead events delivered, moved once per chunk.
	Rows uint64
	// Chunks counts chunk reads; Rereads those whose read was discarded
	// (read before the table's held changes begin) and read again.
	Chunks, Rereads uint64
	// MaxReadAge is the longest a chunk read's transaction lived.
	MaxReadAge time.Duration
	// Held is the row changes held back for chunks to come.
	Held int
}
