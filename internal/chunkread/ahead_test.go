package chunkread_test

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/internal/chunkread"
	"github.com/binlogstream/binlogstream/internal/schema"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestReadsSentAhead: a table's chunks sent ahead, each chained after
// the one before, are all answered by the server before the first answer
// is read, and read the same rows at the same position as reads
// one by one from each chunk's last key, for a key of one integer and a
// composite key of signed and unsigned integers. A chained read whose
// bound the session no longer holds fails with ErrChainBroken, as does
// the chained read after it, and an explicit read then starts a new
// chain; a chained read after a read the server refused fails as it did.
func TestReadsSentAhead(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE d", "USE d",
		"CREATE TABLE one (id BIGINT PRIMARY KEY, v VARCHAR(20) NOT NULL)",
		"INSERT INTO one SELECT CAST(seq AS SIGNED) * 3 - 4000, CONCAT('v', seq) FROM seq_1_to_2500",
		"CREATE TABLE two (a TINYINT NOT NULL, b BIGINT UNSIGNED NOT NULL, v INT, PRIMARY KEY (a, b))",
		"INSERT INTO two SELECT CAST(seq % 7 AS SIGNED) - 3, 18446744073709551615 - seq, seq FROM seq_1_to_2500",
		"CREATE TABLE txt (k VARCHAR(10) PRIMARY KEY)")
	p := startTurnProxy(t, s.Addr())
	one, err := chunkread.NewTable("d", "one", []schema.Column{{Name: "id", DataType: "bigint"}, {Name: "v", DataType: "varchar"}},
		[]string{"id"}, "PRIMARY")
	require.NoError(t, err)
	two, err := chunkread.NewTable("d", "two", []schema.Column{{Name: "a", DataType: "tinyint"},
		{Name: "b", DataType: "bigint", Unsigned: true}, {Name: "v", DataType: "int"}}, []string{"a", "b"}, "PRIMARY")
	require.NoError(t, err)
	txt, err := chunkread.NewTable("d", "txt", []schema.Column{{Name: "k", DataType: "varchar", Charset: "latin1", Collation: "latin1_swedish_ci"}},
		[]string{"k"}, "PRIMARY")
	require.NoError(t, err)

	ahead, err := chunkread.New(p.connect(t, s), chunkread.Snapshot)
	require.NoError(t, err)
	steps, err := chunkread.New(p.connect(t, s), chunkread.Snapshot)
	require.NoError(t, err)
	require.True(t, ahead.Ahead(one))
	require.True(t, ahead.Ahead(two))
	require.False(t, ahead.Ahead(txt), "a text key is not carried over")

	for _, tbl := range []*chunkread.Table{one, two} {
		t.Run(tbl.Name, func(t *testing.T) {
			const limit = 700 // 2,500 rows: three full chunks, one of 400, one empty
			require.NoError(t, ahead.Send(tbl, chunkread.Range{Limit: limit}, false))
			for range 4 {
				require.NoError(t, ahead.Send(tbl, chunkread.Range{Limit: limit}, true))
			}
			require.Equal(t, 5, ahead.Sent())
			answered := p.settled()
			var got []*chunkread.Chunk
			for range 5 {
				c, err := ahead.Receive()
				require.NoError(t, err)
				got = append(got, c)
			}
			require.Equal(t, answered, p.settled(), "the server answered the five reads before the first was received")
			var after []any
			rows := 0
			for i, c := range got {
				require.Equal(t, after, c.After, "chunk %d starts after the one before", i)
				want, err := steps.Read(tbl, chunkread.Range{After: after, Limit: limit})
				require.NoError(t, err)
				require.Equal(t, want.Rows, c.Rows, "chunk %d", i)
				require.NotEmpty(t, c.At.File)
				require.Equal(t, want.At, c.At)
				rows += len(c.Rows)
				if n := len(c.Rows); n > 0 {
					after = nil
					for _, j := range tbl.Key {
						after = append(after, c.Rows[n-1][j])
					}
				}
			}
			require.Equal(t, 2500, rows)
			require.Len(t, got[3].Rows, 400)
			require.Empty(t, got[4].Rows)
		})
	}

	// The negative control: the session's bound moved under the chain.
	require.NoError(t, ahead.Send(one, chunkread.Range{Limit: 100}, false))
	c, err := ahead.Receive()
	require.NoError(t, err)
	require.Len(t, c.Rows, 100)
	_, err = ahead.Conn().Execute("SET @bls_hi0 = 0")
	require.NoError(t, err)
	require.NoError(t, ahead.Send(one, chunkread.Range{Limit: 100}, true))
	require.NoError(t, ahead.Send(one, chunkread.Range{Limit: 100}, true))
	_, err = ahead.Receive()
	require.ErrorIs(t, err, chunkread.ErrChainBroken, "a read from another bound is refused")
	_, err = ahead.Receive()
	require.ErrorIs(t, err, chunkread.ErrChainBroken, "and the read chained after it")
	require.NoError(t, ahead.Send(one, chunkread.Range{After: []any{int64(-3997)}, Limit: 100}, false))
	require.NoError(t, ahead.Send(one, chunkread.Range{Limit: 100}, true))
	c, err = ahead.Receive()
	require.NoError(t, err)
	require.Equal(t, int64(-3994), c.Rows[0][0])
	c, err = ahead.Receive()
	require.NoError(t, err)
	require.Equal(t, []any{int64(-3997 + 300)}, c.After)
	require.Equal(t, int64(-3997+303), c.Rows[0][0])

	// A refused read, and the read chained after it.
	gone, err := chunkread.NewTable("d", "gone", one.Columns, []string{"id"}, "PRIMARY")
	require.NoError(t, err)
	require.NoError(t, ahead.Send(gone, chunkread.Range{Limit: 100}, false))
	require.NoError(t, ahead.Send(gone, chunkread.Range{Limit: 100}, true))
	var me *mysql.MyError
	for range 2 {
		_, err = ahead.Receive()
		require.ErrorAs(t, err, &me)
		require.Equal(t, uint16(mysql.ER_NO_SUCH_TABLE), me.Code)
	}
	require.Error(t, ahead.Send(one, chunkread.Range{Limit: 100}, true), "a chained read must follow a read of its table")
	c, err = ahead.Read(one, chunkread.Range{Limit: 10})
	require.NoError(t, err, "the connection is in step")
	require.Len(t, c.Rows, 10)
}

