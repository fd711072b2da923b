// Command binlog-tail is the reference consumer of binlogstream: it streams
// a MySQL or MariaDB binlog (binlog_format=ROW) to a JSON Lines file that is
// also its checkpoint, exactly once across kills and reruns.
//
// Usage:
//
//	binlog-tail --dsn 'USER@tcp(HOST:PORT)/' [--password-file FILE] --out FILE
//	    [--start oldest|current|FILE:POS] [--stop-at-current]
//	    [--tables PATTERNS] [--snapshot] [--snapshot-readers N]
//	    [--snapshot-chunk-rows N] [--snapshot-keyless refuse|skip]
//	    [--server-id N] [--flavor mysql|mariadb]
//	    [--no-schema-snapshot] [--quiet] [--cpuprofile FILE]
//	binlog-tail --dsn DSN --out FILE --gtid [--failover-to DSN]...
//	    [--start oldest|current|GTID_SET] [--stop-at-current] [...]
//	binlog-tail --binlog-dir DIR --out FILE [--gtid] [--start ...]
//	    [--stop-at-current] [...]
//	binlog-tail --demo
//
// Flags:
//
//   - --dsn: the source server, a go-sql-driver DSN (tcp(HOST:PORT) or
//     unix(PATH)); TLS with ?tls=true|skip-verify|preferred and
//     tls-ca=FILE, tls-cert=FILE, tls-key=FILE (see binlogstream.DSN),
//     used by every connection binlog-tail makes. The user needs
//     REPLICATION SLAVE and BINLOG MONITOR (MariaDB) or REPLICATION CLIENT
//     (MySQL).
//   - --binlog-dir DIR (without --dsn): read the binlog files in DIR
//     instead of a server: a server's binlog directory, a copy of one, or
//     an archive written by mariadb-binlog/mysqlbinlog --raw. The files
//     are read in the order of DIR's *.index file when it has one, else
//     by name; the flavor comes from the files unless --flavor says. The
//     output is the one the server that wrote the files would give,
//     positions and tokens included, with the same exactly-once resume.
//     --start current and --stop-at-current mean the end of the last
//     complete event of the last file present at start (with --gtid, the
//     GTID state there), also when that event is a Rotate naming a file
//     of another name;
//     without --stop-at-current binlog-tail follows the files as they grow
//     (a partly written last event is waited for). A corrupt event (bad
//     checksum, impossible length) stops it with the file and offset.
//     There is no server to take a schema snapshot from: the tables the
//     files create or alter are known from their DDL, others are
//     positional unless the files carry binlog_row_metadata=FULL.
//     With --dsn too, DIR is an archive of the server's binlog files (a
//     backup, or mariadb-binlog --read-from-remote-server --raw output): a
//     position in a file the server has purged is read from DIR up to the
//     first file the server still has, then from the server, exactly once
//     across the switch (--start oldest is the oldest file of either). With
//     --gtid, a GTID set older than the server's purged state is read from
//     DIR and handed over to the server at a file end, between
//     transactions. Without DIR, a resume in a purged file fails (error
//     1236) with a hint to add --binlog-dir.
//   - --binlog-base NAME: the binlog to read when --binlog-dir holds
//     several (a replica's datadir has its relay log too): NAME.index, or
//     the files NAME.NNNNNN.
//   - --tables PATTERNS: write the rows and table lines of these tables
//     only (statement lines stay, for every table): comma-separated
//     schema.table patterns, * and ? matching within a name
//     (app.orders,app.audit_*,*.events; binlogstream.ParseTablePatterns),
//     or backquoted names matched as they are (`app`.`my.table`). Names
//     compare as the server's lower_case_table_names says. When FILE
//     starts empty, a pattern that names no table (or no database) exits
//     1 naming it; a wildcard over an existing database that matches no
//     table yet is a warning, and so is any with --tables-created-later
//     (docs/filtering.md). With --binlog-dir and no --dsn, nothing is
//     checked and names compare as written.
//     The other tables' rows are not even decoded
//     (SyncerConfig.DecodeTable). While the stream moves past them, a
//     progress line carries the position about once a second, and once
//     more where a run stops cleanly (--stop-at-current, SIGTERM), so that
//     a restart after a long stretch of other tables' traffic does not
//     read it again. The schema snapshot covers the patterns' databases when
//     they name fixed ones. Resume a file with the same --tables: a line
//     written under other patterns would not be rewritten (in GTID mode a
//     token taken inside a transaction counts the rows written, and is
//     refused under other patterns).
//   - --snapshot: also read the rows the tables --tables selects (all
//     tables without it) already hold, while streaming, and write one line
//     per row: {"type":"read","schema":S,"table":T,"row":{...},"file":F,
//     "pos":P,"resume":R}. Each table is read in primary-key chunks, each
//     chunk in one short consistent-snapshot transaction (MariaDB; see
//     binlogstream.SnapshotConfig); a row's changes all come after its read
//     line. --stop-at-current also waits for every table to be read.
//     --snapshot-readers N and --snapshot-chunk-rows N set how many chunk
//     reads run at once, on several tables and with N above 1 on one
//     table too (default 1), and the rows per chunk (0: the library's
//     defaults).
//     A selected table with no primary key and no UNIQUE key of NOT NULL
//     columns cannot be read in chunks: by default (--snapshot-keyless
//     refuse) binlog-tail exits 1 at start, before any line, naming every
//     such table and the ways out (--tables leaving them out, or
//     --snapshot-keyless skip); with --snapshot-keyless skip it writes
//     their changes but not their rows, with a warning naming each.
//   - --password-file FILE: the password of every DSN (--dsn,
//     --failover-to) written without one, from FILE's first line; FILE
//     must give group and others no access (chmod 600). Without it the
//     MYSQL_PWD environment variable gives that password. Either keeps it
//     out of ps listings and shell history, where a password in --dsn is
//     seen. No output (errors, warnings, progress, FILE) ever holds a
//     password: DSNs are shown as USER:xxxxx@....
//   - --out: the output file, created with mode 0600 (the umask may remove
//     more): it holds row data. binlog-tail holds an advisory lock (flock)
//     on it for as long as it runs, and a second binlog-tail on the same
//     file exits 1 at once naming it; the kernel drops the lock of a killed
//     process, so a rerun is never blocked. When FILE is not empty,
//     binlog-tail first cuts an incomplete last line (one without a
//     trailing newline, what a kill in the middle of a write leaves), then
//     resumes right after the last complete line from that line's "resume"
//     token; --start is ignored.
//     FILE.schema, beside FILE, is its schema history (the column names
//     of the rows as of each binlog position). A FILE with complete lines
//     whose FILE.schema is missing is refused before anything touches FILE
//     (its partial line included): a history rebuilt then (a new snapshot,
//     or none offline) would change the rows' form halfway through FILE.
//     Restore FILE.schema as it was written with FILE, or move FILE aside
//     and start again. A FILE with no complete line starts afresh with a
//     new FILE.schema.
//   - --start (default current with --dsn, oldest with --binlog-dir
//     alone): where an empty FILE starts: current is SHOW MASTER STATUS,
//     oldest the first file of SHOW BINARY LOGS at offset 4 (offline, the
//     first file of DIR), or FILE:POS (an event boundary outside any
//     statement).
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
//   - --no-schema-snapshot: do not read information_schema; the tables
//     created before the stream then have positional rows unless the
//     server logs binlog_row_metadata=FULL.
//   - --progress-every D (default 1s; 0: never): how often the progress
//     line is logged: level=info msg=progress with at (the position, in
//     GTID mode "gtid SET"), rows, rows_per_s and lag, and while a
//     snapshot runs (or ran this run) snapshot_tables_done of
//     snapshot_tables, snapshot_reads, snapshot_reads_per_s and, from the
//     server's estimate, snapshot_rows_left.
//   - --quiet: log nothing (no progress, info or warning lines). Every
//     line on stderr is otherwise a logrus line (warnings for what a user
//     should look at, info for the rest) but the error that ends a run.
//   - --cpuprofile FILE: write a CPU profile of the run (go tool pprof).
//   - --demo: a self-contained crash-and-resume demo on an in-process fake
//     server (no database needed); prints the story to stdout.
//
// SIGINT and SIGTERM stop promptly, flush and exit 0. Any error prints one
// line "binlog-tail: ..." on stderr (never a password) and exits 1 (2 for
// bad flags). A dropped connection is reconnected by the library with no
// line lost or repeated: for about a minute (its default, enough for a
// server restart with crash recovery), or 3 attempts when --failover-to is
// given.
//
// # Output format
//
// One line per row change, one per Table_map (the table of the rows that
// follow) and one per DDL or other statement; BEGIN, COMMIT, ROLLBACK, XID,
// Format_description and the other events write none. Keys always come in
// this order ("positional" only for a table whose columns are unknown,
// "before" only for updates, "primary_key" and "unknown" only when there
// is one, "gtid" only when the transaction has a GTID):
//
//	{"type":"table","schema":S,"table":T,"source":"binlog|history|unknown","columns":[{"name":N,"type":TY,"charset":C,"nullable":B},...],"primary_key":[N,...],"unknown":WHY,"gtid":G,"file":F,"pos":P,"resume":R}
//	{"type":"insert|update|delete","schema":S,"table":T,"positional":true,"row":{...}|[...],"before":{...}|[...],"gtid":G,"file":F,"pos":P,"resume":R}
//	{"type":"query","schema":S,"query":Q,"gtid":G,"file":F,"pos":P,"resume":R}
//	{"type":"progress","gtid":G,"file":F,"pos":P,"resume":R}
//
// Q is the statement with the secrets of credential statements (the
// password of CREATE USER ... IDENTIFIED BY 'pw', say) replaced by
// '<secret>', the rest as the binlog holds it (binlogstream's
// Event.MaskedQuery).
//
// A progress line (only with --tables) says the stream went past rows of
// other tables up to there; it carries no data.
//
// "row" is the inserted row, the updated row's after image, or the deleted
// row: an object keyed by column name, in the table's column order, as of
// the row's binlog position (binlogstream's Event.Table: the Table_map's
// own names under binlog_row_metadata=FULL, else the schema history). A
// column the row image left out (binlog_row_image MINIMAL or NOBLOB) is
// absent; a NULL is null. Where no schema can be proven (the table line's
// "source" is "unknown" and "unknown" says why) the row is an array of
// every value in column order and the line says "positional":true. The
// table line gives each column's declared type ("int unsigned",
// "varchar(40)", "enum('a','b')"; null where unknown), its charset when
// known, and whether it is nullable. "file" and "pos" are the end of the
// binlog event the line comes from (all rows of one event share them); in
// GTID mode they are informational and, after a failover, those of the new
// server's binlog. "resume" is the binlogstream token for the moment right
// after this line: after the n-th row of an event it is
// Event.ResumeAfterRows(n), which equals Event.Resume for the event's last
// row; a query line's is Event.Resume.
//
// # Schema history
//
// The schema history lives next to the output, in FILE.schema (one
// checksummed JSON record per line: an information_schema snapshot, the
// binlog's DDL statements). The first run against a server reads the
// snapshot (the user then needs SELECT on the streamed tables; see
// --no-schema-snapshot); when it is newer than --start, the binlog in
// between is read once for its DDL (on MariaDB, listed by the server
// with SHOW BINLOG EVENTS). A rerun uses the history as of the
// last line's token, never the live schema. An output file that starts
// over (no complete line) starts a new history. A table whose Table_map
// contradicts the history (a DDL run with sql_log_bin=0) stops the run
// with an error naming the table, position and difference.
//
// # Values
//
// Column values are what the server means (binlogstream's Table.Value),
// in the table's column order:
//
//   - integers, BIT, YEAR: JSON numbers with every digit (UNSIGNED columns
//     as unsigned whenever the table is known, BIGINT UNSIGNED and BIT(64)
//     up to 18446744073709551615: parse them as 64-bit integers, not as
//     doubles); FLOAT and DOUBLE: JSON numbers;
//   - DECIMAL: a string with its exact digits ("12.50");
//   - text (CHAR, VARCHAR, TEXT): a JSON string, decoded to UTF-8 from the
//     column's charset (utf8mb4, latin1, ascii, utf16, utf16le, utf32,
//     ucs2, cp1251 and the other common ones); a charset binlog-tail
//     cannot decode gives {"charset":"...","base64":"..."};
//   - binary strings and BLOBs: a JSON string when the bytes are valid
//     UTF-8, otherwise {"base64":"..."} (standard, padded); BINARY(n) with
//     all its n bytes, trailing 0x00 included;
//   - JSON: its text, as a string (a MySQL partial JSON update's after
//     image holds the whole document, the logged diffs applied to the
//     before image's; when the before image lacks it, binlog_row_image
//     MINIMAL or NOBLOB, binlog-tail stops with an error rather than write
//     a diff as a value); ENUM and SET: the member names ("a",
//     "x,z"; the index or bitmask when the members are unknown);
//   - DATE "2006-01-02", TIME "[-]838:59:59[.f]", DATETIME and TIMESTAMP
//     "2006-01-02 15:04:05[.f]", with exactly the column's fractional
//     digits; zero dates as the server shows them ("0000-00-00"); TIMESTAMP
//     in UTC;
//   - MariaDB's UUID, INET6, INET4: their text ("::ffff:10.0.0.1");
//   - GEOMETRY: {"srid":N,"wkb":"<hex of the OGC well-known binary>"};
//   - NULL: null. A column the row image left out is absent from the row.
//
// Without a known table (a positional row) integers of UNSIGNED columns
// read as signed unless the server logs signedness (binlog_row_metadata
// MINIMAL or FULL), and text is written as its bytes.
//
// The same binlog always gives the same bytes: only "file", "pos" and
// "resume" depend on where the events sit in the binlog.
//
// # Durability
//
// Events are queued (at most 16) to goroutines that format their lines,
// and one writer appends the lines in binlog order through a 256 KiB buffer
// that is flushed when full, every 200 ms (so the file trails an idle
// stream by at most that), and on exit, when the queue is written out and
// the file fsynced. On Linux, in the background while the stream goes
// on, the disk writes of the file are started (sync_file_range) after
// every 16 MiB written and its data flushed to stable storage (fdatasync)
// after every 32 MiB, so the fsync on exit waits for the last of them
// only. A flush that fails ends the run with its error (exit 1), as the
// fsync on exit would. A kill loses at most the queued and buffered
// lines, which the rerun writes again from the last line's token.
//
// Where the file system can (fallocate), the file's disk blocks are
// reserved ahead of the writes, up to 32 MiB at a time, without changing
// its size; what is left of them past the end is given back on exit. A
// killed run leaves them reserved (du shows up to 32 MiB more than the
// file's size) until a later run on the file exits.
//
// # Memory
//
// On Linux, where the kernel gives transparent huge pages only to memory
// that asks for them (mode madvise), binlog-tail asks for them for its
// heap at start: it maps 64 MiB of heap without touching it and advises
// it, so that the heap takes one page fault per 2 MiB it first uses
// instead of 512. GODEBUG=disablethp=1 keeps it from asking. The garbage
// collector runs at GOGC 400 unless GOGC is set.
package main
