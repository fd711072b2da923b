package binlogstream_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestIntegrationPrescanListed: the DDL scan from the server's list of
// statements (SHOW BINLOG EVENTS) finds what a dump of the same binlog
// finds: over two files, in pages of a few events, with names that need
// quoting and statements run with and without a default database.
func TestIntegrationPrescanListed(t *testing.T) {
	mariadb.Require(t)
	t.Parallel()
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE d", "CREATE DATABASE `we``ird; db`", "USE d",
		"CREATE TABLE keep (a INT)", "CREATE TABLE a (x INT)", "CREATE TABLE c (x INT)")
	from := masterPos(t, s)
	s.Exec(t, "USE d", "INSERT INTO keep VALUES (1), (2)", "ALTER TABLE a ADD y INT",
		"USE `we``ird; db`", "CREATE TABLE `t``ä` (a INT)", "INSERT INTO `t``ä` VALUES (1)", "UPDATE d.keep SET a = a + 1")
	s.Exec(t, "FLUSH BINARY LOGS")
	s.Exec(t, "CREATE TABLE d.nodb (x INT)", "CREATE DATABASE n", "CREATE TABLE n.q (x INT)", "DROP DATABASE n")
	s.Exec(t, "USE d", "RENAME TABLE c TO c2", "CREATE TABLE e (x INT)", "INSERT INTO e VALUES (1)", "DROP TABLE e",
		"TRUNCATE TABLE a", "BEGIN", "INSERT INTO keep VALUES (3)", "COMMIT",
		"CREATE TABLE `we``ird; db`.`x y` (x INT)")
	to := masterPos(t, s)
	require.NotEqual(t, from.File, to.File)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src := itSource(t, s).(*binlogstream.SyncerSource)
	snap, err := src.SchemaSnapshot(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, to, snap.Position)
	streamed, err := binlogstream.PrescanStreamed(ctx, src, binlogstream.StartAt(from), snap)
	require.NoError(t, err)
	assert.ElementsMatch(t, [][2]string{{"d", "a"}, {"we`ird; db", "t`ä"}, {"d", "nodb"}, {"n", "q"}, {"d", "c"}, {"d", "c2"},
		{"d", "e"}, {"we`ird; db", "x y"}}, streamed.Tables)
	assert.Equal(t, []string{"n"}, streamed.Databases)
	for _, page := range []int{1, 3, 1000} {
		listed, err := binlogstream.PrescanListed(ctx, src, binlogstream.StartAt(from), snap, page)
		require.NoError(t, err, page)
		assert.Equal(t, streamed, listed, "page %d", page)
	}
	// From the middle of the second file.
	mid := masterPos(t, s)
	s.Exec(t, "ALTER TABLE d.keep ADD b INT")
	snap, err = src.SchemaSnapshot(ctx, nil)
	require.NoError(t, err)
	listed, err := binlogstream.PrescanListed(ctx, src, binlogstream.StartAt(mid), snap, 2)
	require.NoError(t, err)
	assert.Equal(t, [][2]string{{"d", "keep"}}, listed.Tables)

	// DDL sent in latin1: the list has its bytes but not its charset, the
	// dump both; the streamed scan names the table as the server does.
	mid = masterPos(t, s)
	s.Exec(t, "USE d", "SET NAMES latin1", "CREATE TABLE caf\xe9 (x INT)", "SET NAMES utf8mb4")
	snap, err = src.SchemaSnapshot(ctx, nil)
	require.NoError(t, err)
	_, err = binlogstream.PrescanListed(ctx, src, binlogstream.StartAt(mid), snap, 2)
	require.ErrorContains(t, err, "charset other than UTF-8")
	streamed, err = binlogstream.PrescanStreamed(ctx, src, binlogstream.StartAt(mid), snap)
	require.NoError(t, err)
	assert.Equal(t, [][2]string{{"d", "café"}}, streamed.Tables)
}