// TestReadsSentAheadRefusedPrepare: through a proxy that refuses prepared
// statements (it turns each COM_STMT_PREPARE into a command the server
// does not know), a read sent ahead fails with ErrChainBroken, the
// connection stays in step, Ahead turns false, and the range reads in
// the text protocol with the same rows.
func TestReadsSentAheadRefusedPrepare(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE d", "USE d", "CREATE TABLE one (id BIGINT PRIMARY KEY, v VARCHAR(20) NOT NULL)",
		"INSERT INTO one SELECT seq, CONCAT('v', seq) FROM seq_1_to_300")
	one, err := chunkread.NewTable("d", "one", []schema.Column{{Name: "id", DataType: "bigint"}, {Name: "v", DataType: "varchar"}},
		[]string{"id"}, "PRIMARY")
	require.NoError(t, err)
	p := startTurnProxy(t, s.Addr())
	p.refusePrepare = true
	rd, err := chunkread.New(p.connect(t, s), chunkread.Snapshot)
	require.NoError(t, err)
	require.True(t, rd.Ahead(one))
	require.NoError(t, rd.Send(one, chunkread.Range{Limit: 100}, false))
	require.NoError(t, rd.Send(one, chunkread.Range{Limit: 100}, true))
	for range 2 {
		_, err = rd.Receive()
		require.ErrorIs(t, err, chunkread.ErrChainBroken)
	}
	require.False(t, rd.Ahead(one), "a connection that cannot prepare does not send reads ahead")
	c, err := rd.Read(one, chunkread.Range{Limit: 100})
	require.NoError(t, err)
	direct, err := chunkread.New(s.Conn(t, mariadb.RootUser), chunkread.Snapshot)
	require.NoError(t, err)
	want, err := direct.Read(one, chunkread.Range{Limit: 100})
	require.NoError(t, err)
	require.Len(t, c.Rows, 100)
	require.Equal(t, want.Rows, c.Rows)
}
