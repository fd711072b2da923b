package binlogstream

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseQueryInfo(t *testing.T) {
	for _, c := range []struct{ info, db, query string }{
		{"use `d`; CREATE TABLE t (a INT)", "d", "CREATE TABLE t (a INT)"},
		{"CREATE DATABASE d", "", "CREATE DATABASE d"},
		{"use `we``ird; db`; ALTER TABLE t ADD b INT", "we`ird; db", "ALTER TABLE t ADD b INT"},
		{"use ````; DROP TABLE t", "`", "DROP TABLE t"},
		{"use `tä`; BEGIN", "tä", "BEGIN"},
		{"use `d`;CREATE TABLE t (a INT)", "", "use `d`;CREATE TABLE t (a INT)"}, // not the list's form
		{"use `d", "", "use `d"},
		{"use `d`", "", "use `d`"},
		{"use `d`; ", "d", ""},
		{"", "", ""},
	} {
		db, q := parseQueryInfo(c.info)
		assert.Equal(t, c.db, db, c.info)
		assert.Equal(t, c.query, q, c.info)
	}
}

// TestPrescanNote: listed statements count as the streamed ones do, and a
// DDL statement listed without the database its unqualified table lives
// in is refused (the caller then streams the binlog instead).
func TestPrescanNote(t *testing.T) {
	snap := &SchemaSnapshot{Position: Position{File: "b.000002", Offset: 900}}
	listed := newPrescan(ResumePosition{}, snap)
	streamed := newPrescan(ResumePosition{}, snap)
	for _, s := range []struct{ db, query string }{
		{"", "BEGIN"},
		{"d", "CREATE TABLE `t``1` (a INT)"},
		{"d", "INSERT INTO t VALUES (1)"},
		{"d", "ALTER TABLE e.u ADD b INT"},
		{"", "CREATE DATABASE n"},
		{"d", "RENAME TABLE a TO b, c TO n.c"},
		{"x", "DROP TABLE IF EXISTS y"},
		{"", "ALTER TABLE q.r ADD c INT"},
		{"d", "COMMIT"},
	} {
		info := s.query
		if s.db != "" {
			info = "use `" + s.db + "`; " + s.query
		}
		require.NoError(t, listed.note(info))
		streamed.add(s.db, s.query)
	}
	assert.Equal(t, streamed.SchemaPrescan, listed.SchemaPrescan)
	assert.ElementsMatch(t, [][2]string{{"d", "t`1"}, {"e", "u"}, {"d", "a"}, {"d", "b"}, {"d", "c"}, {"n", "c"}, {"x", "y"}, {"q", "r"}},
		listed.Tables)
	assert.Equal(t, []string{"n"}, listed.Databases)

	for _, q := range []string{"ALTER TABLE t ADD b INT", "DROP TABLE a, e.b", "RENAME TABLE e.a TO b", "CREATE TABLE t (a INT)"} {
		err := newPrescan(ResumePosition{}, snap).note(q)
		require.Error(t, err, q)
		assert.Contains(t, err.Error(), "without its default database")
	}
	for _, q := range []string{"DROP DATABASE d", "CREATE TABLE e.t (a INT)", "INSERT INTO t VALUES (1)", "BEGIN",
		"INSERT INTO t VALUES ('caf\xe9')"} {
		assert.NoError(t, newPrescan(ResumePosition{}, snap).note(q), q)
	}
	// DDL sent in latin1: its names are not known without the event's
	// client charset, so the scan is streamed.
	err := newPrescan(ResumePosition{}, snap).note("use `d`; ALTER TABLE caf\xe9 ADD b INT")
	require.ErrorContains(t, err, "charset other than UTF-8")
}

func TestParseGTIDInfo(t *testing.T) {
	for info, want := range map[string]gtidSeq{
		"GTID 0-1-4":                             {0, 4},
		"BEGIN GTID 0-1-5":                       {0, 5},
		"BEGIN GTID 7-100-12 cid=31":             {7, 12},
		"XA START X'31',X'',1 GTID 2-1-9":        {2, 9},
		"GTID 4294967295-1-18446744073709551615": {4294967295, 18446744073709551615},
	} {
		g, err := parseGTIDInfo(info)
		require.NoError(t, err, info)
		assert.Equal(t, want, g, info)
	}
	for _, info := range []string{"", "BEGIN", "GTID 0-1", "GTID 0-1-x", "GTID -1-1-1", "GTID 4294967296-1-1"} {
		_, err := parseGTIDInfo(info)
		assert.Error(t, err, info)
	}
	seqs, err := gtidSeqs("0-1-36, 1-2-5,0-3-40")
	require.NoError(t, err)
	assert.Equal(t, map[uint32]uint64{0: 40, 1: 5}, seqs)
	seqs, err = gtidSeqs("")
	require.NoError(t, err)
	assert.Empty(t, seqs)
	_, err = gtidSeqs("0-1-2,junk")
	assert.Error(t, err)
}
