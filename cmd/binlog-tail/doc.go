// Command binlog-tail is the reference consumer of binlogstream: it streams
// a MySQL or MariaDB binlog (binlog_format=ROW) to a JSON Lines file that is
// also its checkpoint, exactly once across kills and reruns.
//
// Usage:
//
//	binlog-tail --dsn 'USER:PASS@tcp(HOST:PORT)/' --out FILE
//	    [--start oldest|current|FILE:POS] [--stop-at-current]
//	    [--server-id N] [--flavor mysql|mariadb] [--quiet] [--cpuprofile FILE]
//	binlog-tail --dsn DSN --out FILE --gtid [--failover-to DSN]...
//	    [--start oldest|current|GTID_SET] [--stop-at-current] [...]
//	binlog-tail --binlog-dir DIR --out FILE [--gtid] [--start ...] [--stop-at-current] [...]
//	binlog-tail --demo
//
// Flags:
//
//   - --dsn: the source server. The user needs REPLICATION SLAVE and
//     BINLOG MONITOR (MariaDB) or REPLICATION CLIENT (MySQL).
//   - --binlog-dir DIR (without --dsn): read the binlog files in DIR
//     instead of a server: a server's binlog directory, a copy of one, or
//     an archive written by mariadb-binlog/mysqlbinlog --raw. The files
//     are read in the order of DIR's *.index file when it has one, else
//     by name; the flavor comes from the files unless --flavor says. The
//     output is the one the server that wrote the files would give,
//     positions and tokens included, with the same exactly-once resume.
//     --start current and --stop-at-current mean the end of the last
//     complete event of the last file (with --gtid, the GTID state there);
//     without --stop-at-current binlog-tail follows the files as they grow
//     (a partly written last event is waited for). A corrupt event (bad
//     checksum, impossible length) stops it with the file and offset.
//     --binlog-base NAME picks the binlog when DIR holds several (a
//     replica's datadir has its relay log too): NAME.index, or the files
//     NAME.NNNNNN.
//     With --dsn too, DIR is an archive of the server's binlog files (a
//     backup, or mariadb-binlog --read-from-remote-server --raw output): a
//     position in a file the server has purged is read from DIR up to the
//     first file the server still has, then from the server, exactly once
//     across the switch (--start oldest is the oldest file of either). With
//     --gtid, a GTID set older than the server's purged state is read from
//     DIR and handed over to the server at a file end, between
//     transactions. Without DIR, a resume in a purged file fails (error
//     1236) with a hint to add --binlog-dir.
//   - --out: the output file. When it is not empty, binlog-tail first cuts
//     an incomplete last line (one without a trailing newline, what a kill
//     in the middle of a write leaves), then resumes right after the last
//     complete line from that line's "resume" token; --start is ignored.
//   - --start (default current): where an empty FILE starts: current is
//     SHOW MASTER STATUS, oldest the first file of SHOW BINARY LOGS at
//     offset 4, or FILE:POS (an event boundary outside any statement).
//     A run killed before it wrote its first line starts again from
//     --start, so "current" then means the position at the rerun.
//   - --stop-at-current: read SHOW MASTER STATUS at startup and exit 0 once
//     every event up to that position is written (at once when there is
//     nothing to do).
//   - --gtid: stream in GTID mode (MariaDB; MySQL with gtid_mode=ON). The
//     resume tokens are then GTID positions (the executed set plus how much
//     of the transaction in flight was written), the same on every server
//     of the topology. --start current is the server's executed set
//     (@@gtid_binlog_pos on MariaDB, @@gtid_executed on MySQL), oldest the
//     empty set (every transaction the server still has; a server that
//     purged some answers error 1236, reported as such), or a GTID set
//     (stream every transaction not in it). --stop-at-current stops once
//     the executed set read at startup is written. A FILE written in one
//     mode is refused in the other.
//   - --failover-to DSN (repeatable; needs --gtid): servers the stream may
//     move to when --dsn stays unreachable (3 reconnects, about a second),
//     tried in the order given, with the same --server-id and flavor. A
//     candidate is streamed from only if it proves it holds everything
//     already written: read_only=OFF, a binlog (log_bin=ON), and an executed
//     set containing every transaction written to FILE and the one in
//     flight (and, with --stop-at-current, the stop set). Refused candidates
//     are logged; after 5 rounds one second apart without a valid one,
//     binlog-tail exits 1 with every refusal in its error line. Positions
//     after a failover stay exact: the transaction in flight is replayed by
//     the new server and the rows already written are skipped. A rerun
//     connects to --dsn first: point it at the new primary.
//   - --server-id (default 4344916, "BLT" in ASCII): the replica id of the
//     dump. The server keeps one dump per id, so two binlog-tails on one
//     server (or a binlog-tail and a replica) need different ids.
//   - --flavor: mysql or mariadb; by default detected from the server
//     version ("MariaDB" in it).
//   - --quiet: no progress line (about once a second: position, rows/s and
//     lag) and no reconnect warnings on stderr.
//   - --cpuprofile FILE: write a CPU profile of the run (go tool pprof).
//   - --demo: a self-contained crash-and-resume demo on an in-process fake
//     server (no database needed); prints the story to stdout.
//
// SIGINT and SIGTERM stop promptly, flush and exit 0. Any error prints one
// line "binlog-tail: ..." on stderr (never a password) and exits 1 (2 for
// bad flags). A dropped connection is reconnected by the library (10
// attempts with backoff; 3 when --failover-to is given) with no line lost or
// repeated.
//
// # Output format
//
// One line per row change and one per DDL or other statement; BEGIN,
// COMMIT, ROLLBACK, XID, Table_map, Format_description and the other events
// write none. Keys always come in this order ("before" only for updates,
// "gtid" only when the transaction has a GTID):
//
//	{"type":"insert|update|delete","schema":S,"table":T,"row":[...],"before":[...],"gtid":G,"file":F,"pos":P,"resume":R}
//	{"type":"query","schema":S,"query":Q,"gtid":G,"file":F,"pos":P,"resume":R}
//
// "row" is the inserted row, the updated row's after image, or the deleted
// row. "file" and "pos" are the end of the binlog event the line comes from
// (all rows of one event share them); in GTID mode they are informational
// and, after a failover, those of the new server's binlog. "resume" is the binlogstream token
// for the moment right after this line: after the n-th row of an event it
// is Event.ResumeAfterRows(n), which equals Event.Resume for the event's last
// row; a query line's is Event.Resume.
//
// Column values, in the table's column order:
//
//   - integers (also BIT, YEAR, and ENUM/SET as their index/bitmask) and
//     floats: JSON numbers. UNSIGNED columns read as unsigned only when the
//     server logs signedness (binlog_row_metadata MINIMAL or FULL);
//   - DECIMAL: a string ("12.50");
//   - NULL: null (also a column a MINIMAL/NOBLOB row image left out);
//   - strings, blobs, JSON: a JSON string when the bytes are valid UTF-8
//     (lossless), otherwise {"base64":"..."} with standard padded base64;
//   - DATE, TIME, DATETIME, TIMESTAMP: strings as "2006-01-02 15:04:05[.ffffff]",
//     TIMESTAMP rendered in UTC.
//
// The same binlog always gives the same bytes: only "file", "pos" and
// "resume" depend on where the events sit in the binlog.
//
// # Durability
//
// Events are queued (at most 64) to goroutines that format their lines,
// and one writer appends the lines in binlog order through a 64 KiB buffer
// that is flushed when full, every 200 ms (so the file trails an idle
// stream by at most that), and on exit, when the queue is written out and
// the file fsynced. A kill loses at most the queued and buffered lines,
// which the rerun writes again from the last line's token.
package main
