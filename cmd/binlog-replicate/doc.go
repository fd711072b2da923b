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
//	    [--gtid [--failover DSN,...]] [--batch N] [--chunk N] [--snapshot-readers N]
//	    [--checkpoint-interval D] [--heartbeat D] [--server-id N]
//	    [--state-db NAME] [--name NAME] [--stop-at-current]
//	    [--snapshot-only] [--quiet] [--metrics ADDR]
//	    [--verify | --verify-only] [--repair] [--verify-report FILE]
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
//   - --chunk N (default 1000): rows per snapshot chunk: one short read
//     on the source, one target transaction.
//   - --snapshot-readers N (default 1): chunk reads at once, one source
//     connection each.
//   - --checkpoint-interval D (default 1s): commit the checkpoint at least
//     this often while the position moves, through filtered-out traffic
//     too.
//   - --heartbeat D (default 1s): the heartbeat period asked of the source:
//     how soon an idle stream's checkpoint is committed.
//   - --server-id N (default 1013): the replica id of the dump, unique
//     among the source's replicas.
//   - --state-db NAME (default binlogstream): the target database of the
//     checkpoint, the table list and the schema history.
//   - --name NAME (default default): this replication's name in the state
//     tables; one target may hold several.
//   - --stop-at-current: exit once everything the source had written at
//     start-up is applied.
//   - --snapshot-only: exit once the snapshot is read (the stream is then
//     past the position it started from); a later run without it streams
//     on from there.
//   - --verify: verify every table once while replicating (after the
//     snapshot): each key chunk is read from the source at a binlog
//     position and from the target when the applier has applied exactly
//     up to it, and the two are compared byte for byte
//     (docs/verify.md). With --stop-at-current the run stops once the
//     verification is done.
//   - --verify-only: verify without applying anything; the target must
//     have applied everything the source has (its checkpoint is the
//     source's position), and neither may be written meanwhile.
//   - --repair: with --verify or --verify-only, rewrite each differing
//     row from the source in the applier's transaction, then verify its
//     chunk again.
//   - --verify-report FILE: the differences, one JSON line each, then a
//     summary line (default: stderr). A file an interrupted run left is
//     continued, a difference already in it not written again.
//   - --quiet: log warnings and errors only.
//   - --metrics ADDR: serve Prometheus metrics at http://ADDR/metrics
//     (HOST:PORT; port 0 picks a free one, and the URL is logged) from
//     the start: the lag in seconds and binlog bytes, the row changes
//     handled, the snapshot's rows and tables left, the position,
//     reconnects, failovers and the last error.
//     An address that cannot be listened on ends the run at once.
//     docs/metrics.md lists the metrics.
//   - --source-password-file FILE, --target-password-file FILE: the
//     password of the DSNs written without one (--source-password-file
//     also serves --failover), from FILE's first line.
//
// The source user needs REPLICATION SLAVE, BINLOG MONITOR (MySQL:
// REPLICATION CLIENT) and SELECT; no lock is taken; the
// target user needs to create databases and tables and write them. The
// source needs binlog_format=ROW and binlog_row_image=FULL. DSNs are
// go-sql-driver's (tcp or unix, TLS parameters as binlogstream.DSN reads
// them). The password files must be readable by their owner only; a
// password in one stays out of ps and shell history. Errors and logs show
// DSNs with the password masked.
//
// # Snapshot while streaming
//
// The first run records the source's current position (GTID mode: its
// executed GTID set), then the tables --tables selects (views and
// MariaDB's system-versioned tables, whose binlog also holds the history
// rows, are refused), creates the missing ones on the target from SHOW
// CREATE TABLE, and requires them empty. It then streams from that
// position with the library's snapshot (binlogstream.SnapshotConfig, see
// docs/snapshot.md): each table is read in primary-key chunks of --chunk
// rows, each chunk one short read on its own source connection
// (--snapshot-readers at once), and its rows arrive in the stream as
// SnapshotRead events at the binlog position they are exact at. No read
// transaction lives longer than one chunk, so the source's purge is never
// held back by the copy.
//
// A snapshot row is an INSERT into the target; a row change is an INSERT,
// UPDATE or DELETE by primary key. The library delivers each key's read
// before any change to it and holds back the changes of keys not yet read,
// so every change applies to the row it finds. A chunk's rows, and the
// checkpoint token after its last row, are one target transaction.
//
// The token records the snapshot's progress (which tables are done, each
// table's last key delivered, where inside the chunk it stands), so a kill
// at any moment, inside a chunk included, resumes the snapshot exactly
// where the checkpoint stands, whatever the key's type; the stream goes on
// beside it. In GTID mode the token survives a failover of the source, the
// snapshot included.
//
// Targets written by earlier versions, whose snapshot kept a binlog
// position per table in STATE_DB.snapshot, continue when their checkpoint
// is past every one of those positions and are refused otherwise.
//
// # The checkpoint lives in the target
//
// The stream's resume token (Event.Resume) is written to
// STATE_DB.checkpoint in the same target transaction as the rows and row
// changes it covers, the snapshot's progress included, so a crash at any
// moment neither loses nor repeats a row or a change:
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
// of other tables undecoded. The table list is fixed by the first run
// (STATE_DB.tables): a table that matches later is refused with an error. A DDL statement that
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
// --snapshot-only; with --verify --stop-at-current or --verify-only, 0 when
// every table was found identical or repaired and 3 when differences were
// found and left; 1 on an error; 2 on a usage error. The last log line
// counts the events delivered, replayed ones dropped at start, Progress
// events, row changes applied and target commits.
package main