// TestIntegrationPrescanListedGTID: in GTID mode the list starts at the
// newest binlog file whose Gtid_list the start's set holds and leaves out
// the transactions the set holds, as a dump from the set does: the same
// tables as the streamed scan, with two domains and two files; GTIDs out
// of order in a domain are an error (the scan is then streamed).
func TestIntegrationPrescanListedGTID(t *testing.T) {
	mariadb.Require(t)
	t.Parallel()
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE d", "USE d", "CREATE TABLE keep (a INT)", "CREATE TABLE a (x INT)", "CREATE TABLE b (x INT)",
		"CREATE TABLE untouched (x INT)")
	s.Exec(t, "SET SESSION gtid_domain_id = 1", "CREATE TABLE d.one (x INT)", "INSERT INTO d.one VALUES (1)")
	early := s.GTIDBinlogPos(t)
	s.Exec(t, "USE d", "ALTER TABLE a ADD y INT", "INSERT INTO keep VALUES (1)")
	s.Exec(t, "SET SESSION gtid_domain_id = 1", "ALTER TABLE d.one ADD y INT")
	s.Exec(t, "FLUSH BINARY LOGS")
	mid := s.GTIDBinlogPos(t)
	s.Exec(t, "USE d", "INSERT INTO keep VALUES (2)", "RENAME TABLE b TO b2")
	s.Exec(t, "SET SESSION gtid_domain_id = 1", "USE d", "CREATE TABLE two (x INT)", "INSERT INTO two VALUES (1)")
	s.Exec(t, "USE d", "ALTER TABLE keep COMMENT 'k'")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src := itSource(t, s).(*binlogstream.SyncerSource)
	snap, err := src.SchemaSnapshot(ctx, nil)
	require.NoError(t, err)
	for _, c := range []struct {
		set  string
		want [][2]string
	}{
		{"", [][2]string{{"d", "keep"}, {"d", "a"}, {"d", "b"}, {"d", "untouched"}, {"d", "one"}, {"d", "b2"}, {"d", "two"}}},
		{early, [][2]string{{"d", "a"}, {"d", "one"}, {"d", "b"}, {"d", "b2"}, {"d", "two"}, {"d", "keep"}}},
		{mid, [][2]string{{"d", "b"}, {"d", "b2"}, {"d", "two"}, {"d", "keep"}}},
		{snap.Executed, nil},
	} {
		from, err := binlogstream.StartAtGTID(mysql.MariaDBFlavor, c.set)
		require.NoError(t, err)
		streamed, err := binlogstream.PrescanStreamed(ctx, src, from, snap)
		require.NoError(t, err, c.set)
		assert.ElementsMatch(t, c.want, streamed.Tables, "from %q", c.set)
		for _, page := range []int{1, 4, 1000} {
			listed, err := binlogstream.PrescanListed(ctx, src, from, snap, page)
			require.NoError(t, err, "from %q, page %d", c.set, page)
			assert.Equal(t, streamed, listed, "from %q, page %d", c.set, page)
		}
	}

	// A GTID below its domain's last (gtid_strict_mode off): a dump from
	// a set would start elsewhere than the list assumes.
	s.Exec(t, "SET GLOBAL gtid_strict_mode = 0")
	s.Exec(t, "SET SESSION gtid_seq_no = 2", "CREATE TABLE d.late (x INT)")
	snap, err = src.SchemaSnapshot(ctx, nil)
	require.NoError(t, err)
	from, err := binlogstream.StartAtGTID(mysql.MariaDBFlavor, mid)
	require.NoError(t, err)
	_, err = binlogstream.PrescanListed(ctx, src, from, snap, 1000)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "comes after sequence number")
}

// TestIntegrationListEvents: the streaming SHOW BINLOG EVENTS read gives
// the rows go-mysql's whole result sets give, over two files, in pages of
// 1, 3 and 1000 events, from a position inside the first file to one
// inside the second; a list stopped in the middle of a page leaves its
// connection usable.
func TestIntegrationListEvents(t *testing.T) {
	mariadb.Require(t)
	t.Parallel()
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE d", "USE d", "CREATE TABLE `t``ä` (a INT, b VARCHAR(20))")
	from := masterPos(t, s)
	s.Exec(t, "USE d", "INSERT INTO `t``ä` VALUES (1, 'é'), (2, 'x')", "ALTER TABLE `t``ä` ADD c INT", "UPDATE `t``ä` SET a = a + 1")
	s.Exec(t, "FLUSH BINARY LOGS")
	s.Exec(t, "USE d", "CREATE TABLE u (x INT)", "INSERT INTO u VALUES (1)")
	mid := masterPos(t, s)
	s.Exec(t, "USE d", "INSERT INTO u VALUES (2)", "DROP TABLE u")
	require.NotEqual(t, from.File, mid.File)

	// What go-mysql's Execute lists, cut to [from, mid).
	conn := s.Conn(t, s.ReplUser())
	var want []binlogstream.ListedEvent
	for _, f := range []string{from.File, mid.File} {
		r, err := conn.Execute("SHOW BINLOG EVENTS IN '" + f + "'")
		require.NoError(t, err)
		for i := range r.RowNumber() {
			pos, err := r.GetUint(i, 1)
			require.NoError(t, err)
			if f == from.File && pos < from.Offset || f == mid.File && pos >= mid.Offset {
				continue
			}
			end, err := r.GetUint(i, 4)
			require.NoError(t, err)
			typ, err := r.GetString(i, 2)
			require.NoError(t, err)
			info, err := r.GetString(i, 5)
			require.NoError(t, err)
			want = append(want, binlogstream.ListedEvent{Pos: pos, End: end, Type: typ, Info: strings.Clone(info)})
		}
	}
	require.Greater(t, len(want), 10)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src := itSource(t, s).(*binlogstream.SyncerSource)
	for _, page := range []int{1, 3, 1000} {
		got, err := binlogstream.ListEvents(ctx, src, from, mid, page, 0)
		require.NoError(t, err, "page %d", page)
		require.Equal(t, want, got, "page %d", page)
	}
	for _, stop := range []int{1, 2, len(want) - 1} {
		got, err := binlogstream.ListEvents(ctx, src, from, mid, 1000, stop)
		require.NoError(t, err, "stopped after %d", stop)
		require.Equal(t, want[:stop], got)
	}
}
