package ddl

import (
	"strings"
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/stretchr/testify/require"
)

// TestParseErrorOffset: where the parser stopped, from its error, in a
// statement short enough to be quoted whole and in one it cuts.
func TestParseErrorOffset(t *testing.T) {
	for _, sql := range []string{
		"CREATE TABLE t (a INT, u UUID)",
		"CREATE TABLE t (a INT COMMENT '" + strings.Repeat("\"q\" ", 1000) + "', u UUID, b INT)",
		"CREATE TABLE t (a INT, u UUID, b INT COMMENT '" + strings.Repeat("y", 5000) + "')",
	} {
		_, err := parseDDLOnce(sql)
		require.Error(t, err)
		off, ok := parseErrorOffset(sql, err.Error())
		require.True(t, ok, "%.300s", err)
		require.True(t, strings.HasPrefix(sql[off:], "UUID"), sql[off:min(off+20, len(sql))])
	}
	_, ok := parseErrorOffset("CREATE TABLE t (a INT, u UUID)", `line 1 column 30 near "UUID, b INT)" `)
	require.False(t, ok, "a near text that is not the statement's end")
}

func TestIsDDLText(t *testing.T) {
	for q, want := range map[string]bool{
		"ALTER TABLE t ADD c INT":             true,
		"  /* c */ create table x (a int)":    true,
		"BEGIN":                               false,
		"INSERT INTO t VALUES (1)":            false,
		"DROPX":                               false,
		"# x\nRENAME TABLE a TO b":            true,
		"truncate t":                          true,
		"/*!40000 ALTER TABLE t DISABLE KEYS": false,
	} {
		require.Equal(t, want, IsDDL([]byte(q)), q)
	}
}

// parseDDLOnce is the TiDB parser alone, without rewriteAtError.
func parseDDLOnce(sql string) ([]ast.StmtNode, error) {
	stmts, _, err := parser.New().ParseSQL(sql)
	return stmts, err
}

// TestTruncateMasks: statements quoted in errors and Table.Unknown have
// their secrets masked.
func TestTruncateMasks(t *testing.T) {
	got := Truncate("CREATE TABLE t (id INT)\n  ENGINE=FEDERATED CONNECTION='mysql://u:Fd8-secret@h/d/t'")
	require.Equal(t, "CREATE TABLE t (id INT) ENGINE=FEDERATED CONNECTION='<secret>'", got)
}
