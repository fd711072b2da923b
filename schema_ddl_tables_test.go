package binlogstream

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/internal/schema"
)

// TestTrackerDDLTables: the tracker gives each DDL statement the tables
// it touched as the history has them after it (Event.DDL): a CREATE's
// and an ALTER's table with its declared columns, nullability from the
// DDL (a primary key's columns NOT NULL), primary key and default
// charset; a DROP's and a RENAME's old name without a table; other
// events none.
func TestTrackerDDLTables(t *testing.T) {
	st := newSchemaTracker("mariadb", schema.NewHistory(), nil, nil)
	n := uint64(100)
	observe := func(db, sql string) []TableChange {
		n += 100
		be := &replication.BinlogEvent{Header: &replication.EventHeader{EventType: replication.QUERY_EVENT},
			Event: &replication.QueryEvent{Schema: []byte(db), Query: []byte(sql)}}
		_, _, err := st.observe(be, &decision{start: Position{File: "f.000001", Offset: n}, end: Position{File: "f.000001", Offset: n + 50}})
		require.NoError(t, err, sql)
		return st.ddl
	}
	assert.Nil(t, observe("d", "BEGIN"), "not a DDL statement")
	observe("", "CREATE DATABASE d CHARACTER SET latin1")
	got := observe("d", "CREATE TABLE t (id INT, v VARCHAR(10) NOT NULL, w TEXT, PRIMARY KEY (id)) DEFAULT CHARSET=utf8mb4")
	require.Len(t, got, 1)
	c := got[0]
	assert.Equal(t, "d", c.Schema)
	assert.Equal(t, "t", c.Name)
	require.NotNil(t, c.Table)
	assert.Equal(t, "utf8mb4", c.Charset)
	assert.Equal(t, []string{"id", "v", "w"}, c.Table.ColumnNames())
	assert.Equal(t, []int{0}, c.Table.PrimaryKey)
	var nullable []bool
	for _, col := range c.Table.Columns {
		nullable = append(nullable, col.Nullable)
	}
	assert.Equal(t, []bool{false, false, true}, nullable, "id in the primary key, v NOT NULL, w NULL")
	assert.Equal(t, SchemaFromHistory, c.Table.Source)

	got = observe("d", "ALTER TABLE t ADD COLUMN x INT NOT NULL")
	require.Len(t, got, 1)
	require.NotNil(t, got[0].Table)
	assert.Equal(t, []string{"id", "v", "w", "x"}, got[0].Table.ColumnNames())
	assert.Equal(t, []string{"id", "v", "w"}, c.Table.ColumnNames(), "the CREATE's table stays as it was")

	got = observe("d", "RENAME TABLE t TO u")
	require.Len(t, got, 2)
	byName := map[string]*Table{}
	for _, tc := range got {
		byName[tc.Name] = tc.Table
	}
	assert.Nil(t, byName["t"], "renamed away")
	require.NotNil(t, byName["u"])
	assert.Equal(t, []string{"id", "v", "w", "x"}, byName["u"].ColumnNames())

	got = observe("d", "DROP TABLE u")
	require.Len(t, got, 1)
	assert.Equal(t, "u", got[0].Name)
	assert.Nil(t, got[0].Table, "dropped")

	got = observe("d", "CREATE TABLE s SELECT 1 AS a")
	require.Len(t, got, 1)
	assert.Nil(t, got[0].Table)
	assert.NotEmpty(t, got[0].Unknown, "a CREATE ... SELECT's layout is not proven")
}
