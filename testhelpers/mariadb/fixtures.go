package mariadb

import (
	"fmt"
	"strconv"
	"testing"
)

// StartEstimated starts a server whose database d holds a (20,000 rows)
// and b (5,000 rows), with statistics that change only with ANALYZE
// TABLE, and returns it with the sum of the tables' TABLE_ROWS estimates:
// the estimate a command reads for a snapshot's rows left.
func StartEstimated(t testing.TB) (*Server, int) {
	t.Helper()
	s := Start(t, Options{ExtraArgs: []string{"--innodb-stats-auto-recalc=OFF"}})
	s.Exec(t, "CREATE DATABASE d", "USE d",
		"CREATE TABLE a (id INT PRIMARY KEY, pad VARCHAR(40))", "CREATE TABLE b (id INT PRIMARY KEY, pad VARCHAR(40))",
		"INSERT INTO a SELECT seq, 'x' FROM seq_1_to_20000", "INSERT INTO b SELECT seq, 'y' FROM seq_1_to_5000",
		"ANALYZE TABLE a, b")
	est := 0
	for _, r := range s.Query(t, "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd'") {
		n, err := strconv.Atoi(r[0])
		if err != nil {
			t.Fatalf("mariadb: TABLE_ROWS %q: %v", r[0], err)
		}
		est += n
	}
	if est == 0 {
		t.Fatal("mariadb: no TABLE_ROWS estimate after ANALYZE TABLE")
	}
	return s, est
}

// MixedTable creates db.t with rows rows of a mixed-type table (BIGINT
// key, VARCHAR, DECIMAL, DATETIME(6), INT with a NULL in a tenth of the
// rows, DATE, DOUBLE, ENUM, VARBINARY, VARCHAR), written in statements of
// 100k rows: the table of the snapshot and verification benchmarks.
func (s *Server) MixedTable(t testing.TB, db string, rows int) {
	t.Helper()
	s.Exec(t, "CREATE DATABASE "+db, "USE "+db,
		"CREATE TABLE t (id BIGINT PRIMARY KEY, a VARCHAR(40) NOT NULL, b DECIMAL(12,4), c DATETIME(6), d INT, "+
			"e DATE, f DOUBLE, g ENUM('new','open','closed'), h VARBINARY(16), i VARCHAR(60))")
	for i := 0; i < rows; i += 100_000 {
		s.Exec(t, "USE "+db, fmt.Sprintf("INSERT INTO t SELECT seq, CONCAT('customer-', seq), seq / 7, "+
			"'2024-01-02 03:04:05.123456' + INTERVAL seq SECOND, IF(seq %% 10 = 0, NULL, -seq), '2020-01-01' + INTERVAL seq %% 3000 DAY, "+
			"seq / 3, 1 + seq %% 3, UNHEX(LEFT(MD5(seq), 16)), REPEAT(CHAR(97 + seq %% 26), 5 + seq %% 20) FROM seq_%d_to_%d",
			i+1, min(i+100_000, rows)))
	}
}
