package fakeprimary_test

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/internal/fakeprimary"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

func TestTableStore(t *testing.T) {
	p := start(t, script(th.NewBuilder(th.MySQL)).Build(), fakeprimary.WithVar("version", "8.4.3"))
	p.SetTable("app", "t", []fakeprimary.TableColumn{{Name: "id", Type: "bigint"}, {Name: "v", Type: "varchar(8)"}},
		[][]any{{int64(3), "c"}, {int64(1), "a"}, {int64(2), "b"}, {int64(-5), "n"}})
	c, err := client.Connect(p.Addr(), p.User(), p.Password(), "")
	require.NoError(t, err)
	defer c.Close()
	strs := func(q string) [][]string {
		r, err := c.Execute(q)
		require.NoError(t, err, q)
		var out [][]string
		for i := range r.RowNumber() {
			var row []string
			for j := range r.ColumnNumber() {
				s, _ := r.GetString(i, j)
				row = append(row, s)
			}
			out = append(out, row)
		}
		return out
	}
	sel := "SELECT `id`, `v` FROM `app`.`t` FORCE INDEX (`PRIMARY`)"
	require.Equal(t, [][]string{{"-5", "n"}, {"1", "a"}}, strs(sel+" ORDER BY `id` LIMIT 2"))
	require.Equal(t, [][]string{{"2", "b"}, {"3", "c"}}, strs(sel+" WHERE `id` > 1 ORDER BY `id` LIMIT 9 LOCK IN SHARE MODE"))
	p.PutRow("app", "t", 2, nil)
	p.PutRow("app", "t", 9, []any{int64(9), "z"})
	require.Equal(t, [][]string{{"3", "c"}, {"9", "z"}}, strs(sel+" WHERE `id` > 1 ORDER BY `id` LIMIT 9"))
	require.Equal(t, [][]string{{"app", "t", "id", "bigint", ""}, {"app", "t", "v", "varchar", "utf8mb4_bin"}},
		strs("SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, LOWER(DATA_TYPE), IFNULL(COLLATION_NAME,'') FROM information_schema.COLUMNS WHERE TABLE_SCHEMA IN ('app')"))
	require.Empty(t, strs("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA IN ('other')"))
	require.Equal(t, [][]string{{"app", "t", "PRIMARY", "id", "0"}},
		strs("SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, COLUMN_NAME, IFNULL(SUB_PART,0) FROM information_schema.STATISTICS WHERE NON_UNIQUE = 0 AND TABLE_SCHEMA NOT IN ('mysql')"))
	for _, q := range []string{"START TRANSACTION", "COMMIT", "ROLLBACK"} {
		_, err := c.Execute(q)
		require.NoError(t, err)
	}
	// MySQL 8.4 has SHOW BINARY LOG STATUS only.
	_, err = c.Execute("SHOW MASTER STATUS")
	require.ErrorContains(t, err, "syntax")
	require.Len(t, strs("SHOW BINARY LOG STATUS"), 1)
}
