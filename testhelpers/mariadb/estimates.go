package mariadb

import (
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
