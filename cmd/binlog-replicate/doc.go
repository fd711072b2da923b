// Command binlog-replicate copies tables from a MySQL or MariaDB server to
// another one and keeps them up to date from the source's binlog, exactly
// once across kills, restarts and (with --gtid) a failover of the source.
// It is binlogstream's second reference consumer: the pattern a migration
// tool follows.
//
// Usage:
//
//	binlog-replicate --source DSN --target DSN
//	    --tables schema.table,schema.pattern_*
//	    [--gtid [--failover DSN,...]] [--batch N] [--chunk N]
//	    [--checkpoint-interval D] [--heartbeat D] [--server-id N]
//	    [--state-db NAME] [--name NAME] [--stop-at-current]
//	    [--snapshot-only] [--quiet] [--metrics ADDR]
//	    [--source-password-file FILE] [--target-password-file FILE]
//
// Flags:
//
//   - --source DSN, --target DSN: the source server and the target.
//   - --tables PATTERNS: the tables to replicate, comma-separated
//     schema.table patterns (binlogstream.ParseTablePatterns); each must
//     be a base table with a primary key.
//   - --gtid: stream by GTID (survives a failover); a run resumes in the
//     mode it started in.
//   - --failover DSN,...: with --gtid, the servers that may be promoted
//     when the source is lost.
//   - --batch N (default 200): row changes per target transaction,
//     committed at the next source commit.
//   - --chunk N (default 1000): rows per snapshot chunk, one target
//     transaction each.
//   - --checkpoint-interval D (default 1s): commit the checkpoint at least
//     this often while the position moves, through filtered-out traffic
//     too.
//   - --heartbeat D (default 1s): the heartbeat period asked of the source:
//     how soon an idle stream's checkpoint is committed.
//   - --server-id N (default 1013): the replica id of the dump, unique
//     among the source's replicas.
//   - --state-db NAME (default binlogstream): the target database of the
//     checkpoint, the snapshot state and the schema history.
//   - --name NAME (default default): this replication's name in the state
//     tables; one target may hold several.
//   - --stop-at-current: exit once everything the source had written at
//     start-up is applied.
//   - --snapshot-only: exit after the snapshot.
//   - --quiet: log warnings and errors only.
//   - --metrics ADDR: serve Prometheus metrics at http://ADDR/metrics
//     (HOST:PORT; port 0 picks a free one, and the URL is logged) from
//     the start: the lag in seconds and binlog bytes, the row changes
//     handled, the position, reconnects, failovers and the last error.
//     An address that cannot be listened on ends the run at once.
//     docs/metrics.md lists the metrics.
//   - --source-password-file FILE, --target-password-file FILE: the
//     password of the DSNs written without one (--source-password-file
//     also serves --failover), from FILE's first line.
//
// The source user needs REPLICATION SLAVE, BINLOG MONITOR (MySQL:
// REPLICATION CLIENT and RELOAD, for the snapshot's lock) and SELECT; the
// target user needs to create databases and tables and write them. The
// source needs binlog_format=ROW and binlog_row_image=FULL. DSNs are
// go-sql-driver's (tcp or unix, TLS parameters as binlogstream.DSN reads
// them). The password files must be readable by their owner only; a
// password in one stays out of ps and shell history. Errors and logs show
// DSNs with the password masked.
//
// # Snapshot, then stream
//
// The first run copies the selected tables (views and MariaDB's
// system-versioned tables, whose binlog also holds the history rows, are
// refused) in primary-key chunks of --chunk rows, each chunk in its own
// target transaction with the table's progress, from one read transaction
// that sees the source as of one binlog position. On MariaDB
// that position comes without stopping writers: START TRANSACTION WITH
// CONSISTENT SNAPSHOT, then the binlog_snapshot_file/_position status
// variables (and BINLOG_GTID_POS of them). MySQL has no such variables;
// there the shortest lock that gives a consistent position is FLUSH TABLES
// WITH READ LOCK held only around START TRANSACTION WITH CONSISTENT
// SNAPSHOT and SHOW MASTER STATUS (whose Executed_Gtid_Set is the GTID
// position), then UNLOCK TABLES: writers wait for those three statements.
// The tests run the MariaDB path against MariaDB servers; the MySQL path
// has no MySQL server to run against here. A missing target table is
// created from SHOW CREATE TABLE.
//
// Then it streams the binlog from the earliest table's snapshot position
// and applies each row change with a plain INSERT, UPDATE or DELETE by
// primary key, skipping the changes a table's own snapshot already holds
// (file mode: events ending at or before its position; GTID mode:
// transactions in its GTID set).
//
// A kill during the snapshot: the tables copied completely keep their
// position, and the next run takes a new snapshot, at a later position,
// for the rest. The rows of the interrupted table copied before the kill
// are as of the old position, those copied after it as of the new one, so
// the state records which: a table whose primary key is all integer
// columns resumes after the last key it committed, and that key range
// becomes a segment recorded with its position (rows up to key K are as of
// position P). The stream starts at the earliest position of any table or
// segment and applies a change to a row only if the change comes after the
// position of the key range the row's key falls in; an update that moves a
// row from one range to another is a delete where the old key's range
// needs it and an insert where the new key's does. Every row's history
// thus replays exactly once, in binlog order. A key with a string column
// would need the column's collation to compare as the server does, so such
// a table is copied again from the start instead (its partial rows deleted
// in the transaction that records the new position).
//
// # The checkpoint lives in the target
//
// The stream's resume token (Event.Resume) is written to
// STATE_DB.checkpoint in the same target transaction as the row changes it
// covers, and the snapshot's progress to STATE_DB.snapshot in each chunk's
// transaction, so a crash at any moment neither loses nor repeats a change:
// a restart reads the token and resumes right after the last committed
// change. A transaction commits after --batch row changes at the next
// source commit (source transactions are never split unless nothing of
// theirs is pending), and at least every --checkpoint-interval while the
// position moves, rows or not. With Config.ProgressInterval the streamer
// hands the replicator a Progress event when the position moved past rows
// the table filter left undecoded, or the source is idle (on heartbeats,
// every --heartbeat), so the checkpoint keeps up with traffic on other
// tables and a restart after an hour of it does not read that hour again.
//
// The streamer's schema history (the table definitions as of each binlog
// position, which give the row values their meaning under MariaDB's
// default binlog_row_metadata=NO_LOG) is kept in STATE_DB.schema_history
// too, on a connection of its own, so a restart neither takes another
// information_schema snapshot nor reads the binlog up to it again.
//
// A duplicate key on INSERT or an UPDATE or DELETE that finds no row (the
// connection counts found rows, so an update to the same values counts)
// means the target diverged from the source: the run stops with an error
// naming the table and binlog position. Nothing papers over it (no INSERT
// IGNORE, no REPLACE): with an exact checkpoint it never happens.
//
// # Tables and DDL
//
// --tables takes schema.table patterns (binlogstream.ParseTablePatterns);
// the streamer's table filter (SyncerConfig.DecodeTable) leaves the rows
// of other tables undecoded. The table list is fixed by the snapshot: a
// table that matches later is refused with an error. A DDL statement that
// names a replicated table (CREATE, ALTER, DROP, RENAME, TRUNCATE, CREATE
// INDEX...) stops the run with an error naming the statement and its
// position; the rule errs on the side of stopping (a column named like a
// replicated table in the same database counts). Apply the change to the
// target and start again under a new --name.
//
// One replicator runs per --name and --state-db on a target: a second one
// waits a few seconds for the target lock (GET_LOCK, released with the
// first one's connection, a killed one's included) and is refused.
//
// # Exit status
//
// 0 after SIGINT/SIGTERM (the last batch committed), --stop-at-current or
// --snapshot-only; 1 on an error; 2 on a usage error. The last log line
// counts the events delivered, replayed ones dropped at start, Progress
// events, row changes applied and target commits.
package main
