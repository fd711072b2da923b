package binlogstream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// verifyRows is the rows of d.t, each value family in a column, its
// keys the even numbers from 2.
const verifyRows = 3000

// loadVerify creates d.t (every value family, an integer key) and d.k (a
// case-insensitive VARCHAR key) on s, with the same rows on every server.
func loadVerify(t *testing.T, s *mariadb.Server) {
	s.Exec(t, "CREATE DATABASE d", "USE d",
		"CREATE TABLE t (id INT NOT NULL PRIMARY KEY, i BIGINT, u BIGINT UNSIGNED, dec_ DECIMAL(12,3), f FLOAT, g DOUBLE, "+
			"c CHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, v VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, "+
			"tx TEXT, b VARBINARY(16), bl BLOB, dt DATE, tm TIME(6), dtm DATETIME(6), ts TIMESTAMP(6) NULL, j JSON, "+
			"e ENUM('x','y','z'), st SET('p','q','r'), bt BIT(12), n VARCHAR(5) NULL)",
		fmt.Sprintf("INSERT INTO t SELECT 2*seq, -7*CAST(seq AS SIGNED), 18446744073709551615 - seq, seq/7, seq/3, seq/3, CONCAT('c', seq), CONCAT('v', seq), "+
			"REPEAT('t', seq %% 40), UNHEX(HEX(seq)), REPEAT(CHAR(seq %% 256), 3), '2024-01-01' + INTERVAL seq DAY, "+
			"SEC_TO_TIME(seq) + INTERVAL seq MICROSECOND, '2024-01-01 00:00:00' + INTERVAL seq SECOND + INTERVAL seq MICROSECOND, "+
			"FROM_UNIXTIME(1700000000 + seq), JSON_OBJECT('n', seq), 1 + seq %% 3, seq %% 8, seq %% 4096, IF(seq %% 2, NULL, '') "+
			"FROM seq_1_to_%d", verifyRows),
		"UPDATE t SET g = 1e0 WHERE id = 40",
		"CREATE TABLE k (k VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL PRIMARY KEY, n INT)",
		"INSERT INTO k SELECT CONCAT('key', seq), seq FROM seq_1_to_50")
}

// verifySource is s as a source of the given flavor ("": detected).
func verifySource(t *testing.T, s *mariadb.Server, flavor string) *binlogstream.SyncerSource {
	src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{
		DSN:      binlogstream.DSN{User: mariadb.RootUser, Host: s.Host(), Port: uint16(s.Port())},
		ServerID: 1001, Flavor: flavor,
	})
	require.NoError(t, err)
	return src
}

// quiescedTarget reads the target, which nothing writes, as of any
// position the source read at.
func quiescedTarget(t *testing.T, s *mariadb.Server) func(context.Context, binlogstream.VerifyRange) ([][]any, binlogstream.Position, error) {
	vt, err := binlogstream.NewVerifyTarget(s.Conn(t, mariadb.RootUser))
	require.NoError(t, err)
	return func(_ context.Context, r binlogstream.VerifyRange) ([][]any, binlogstream.Position, error) {
		rows, err := vt.Read(r)
		return rows, r.At, err
	}
}

type diffLine struct {
	table, key, kind string
	cols             []string
}

func diffLines(res *binlogstream.VerifyResult) []diffLine {
	var out []diffLine
	for _, d := range res.Differences {
		out = append(out, diffLine{d.Table, fmt.Sprint(d.Key...), string(d.Kind), d.Columns})
	}
	return out
}

