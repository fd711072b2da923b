// Package mariadb starts throwaway MariaDB servers for tests: single
// servers and GTID primary/replica pairs on 127.0.0.1, with row binlogs,
// GTID strict mode and log_slave_updates.
//
// # Skipping and requiring
//
// Every Start* calls Require, which skips the test when mariadbd or
// mariadb-install-db cannot be found. Set BINLOGSTREAM_REQUIRE_MARIADB=1 (any
// value but "" and "0") to turn that skip into a failure, as CI should.
//
// # Files and processes
//
// All files of one test process live under one directory,
// $TMPDIR/binlogstream-mariadb-<pid> (BINLOGSTREAM_MARIADB_DIR replaces
// $TMPDIR, e.g. with a tmpfs; /tmp does when the path is too long for a unix
// socket): a template datadir made once by mariadb-install-db,
// and one directory per server holding a cp -a copy of it, its socket and
// its logs. A server's directory is removed by the test's Cleanup, even when
// the test fails (the tail of its error log is logged first on failure).
//
// The template cannot be removed at process exit by a library. Two things keep
// it from leaking: the directory holds a file that its process keeps
// flock'ed, and the first Start of every later test process removes any such
// directory whose lock is free (its process is gone). A package with a
// TestMain can also call Cleanup after m.Run to remove it at once:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		mariadb.Cleanup()
//		os.Exit(code)
//	}
//
// On Linux each mariadbd gets SIGKILL when the test process dies (parent
// death signal), so a test binary killed by -timeout leaves no servers behind.
//
// # Accounts
//
// root has no password and bypasses read_only (it holds READ_ONLY ADMIN);
// the helpers' own SQL runs as root over the unix socket. ReplUser is a
// non-root account for streaming (REPLICATION SLAVE, BINLOG MONITOR, SLAVE
// MONITOR, SELECT); AppUser can write data but obeys read_only. The accounts
// are created with sql_log_bin=0, so a fresh server's binlog holds no GTIDs.
package mariadb
