// Command binlog-replicate copies tables from a MySQL or MariaDB server to
// another one and keeps them up to date from the source's binlog, exactly
// once across kills, restarts and (with --gtid) a failover of the source.
// It is the second reference consumer of binlogstream, small enough to
// read in one sitting: the pattern a migration tool copies.
//
// Usage:
//
//	binlog-replicate --source DSN --target DSN --tables schema.table,schema.pattern_*
//	    [--gtid [--failover DSN,...]] [--batch N] [--chunk N]
//	    [--checkpoint-interval D] [--heartbeat D] [--server-id N]
//	    [--state-db NAME] [--name NAME] [--stop-at-current] [--snapshot-only] [--quiet]
//
// The source user needs REPLICATION SLAVE, BINLOG MONITOR (MySQL:
// REPLICATION CLIENT and RELOAD, for the snapshot's lock) and SELECT; the
// target user needs to create databases and tables and write them. The
// source needs binlog_format=ROW and binlog_row_image=FULL.
//
// # Snapshot, then stream
//
// The first run copies the selected tables (those --tables matches, each
// with a primary key) in primary-key chunks of --chunk rows, each chunk in
// its own target transaction with the table's progress, from one read
// transaction that sees the source as of one binlog position. On MariaDB
// that position comes without stopping writers: START TRANSACTION WITH
// CONSISTENT SNAPSHOT, then the binlog_snapshot_file/_position status
// variables (and BINLOG_GTID_POS of them). MySQL has no such variables;
// there the shortest lock that gives a consistent position is FLUSH TABLES
// WITH READ LOCK held only around START TRANSACTION WITH CONSISTENT
// SNAPSHOT and SHOW MASTER STATUS (whose Executed_Gtid_Set is the GTID
// position), then UNLOCK TABLES: writers wait for those three statements.
// A missing target table is created from SHOW CREATE TABLE.
//
// Then it streams the binlog from the earliest table's snapshot position
// and applies each row change with a plain INSERT, UPDATE or DELETE by
// primary key, skipping the changes a table's own snapshot already holds
// (file mode: events ending at or before its position; GTID mode:
// transactions in its GTID set).
//
// A kill during the snapshot: the tables copied completely keep their
// position. The table being copied is copied again, from the start, from a
// new snapshot at a later position; its partial rows are deleted in the
// transaction that records the new position. Resuming it from its last
// chunk instead would leave it with rows as of two positions (the chunks
// before the kill as of the first, the rest as of the second), and a
// change between the two would then have to be applied to some of its rows
// and not others, by comparing primary keys in the server's collation
// order. Per-table positions keep the rule simple and provable: every row
// of a table is as of that table's position, and every change after it is
// applied once, in binlog order, so each row's history replays exactly.
// The cost is the copy of at most one table again per kill.
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
// # Exit status
//
// 0 after SIGINT/SIGTERM (the last batch committed), --stop-at-current or
// --snapshot-only; 1 on an error; 2 on a usage error. The last log line
// counts the events delivered, replayed ones dropped at start, Progress
// events, row changes applied and target commits.
package main
