package chunkread_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/internal/chunkread"
	"github.com/binlogstream/binlogstream/internal/schema"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// The table both servers hold: a composite key of an integer and a
// case-insensitive text, and an ENUM.
var (
	tableDDL = "CREATE TABLE t (a INT NOT NULL, s VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL, " +
		"e ENUM('x','y','z') NOT NULL, PRIMARY KEY (a, s))"
	columns = []schema.Column{
		{Name: "a", DataType: "int"},
		{Name: "s", DataType: "varchar", Charset: "utf8mb4", Collation: "utf8mb4_general_ci"},
		{Name: "e", DataType: "enum", Elems: []string{"x", "y", "z"}},
	}
)

// load creates d.t on s with a in 1..3 and s in b, C, d (mixed case).
func load(t *testing.T, s *mariadb.Server) {
	s.Exec(t, "CREATE DATABASE d", "USE d", tableDDL,
		"INSERT INTO t VALUES (1,'b','x'),(1,'C','y'),(1,'d','z'),(2,'b','x'),(2,'C','y'),(2,'d','z'),(3,'b','x'),(3,'C','y'),(3,'d','z')")
}

func table(t *testing.T) *chunkread.Table {
	tbl, err := chunkread.NewTable("d", "t", columns, []string{"a", "s"}, "PRIMARY")
	require.NoError(t, err)
	return tbl
}

func keys(rows [][]any) []string {
	var out []string
	for _, r := range rows {
		// The ENUM as its member's name (the read gives its index).
		out = append(out, fmt.Sprintf("%v/%s/%s", r[0], r[1], []string{"", "x", "y", "z"}[r[2].(int64)]))
	}
	return out
}

// TestReadRange: a range's rows, after its low key and through its high
// one, in the index's order and its collation (upper and lower case
// compare equal); the read is placed
// at the server's binlog position, in both modes, and a change after it
// shows at a later position.
func TestReadRange(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{})
	load(t, s)
	tbl := table(t)
	// After (1, 'c') = (1, 'C'); through (3, 'B') = (3, 'b').
	rg := chunkread.Range{After: []any{int64(1), []byte("c")}, Through: []any{int64(3), []byte("B")}}
	want := []string{"1/d/z", "2/b/x", "2/C/y", "2/d/z", "3/b/x"}
	for _, mode := range []chunkread.Mode{chunkread.Snapshot, chunkread.Watermark} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			r, err := chunkread.New(s.Conn(t, mariadb.RootUser), mode)
			require.NoError(t, err)
			file, pos := s.MasterStatus(t)
			c, err := r.Read(tbl, rg)
			require.NoError(t, err)
			require.Equal(t, want, keys(c.Rows))
			require.Equal(t, chunkread.Pos{File: file, Offset: pos}, c.At, "a quiet server's position")
			if mode == chunkread.Watermark {
				require.Equal(t, &c.At, c.Low)
			} else {
				require.Nil(t, c.Low)
			}

			s.Exec(t, "UPDATE d.t SET e = 'z' WHERE a = 2 AND s = 'b'")
			file, pos = s.MasterStatus(t)
			c2, err := r.Read(tbl, rg)
			require.NoError(t, err)
			require.Equal(t, chunkread.Pos{File: file, Offset: pos}, c2.At)
			require.Greater(t, c2.At.Offset, c.At.Offset)
			require.Equal(t, "2/b/z", keys(c2.Rows)[1])
			s.Exec(t, "UPDATE d.t SET e = 'x' WHERE a = 2 AND s = 'b'")

			// A limit takes the first rows; no bounds read the table.
			c3, err := r.Read(tbl, chunkread.Range{After: rg.After, Limit: 2})
			require.NoError(t, err)
			require.Equal(t, want[:2], keys(c3.Rows))
			all, err := r.Read(tbl, chunkread.Range{})
			require.NoError(t, err)
			require.Len(t, all.Rows, 9)
		})
	}
}

