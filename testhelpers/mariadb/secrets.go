package mariadb

import (
	"strings"
	"testing"
)

// AccountStatements runs on s the six account statement forms MariaDB
// binlogs with a secret in clear, each with its own secret: CREATE USER
// ... IDENTIFIED BY, ALTER USER ... IDENTIFIED BY, SET PASSWORD FOR ... =
// PASSWORD(...) (binlogged with the hash), GRANT ... IDENTIFIED BY,
// CREATE USER ... IDENTIFIED VIA plugin USING PASSWORD(...) and ALTER
// USER ... IDENTIFIED WITH plugin AS 'hash'. It fails t unless the
// binlog (SHOW BINLOG EVENTS) holds every secret in clear, the unmasked
// control of a test that greps a store for them, and returns them with
// SET PASSWORD's plain text.
func AccountStatements(t testing.TB, s *Server, db string) []string {
	t.Helper()
	setHash := s.QueryValue(t, "SELECT PASSWORD('As3-set-secret')")
	asHash := s.QueryValue(t, "SELECT PASSWORD('As6-with-as-secret')")
	s.Exec(t,
		"CREATE USER 'sec1'@'%' IDENTIFIED BY 'As1-create-secret'",
		"ALTER USER 'sec1'@'%' IDENTIFIED BY 'As2-alter-secret'",
		"SET PASSWORD FOR 'sec1'@'%' = PASSWORD('As3-set-secret')",
		"GRANT SELECT ON "+db+".* TO 'sec1'@'%' IDENTIFIED BY 'As4-grant-secret'",
		"CREATE USER 'sec2'@'%' IDENTIFIED VIA mysql_native_password USING PASSWORD('As5-via-secret')",
		"ALTER USER 'sec2'@'%' IDENTIFIED WITH mysql_native_password AS '"+asHash+"'",
	)
	logged := []string{"As1-create-secret", "As2-alter-secret", setHash, "As4-grant-secret", "As5-via-secret", asHash}
	var all strings.Builder
	for _, f := range s.BinaryLogs(t) {
		for _, r := range s.Query(t, "SHOW BINLOG EVENTS IN '"+f.Name+"'") {
			all.WriteString(strings.Join(r, "\t") + "\n")
		}
	}
	for _, sec := range logged {
		if !strings.Contains(all.String(), sec) {
			t.Fatalf("mariadb: the binlog does not hold %q in clear", sec)
		}
	}
	return append(logged, "As3-set-secret")
}
