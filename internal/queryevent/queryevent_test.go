package queryevent

import (
	"testing"

	"github.com/binlogstream/binlogstream/internal/charset"
	"github.com/stretchr/testify/require"
)

func TestServerCollationFromStatusVars(t *testing.T) {
	// flags2, sql_mode, catalog "std", auto_increment, charset (33, 33, 45), time zone
	vars := []byte{0, 0, 0, 0, 0, 1, 4, 0, 0x20, 0x54, 0, 0, 0, 0, 2, 3, 's', 't', 'd', 0, 3, 1, 0, 1, 0,
		4, 33, 0, 33, 0, 45, 0, 5, 3, 'U', 'T', 'C'}
	require.Equal(t, uint64(45), ServerCollation(vars))
	require.Equal(t, uint64(0x54200004), SQLMode(vars), "ANSI_QUOTES and MariaDB 10.11's default")
	require.Zero(t, SQLMode(vars[:10]), "truncated")
	cs, coll := charset.Names("mysql", 45)
	require.Equal(t, "utf8mb4", cs)
	require.Equal(t, "utf8mb4_general_ci", coll)
	require.Zero(t, ServerCollation([]byte{12, 1, 'd', 0, 4, 1, 0, 1, 0, 8, 0}), "an unknown-length code first: not read")
	require.Zero(t, ServerCollation([]byte{4, 1, 0}), "truncated")
}

// TestStatementText: a DDL statement's text is decoded from the client
// charset it came in.
func TestStatementText(t *testing.T) {
	require.Equal(t, "CREATE TABLE t (café INT, e ENUM('été'))", StatementText([]byte("CREATE TABLE t (caf\xe9 INT, e ENUM('\xe9t\xe9'))"), "latin1"))
	require.Equal(t, "CREATE TABLE t (имя INT)", StatementText([]byte("CREATE TABLE t (\xe8\xec\xff INT)"), "cp1251"))
	require.Equal(t, "CREATE TABLE t (é INT)", StatementText([]byte("CREATE TABLE t (é INT)"), "utf8mb4"))
	require.Equal(t, "CREATE TABLE t (\xe9 INT)", StatementText([]byte("CREATE TABLE t (\xe9 INT)"), "binary"))
	bad := "CREATE TABLE t (\x81 INT)" // not sjis
	require.Equal(t, bad, StatementText([]byte(bad), "sjis"), "undecodable: as it is")
	vars := []byte{4, 8, 0, 8, 0, 45, 0} // client latin1_swedish_ci, server utf8mb4_general_ci
	require.Equal(t, uint64(8), ClientCollation(vars))
	require.Equal(t, uint64(45), ServerCollation(vars))
}
