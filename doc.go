// Package binlogstream streams a MySQL or MariaDB binary log and can be
// stopped, crashed or reconnected at any moment and resumed with every event
// delivered exactly once.
//
// This documentation is the contract. The repository's docs/ directory
// holds the depth: docs/design.md (how the resume core keeps the
// contract), docs/sources.md, docs/failover.md, docs/filtering.md,
// docs/schema-history.md and docs/values.md.
//
// # The resume contract
//
// Resume covers every row change of its event. A consumer that applies a
// rows event one change at a time, and may stop between two, stores beside
// each change the token Event.Changes yields with it
// (Event.ResumeAfterRows): stored beside the first change, Resume would
// skip the others after a crash.
//
// Every Event carries Resume, the position to persist once that event is
// applied. A streamer started from a persisted position (Config.Start):
//
//  1. opens a dump at its safe point;
//  2. drops the replayed events up to where the position says delivery
//     stopped, rows inside an event included (see Positions and tokens);
//  3. delivers everything after that, in binlog order.
//
// A consumer that stores Resume atomically with the event's effects (in the
// same database transaction, or the same write) gets every event exactly
// once, whatever moment a crash comes at. Storing it after the effects, in
// a step of its own, is at-least-once: a crash between the two delivers
// again the events since the last stored position. A position never claims
// more than was applied, because it is handed out with the event it covers.
// Persisting the token of only some events (the rows a consumer applies and
// its commits) is correct: a resume from an earlier token delivers the
// skipped events again, and skipping them again changes nothing.
//
// If the replayed binlog is not the one the position was taken from (a
// server reset, a restored backup, a position from another server), the
// streamer stops with an error matching ErrResumeMismatch rather than
// guess.
//
// A dropped connection is reconnected by the streamer itself, from its own
// safe point and with the same dropping rule (go-mysql's own retry is off),
// at most Config.MaxReconnectAttempts times in a row with exponential
// backoff; then Run returns a *ReconnectError. Server refusals (a purged
// binlog: a *ServerError with code 1236) and decode errors (*DecodeError)
// are not retried.
//
// # Events and listeners
//
// Listeners run on Run's goroutine, one event at a time, in binlog order,
// while the source reads and decodes ahead. Each listener gets the Event as
// a value: its own copy to keep as long as it likes (the go-mysql
// BinlogEvent it points to is shared and never changed after delivery).
// A listener error stops Run with a *ListenerError; that event does not
// count as streamed and is delivered again after a resume.
//
// Cancelling Run's context is a graceful stop: the event being delivered
// finishes with a listener context that is cancelled only Config.StopGrace
// later (or by Close), and Run reports a listener failure rather than the
// cancellation (see Listener). StopAt, StopAtGTID, StopAtCurrent and
// FlushAndStop end Run with nil once a target is delivered.
//
// A MySQL Transaction_payload event (binlog_transaction_compression) is
// delivered as its inner events, one by one. SyncerConfig.DecodeTable
// leaves the rows of unwanted tables undecoded and undelivered; with
// Config.ProgressInterval the listeners still hear of the position that
// moves past them, or of an idle stream, through an event whose body is a
// *Progress carrying Resume (docs/filtering.md).
//
// # Positions and tokens
//
// A ResumePosition holds two positions. Streamed is the end of the last
// event every listener acknowledged, plus Rows, the row changes of the
// next event already delivered (Event.ResumeAfterRows checkpoints between
// rows). Safe is the last statement boundary at or before Streamed, where a
// new dump can start: a dump started between a statement's Table_map and
// its last rows event cannot decode the rows (go-mysql reports "invalid
// table id N, no corresponding table map event"), which is how resuming
// from the last streamed position fails. Safe points are statement
// boundaries, not transaction boundaries, so the replay after a crash is
// the statement in flight, not the transaction.
//
// ResumePosition.String gives a compact, versioned, checksummed token and
// ParseResumePosition reads it back; a corrupt, truncated or foreign token
// is refused with an error matching ErrInvalidToken. AppendText and
// TokenWriter write tokens without allocating, for a consumer that writes
// one per row. StartAt starts at a position known to be a boundary (a
// file's offset 4, SHOW MASTER STATUS).
//
// Offsets are 64-bit, so a file past 4 GiB is followed exactly. A file-mode
// dump cannot be requested past 4 GiB (COM_BINLOG_DUMP's offset is 32
// bits): resuming there fails with ErrOffsetTooLarge instead of wrapping.
//
// # GTID mode and failover
//
// StartAtGTID streams every transaction not in an executed GTID set. A
// GTID-mode position holds the executed set and how much of the in-flight
// transaction was delivered, counted so that it is valid on every server
// of a replication topology, however each splits the transaction's rows
// into events. With Config.Failover a GTID-mode stream moves to a promoted
// writer when its server stays unreachable, after proving the candidate
// holds everything delivered (it fails closed: any doubt refuses it). File
// mode never fails over. See docs/failover.md.
//
// # Sources
//
// A Source opens dumps. SyncerSource streams from a server (NewSyncerSource;
// ParseDSN reads go-sql-driver/mysql DSNs, TLS included). DirSource reads
// binlog files from a directory and serves them as the server's dump would,
// so positions and tokens are the same and a token taken on one resumes on
// the other. ArchiveSource reads an archive of binlog files for what the
// server has purged, then the server. Tests use testhelpers.FakeSource.
// With MariaDB the sources deliver Annotate_rows events, which a server
// leaves out of a dump unless asked. See docs/sources.md.
//
// # Schema
//
// Event.Table describes the table of every Table_map and rows event as of
// that event's binlog position: names, declared types, charsets, ENUM/SET
// members and the primary key. Table.Source says where it comes from: the
// Table_map itself under binlog_row_metadata=FULL (SchemaFromBinlog); else
// the schema history (SchemaFromHistory), an information_schema snapshot
// placed at a binlog position and advanced by every DDL statement of the
// binlog; else nothing (SchemaUnknown: no names, Table.Unknown says why,
// values stay positional). A DDL statement the history cannot read makes
// its tables unknown, never stale.
//
// Every Table_map is checked against the history; a table that changed
// without the binlog saying so stops Run with a *SchemaMismatchError, and
// no row of it is delivered under names the history cannot vouch for.
// SchemaConfig.Store persists the history (NewFileSchemaStore), so a
// resumed streamer uses the schema as of its token, never the live one.
// See SchemaConfig and docs/schema-history.md.
//
// # Values
//
// RowsEvent.Rows holds go-mysql's raw values: this package's decoder
// (DecodeRows) gives the same values, of the same types, as go-mysql's
// decoder would. Event.RowValues
// gives a row image with each value as the server means it (Table.Value:
// UNSIGNED integers, text decoded from its charset, ENUM and SET names,
// temporal text with the column's fractional digits, ...), Absent for a
// column the image left out, and for a MySQL partial JSON update the whole
// after document. With SyncerConfig.RecycleRows, Event.Release hands an
// event's row memory back: after it, nothing may read that event's rows.
// See docs/values.md.
//
// # Snapshots
//
// Config.Snapshot (or SnapshotTable while streaming) reads tables beside
// the stream with no long transaction: each chunk of
// SnapshotConfig.ChunkRows rows in key order (the primary key, else a
// UNIQUE key of NOT NULL columns) is one short transaction on a reader's
// own connection. Selected tables with neither fail Run at its start,
// before any event, with one *SnapshotKeyError naming them all, unless
// SnapshotConfig.Keyless is KeylessSkip (see docs/snapshot.md). On MariaDB
// (SyncerConfig.Flavor "mariadb") it is a START TRANSACTION WITH
// CONSISTENT SNAPSHOT whose Binlog_snapshot_file and _position are the
// binlog position the read is exact at. On MySQL it is a locking read
// (LOCK IN SHARE MODE, one chunk's rows for one read) between two
// watermarks, the binlog position before and after it: the chunk is placed
// at the later one, with the changes after the earlier one folded in (see
// docs/snapshot.md). A chunk is delivered, as one SnapshotRead event per
// row, once the stream has passed its position, with the changes of its
// keys streamed since folded in. Until a key has
// been read, the stream's changes to it are held back; after, they are
// delivered; an update that moves a key into or out of the part already
// read is delivered as an insert or a delete. So for each key the
// consumer sees its read first and every later change after it, in binlog
// order. Every event's Resume records, with the stream's position, each
// table's boundary key (the last row delivered) and which tables are
// done, so a resume continues a snapshot exactly, inside a chunk
// included. Key order is the server's: integers, DECIMAL, temporal types
// and binary strings compare in Go, text keys by the server's
// WEIGHT_STRING in their collation. The tables' rows events must be
// decoded (SyncerConfig.DecodeTable), and the tables' definitions must
// not change while they are read.
//
// # Secrets in statements
//
// MariaDB, and MySQL for some forms, write account statements to the
// binlog as they were sent: CREATE USER ... IDENTIFIED BY 'password' has
// the password in clear in its Query event. Event.MaskedQuery gives a
// Query event's statement with every password, hash and authentication
// string replaced by SecretMask and the rest byte for byte; MaskSecrets
// does the same for any text. Consumers that log or ship statements use
// these; the raw Query stays for those that apply it.
package binlogstream