// TestVerifyTableFindsExactly: a copy loaded alike on two servers
// verifies clean; after tampering on the target, exactly the tampered
// keys are reported with their kind and exactly the columns changed,
// among them changes the columns' own collation cannot see (case, a
// trailing space), a DOUBLE's last bit and a microsecond.
func TestVerifyTableFindsExactly(t *testing.T) {
	mariadb.Require(t)
	source := mariadb.Start(t, mariadb.Options{})
	target := mariadb.Start(t, mariadb.Options{})
	loadVerify(t, source)
	loadVerify(t, target)
	ctx := context.Background()
	src := verifySource(t, source, "")
	verifyAll := func(readTarget func(context.Context, binlogstream.VerifyRange) ([][]any, binlogstream.Position, error)) (map[string]*binlogstream.VerifyResult, []diffLine) {
		out := map[string]*binlogstream.VerifyResult{}
		var lines []diffLine
		for _, tbl := range []string{"d.t", "d.k"} {
			res, err := binlogstream.VerifyTable(ctx, binlogstream.VerifyConfig{Source: src, Table: tbl, ChunkRows: 500, ReadTarget: readTarget})
			require.NoError(t, err)
			out[tbl] = res
			lines = append(lines, diffLines(res)...)
		}
		return out, lines
	}

	began := time.Now()
	res, lines := verifyAll(quiescedTarget(t, target))
	t.Logf("verified %d + 50 rows in %v, longest source read %v", verifyRows, time.Since(began), res["d.t"].LongestRead)
	require.Empty(t, lines, "a clean copy")
	require.Equal(t, 7, res["d.t"].Chunks, "3000 rows in chunks of 500, and the range after the last")
	require.EqualValues(t, verifyRows, res["d.t"].Rows)
	require.Equal(t, 1, res["d.k"].Chunks)
	require.Less(t, res["d.t"].LongestRead, 5*time.Second)

	target.Exec(t, "USE d",
		"DELETE FROM t WHERE id = 10",
		"INSERT INTO t (id, v) VALUES (0, 'before'), (1251, 'between'), (9999, 'after')",
		"UPDATE t SET v = UPPER(v) WHERE id = 20",
		"UPDATE t SET v = CONCAT(v, ' ') WHERE id = 30",
		"UPDATE t SET g = 1.0000000000000002e0 WHERE id = 40",
		"UPDATE t SET dtm = dtm + INTERVAL 1 MICROSECOND WHERE id = 50",
		"UPDATE t SET i = i + 1, st = 'p,q,r', n = NULL WHERE id = 60", // n was ''
		"UPDATE t SET n = '' WHERE id = 62",
		"UPDATE k SET k = 'KEY5' WHERE k = 'key5'")
	// The negative control: the server's own comparison, by the
	// columns' collation, sees no difference in these.
	require.Equal(t, "1", target.QueryValue(t, "SELECT v = 'v10' FROM d.t WHERE id = 20"))
	require.Equal(t, "1", target.QueryValue(t, "SELECT v = 'v15' FROM d.t WHERE id = 30"))
	require.Equal(t, "1", target.QueryValue(t, "SELECT COUNT(*) FROM d.k WHERE k = 'key5'"))

	_, lines = verifyAll(quiescedTarget(t, target))
	require.Equal(t, []diffLine{
		{"d.t", "0", "extra", nil},
		{"d.t", "10", "missing", nil},
		{"d.t", "20", "changed", []string{"v"}},
		{"d.t", "30", "changed", []string{"v"}},
		{"d.t", "40", "changed", []string{"g"}},
		{"d.t", "50", "changed", []string{"dtm"}},
		{"d.t", "60", "changed", []string{"i", "st", "n"}}, // n: '' to NULL
		{"d.t", "62", "changed", []string{"n"}},            // n: NULL to ''

		{"d.t", "1251", "extra", nil},
		{"d.t", "9999", "extra", nil},
		{"d.k", "key5", "changed", []string{"k"}},
	}, lines)

	// A target read at another position than the source's proves
	// nothing either way: the chunk is read again, and never reported.
	misaligned := quiescedTarget(t, target)
	res2, err := binlogstream.VerifyTable(ctx, binlogstream.VerifyConfig{Source: src, Table: "d.t", ChunkRows: 500, Rereads: 2,
		ReadTarget: func(ctx context.Context, r binlogstream.VerifyRange) ([][]any, binlogstream.Position, error) {
			rows, _, err := misaligned(ctx, r)
			return rows, binlogstream.Position{File: r.At.File, Offset: r.At.Offset + 1}, err
		}})
	require.NoError(t, err)
	require.Empty(t, res2.Differences)
	require.Zero(t, res2.Chunks)
	require.Len(t, res2.Unsettled, 7)
	require.Equal(t, 14, res2.Rereads)

	_, err = binlogstream.VerifyTable(ctx, binlogstream.VerifyConfig{Source: src, Table: "d.nope", ReadTarget: misaligned})
	require.ErrorContains(t, err, "verify d.nope: the source has no such base table")
	_, err = binlogstream.VerifyTable(ctx, binlogstream.VerifyConfig{Source: src, Table: "d.t"})
	require.ErrorContains(t, err, "ReadTarget is nil")
	_, err = binlogstream.VerifyTable(ctx, binlogstream.VerifyConfig{Source: verifySource(t, source, mysql.MySQLFlavor), Table: "d.t", ReadTarget: misaligned})
	require.ErrorContains(t, err, "the source is not MariaDB")
}

// TestVerifyTableTargetErrorStops: a ReadTarget error ends VerifyTable
// with it, while the source's next chunk is being read ahead: the
// chunks compared before it are counted, and the source connections
// are closed when VerifyTable returns.
func TestVerifyTableTargetErrorStops(t *testing.T) {
	mariadb.Require(t)
	source := mariadb.Start(t, mariadb.Options{})
	target := mariadb.Start(t, mariadb.Options{})
	loadVerify(t, source)
	loadVerify(t, target)
	src := verifySource(t, source, "")
	conns := func() string {
		return source.QueryValue(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'root' AND ID <> CONNECTION_ID()")
	}
	before := conns()
	read := quiescedTarget(t, target)
	calls := 0
	res, err := binlogstream.VerifyTable(context.Background(), binlogstream.VerifyConfig{Source: src, Table: "d.t", ChunkRows: 100,
		ReadTarget: func(ctx context.Context, r binlogstream.VerifyRange) ([][]any, binlogstream.Position, error) {
			if calls++; calls == 3 {
				return nil, r.At, fmt.Errorf("the target went away")
			}
			return read(ctx, r)
		}})
	require.ErrorContains(t, err, "the target went away")
	require.Equal(t, 2, res.Chunks)
	require.Eventually(t, func() bool { return conns() == before }, 5*time.Second, 20*time.Millisecond, "source connections left open")
}
