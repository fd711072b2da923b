// Package binlogstream streams a MySQL or MariaDB binary log and can be
// stopped, crashed or reconnected at any moment and resumed with every event
// delivered exactly once.
//
// # Two positions
//
// A BinlogStreamer tracks two positions, kept together in a ResumePosition:
//
//   - Streamed is the end of the last event every listener acknowledged
//     (returned nil for). Nothing at or before Streamed is delivered again,
//     by this streamer or by one resumed from the position.
//   - Safe is the last statement boundary at or before Streamed: a place
//     where a new dump can start and every following event decodes. Row
//     events are decoded with the Table_map events written before them in
//     the same statement, and go-mysql forgets its table maps at the end of
//     each statement, so a dump that starts between a Table_map and the
//     statement's last rows event (the one with STMT_END_F) fails with
//     "invalid table id N, no corresponding table map event". That is how
//     ghostferry and gh-ost broke when they resumed from the last streamed
//     position.
//
// Safe points are statement boundaries, not transaction boundaries: in file
// mode that is all decoding needs, and it keeps the replay after a crash
// down to the in-flight statement instead of the in-flight transaction
// (which can be millions of rows). The transaction open at the safe point,
// and its GTID, are part of the ResumePosition, so replayed events still
// carry it.
//
// # The resume contract
//
// Every Event carries Resume, the position to persist once that event is
// applied. A streamer started from a persisted position:
//
//  1. opens a dump at Safe;
//  2. drops the replayed events that end at or before Streamed, and, when
//     Rows is n > 0, the first n row changes of the event that starts at
//     Streamed (see Event.ResumeAfterRows for row-granular checkpoints);
//  3. delivers everything after that, in binlog order.
//
// So if a consumer persists Resume in the same transaction as the effects
// of the event (or after them), a crash at any moment, followed by a resume
// from the last persisted position, delivers every event exactly once. A
// position can never claim more than was applied, because it is handed out
// with the event it covers.
//
// If the replayed binlog is not the one the position was taken from (an
// event crosses Streamed, or the partly delivered event is not a rows event
// with more rows than were delivered), the streamer stops with an error
// matching ErrResumeMismatch rather than guess.
//
// A listener error stops Run with a *ListenerError; that event does not
// count as streamed. Cancelling Run's context is a graceful stop: the event
// being delivered finishes with a listener context that is cancelled only
// Config.StopGrace later (or by Close), and Run reports a listener failure
// rather than the cancellation (see Listener). A dropped connection is reconnected by the streamer
// itself, from its own safe point, with the same dropping rule (go-mysql's
// own retry is turned off), at most MaxReconnectAttempts times in a row
// with exponential backoff, then Run returns a *ReconnectError. Server
// refusals (a purged binlog: error 1236) and decode errors are not retried.
//
// Positions are tracked with 64-bit offsets: the event header's LogPos
// gives the low 32 bits and the sizes of the events before it the rest (and
// all of it when a server sends LogPos 0, as MariaDB 11.4+ may), so a file
// past 4 GiB is followed exactly. A dump cannot be requested past 4 GiB in
// file mode (COM_BINLOG_DUMP's offset is 32 bits), so resuming there fails
// with ErrOffsetTooLarge instead of wrapping.
//
// A MySQL Transaction_payload event (binlog_transaction_compression) is
// delivered as its inner events, one by one. They share the payload's
// binlog position, so a ResumePosition inside one counts the inner events
// delivered (Inner) and then the row changes of the next one (Rows).
//
// GTID mode (StartAtGTID) keeps the same contract with positions that are
// valid on every server of a replication topology; see ResumePosition and
// FailoverConfig.
//
// # The table of each row
//
// Event.Table describes the table of every Table_map and rows event as of
// that event's binlog position: schema, name, and per column the name,
// the declared type ("int unsigned", "varchar(40)", "decimal(10,2)",
// "enum('a','b')"), charset and collation, ENUM/SET members, nullability,
// and the primary key. Every event of one table version shares one
// *Table. It comes from, in order:
//
//   - the Table_map itself, when the server logs column names
//     (binlog_row_metadata=FULL, MySQL 8.0.1+ and MariaDB 10.5+): exact,
//     Source SchemaFromBinlog;
//   - otherwise (MINIMAL, or NO_LOG, MariaDB 10.11's default) the schema
//     history, Source SchemaFromHistory: a snapshot of information_schema
//     placed at a binlog position (SchemaConfig.Snapshot), advanced by
//     every DDL statement of the binlog in binlog order (CREATE, ALTER,
//     DROP, RENAME, TRUNCATE TABLE, CREATE TABLE ... LIKE, MariaDB's CREATE
//     OR REPLACE, CREATE/ALTER/DROP DATABASE, the statement's default
//     database), parsed with the TiDB parser go-mysql depends on. A table
//     created in the streamed binlog is known from its CREATE without a
//     snapshot. A snapshot newer than the stream's start is valid from the
//     start for the tables no DDL touches in between (the binlog in
//     between is read once to find out);
//   - nothing: Source SchemaUnknown, no names, Table.Unknown says why, and
//     the columns carry what the Table_map does (types, nullability, and
//     signedness and charsets under MINIMAL). Values stay positional.
//     This is the case for a DDL statement the parser cannot read
//     (automatic SYSTEM_TIME partitioning, a COLLATE of an unknown
//     charset, ...): its tables become unknown rather than stale. MariaDB
//     and MySQL 8 syntax the TiDB parser does not know but whose columns
//     are known is read: COMPRESSED columns (whose values the decoder
//     uncompresses), UUID, INET6 and INET4, the spatial types,
//     INVISIBLE, PERSISTENT, IGNORED indexes, DEFAULT (expression), ALTER
//     ONLINE, WAIT and NOWAIT, ALTER TABLE IF EXISTS, ALGORITHM=NOCOPY,
//     ENCRYPTED, collations the parser lacks (NO PAD, UCA 14.0.0), and
//     system versioning (the implicit row_start and row_end columns end
//     every row image; information_schema leaves them out, the snapshot
//     adds them).
//
// Every Table_map is checked against the history: column count, each
// column's type code and the metadata its declared type fixes (DECIMAL
// precision and scale, fractional digits, BIT length, BLOB size, string
// lengths where the charset is known), and under MINIMAL signedness and
// charset. A mismatch means the table changed without the binlog saying
// so (SET sql_log_bin=0, a restored backup, a lost history record, a
// token from another topology): Run stops with a *SchemaMismatchError
// naming the table, position and difference, and no row of that
// Table_map is delivered. A column renamed with the same type and count is
// the one change such a check cannot see; FULL metadata has no such gap.
//
// The history is persisted through SchemaConfig.Store (NewFileSchemaStore:
// one checksummed line per record, fsynced): a DDL statement's record is
// durable before its event is delivered, and a record already stored is
// not stored again, so a crash between the two neither loses nor repeats
// it. A streamer started from a token rebuilds the history as of that
// token (the newest snapshot at or before it, then the DDL records up to
// it; in GTID mode by GTID, so after a failover too) and never reads the
// live schema for a position in the past. Without a Store the history
// lives as long as the streamer.
//
// # Events and memory
//
// Listeners run on Run's goroutine, one event at a time, while go-mysql
// reads ahead on its own goroutine and rows events are decoded on a pool of
// workers, several at once (SyncerConfig.DecodeWorkers, one per core), all
// within SyncerConfig.EventCacheCount events and EventCacheBytes of binlog;
// events still reach the listeners in binlog order. SyncerConfig.DecodeTable
// leaves the rows of unwanted tables undecoded and undelivered; with
// Config.ProgressInterval the listeners still hear of the position at
// least that often while it moves past them (or stays idle): a *Progress
// event carrying Resume, so a consumer's checkpoint does not fall behind a
// long stretch of traffic it filtered out. Each listener gets the Event as a value: its
// own copy to keep as long as it likes, passed without an allocation per
// event (the go-mysql BinlogEvent it points to is shared and never changed
// after delivery).
//
// Rows are decoded by this package's decoder (DecodeRows), not go-mysql's:
// RowsEvent.Rows holds the values go-mysql's decoder gives, of the same Go
// types and with the same text (a differential test and a fuzzer hold it
// to that for every column type), made without fmt and with a few
// allocations per event instead of several per row. Strings and byte
// slices share the event's bytes, as go-mysql's do: they stay valid and
// unchanged as long as they are referenced. Tables with a JSON column,
// MySQL partial JSON updates and the go-mysql settings ParseTime and
// UseDecimal (SyncerConfig.Tune) are decoded by go-mysql's decoder.
//
// # Sources
//
// SyncerSource streams from a server; DirSource reads the server's binlog
// files from a directory and serves them as the server's dump would, so
// positions and tokens are the same and a token taken on one resumes on
// the other; ArchiveSource reads an archive of binlog files for what the
// server has purged, then the server. Tests use testhelpers.FakeSource.
//
// With MariaDB the SyncerSource asks for Annotate_rows events, which the
// server otherwise leaves out of a dump; listeners get them, and positions
// stay countable on servers that send LogPos 0.
//
// # Secrets in statements
//
// MariaDB, and MySQL for some forms, write account statements to the
// binlog as they were sent: CREATE USER ... IDENTIFIED BY 'password' has
// the password in clear in its Query event. Event.MaskedQuery gives a
// Query event's statement with every password, hash and authentication
// string (CREATE/ALTER USER, GRANT, SET PASSWORD, server OPTIONS, CHANGE
// MASTER, FEDERATED CONNECTION URLs) replaced by SecretMask and the rest
// byte for byte; MaskSecrets does the same for any text. Other statements
// come back as they are, after a look at their first keyword. Consumers
// that log or write statements elsewhere use these; the raw Query stays
// for those that apply it.
package binlogstream