// TestReadRangeOnTarget: the same range read from a second server that
// holds the same rows (a copy's target) gives the same rows, placed at
// that server's own binlog position.
func TestReadRangeOnTarget(t *testing.T) {
	mariadb.Require(t)
	src := mariadb.Start(t, mariadb.Options{ServerID: 1})
	tgt := mariadb.Start(t, mariadb.Options{ServerID: 2})
	load(t, src)
	tgt.Exec(t, "CREATE TABLE mysql.pad (x INT)") // the target's binlog differs
	load(t, tgt)
	tbl := table(t)
	rg := chunkread.Range{After: []any{int64(1), []byte("B")}, Through: []any{int64(2), []byte("c")}}
	read := func(s *mariadb.Server) *chunkread.Chunk {
		r, err := chunkread.New(s.Conn(t, mariadb.RootUser), chunkread.Snapshot)
		require.NoError(t, err)
		c, err := r.Read(tbl, rg)
		require.NoError(t, err)
		file, pos := s.MasterStatus(t)
		require.Equal(t, chunkread.Pos{File: file, Offset: pos}, c.At)
		return c
	}
	a, b := read(src), read(tgt)
	require.Equal(t, []string{"1/C/y", "1/d/z", "2/b/x", "2/C/y"}, keys(a.Rows))
	require.Equal(t, a.Rows, b.Rows)
	require.NotEqual(t, a.At, b.At, "each server's own position")

	// A row the target lacks shows in its read only.
	tgt.Exec(t, "DELETE FROM d.t WHERE a = 2 AND s = 'b'")
	require.Equal(t, []string{"1/C/y", "1/d/z", "2/C/y"}, keys(read(tgt).Rows))
}

// TestQuery: the SELECT of a range, bounds as the index orders them.
func TestQuery(t *testing.T) {
	tbl, err := chunkread.NewTable("d", "t", columns[:1], []string{"a"}, "PRIMARY")
	require.NoError(t, err)
	for _, c := range []struct {
		rg   chunkread.Range
		want string
	}{
		{chunkread.Range{}, "SELECT `a` FROM `d`.`t` FORCE INDEX (`PRIMARY`) ORDER BY `a`"},
		{chunkread.Range{After: []any{int64(5)}, Limit: 10}, "SELECT `a` FROM `d`.`t` FORCE INDEX (`PRIMARY`) WHERE `a` > 5 ORDER BY `a` LIMIT 10"},
		{chunkread.Range{After: []any{int64(5)}, Through: []any{uint64(9)}},
			"SELECT `a` FROM `d`.`t` FORCE INDEX (`PRIMARY`) WHERE (`a` > 5) AND (`a` <= 9) ORDER BY `a`"},
	} {
		q, err := tbl.Query(c.rg)
		require.NoError(t, err)
		require.Equal(t, c.want, q)
	}
	_, err = tbl.Query(chunkread.Range{After: []any{int64(1), int64(2)}})
	require.ErrorContains(t, err, "boundary of d.t has 2 values for a key of 1 columns")
	q, err := tbl.KeyQuery([]any{int64(5)}, 99)
	require.NoError(t, err)
	require.Equal(t, "SELECT `a` FROM `d`.`t` FORCE INDEX (`PRIMARY`) WHERE `a` > 5 ORDER BY `a` LIMIT 1 OFFSET 99", q)
	q, err = tbl.KeyQuery(nil, 0)
	require.NoError(t, err)
	require.Equal(t, "SELECT `a` FROM `d`.`t` FORCE INDEX (`PRIMARY`) ORDER BY `a` LIMIT 1", q)
}

// TestReadFloatsExactly: FLOAT and DOUBLE values read as the binlog
// holds them, to the last bit. The text protocol cuts a FLOAT to 6
// significant digits (0.333333 for the float32 nearest 1/3), which would
// copy a different value and hide a difference from a verification.
func TestReadFloatsExactly(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE d", "USE d", "CREATE TABLE f (id INT PRIMARY KEY, f FLOAT, g DOUBLE)",
		"INSERT INTO f VALUES (1, 1e0/3, 1e0/3), (2, 0.1e0, 0.1e0), (3, 16777217e0, 16777217e0), "+
			"(4, 3.4028234e38, 1.7976931348623157e308), (5, 1.4e-45, 5e-324), (6, -2.5e0, -2.5e0), (7, NULL, NULL)")
	tbl, err := chunkread.NewTable("d", "f", []schema.Column{{Name: "id", DataType: "int"}, {Name: "f", DataType: "float"},
		{Name: "g", DataType: "double"}}, []string{"id"}, "PRIMARY")
	require.NoError(t, err)
	r, err := chunkread.New(s.Conn(t, mariadb.RootUser), chunkread.Plain)
	require.NoError(t, err)
	c, err := r.Read(tbl, chunkread.Range{})
	require.NoError(t, err)
	want := [][]any{
		{int64(1), float32(1.0 / 3), 1.0 / 3},
		{int64(2), float32(0.1), 0.1},
		{int64(3), float32(16777216), float64(16777217)},
		{int64(4), float32(3.4028234e38), 1.7976931348623157e308},
		{int64(5), float32(1.4e-45), 5e-324},
		{int64(6), float32(-2.5), -2.5},
		{int64(7), nil, nil},
	}
	require.Equal(t, want, c.Rows)
}
