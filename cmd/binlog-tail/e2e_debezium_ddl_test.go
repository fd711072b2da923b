package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestDebeziumDDLTable: on a live MariaDB, the schema-change events of
// binlog-tail --format debezium carry the table as the schema history has
// it after each statement: a CREATE's columns, an ALTER's new column, a
// RENAME's one ALTER of the new name (as Debezium has it), a DROP's table
// without columns; with --schemas and without.
func TestDebeziumDDLTable(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE d")
	start := s.Query(t, "SHOW MASTER STATUS")[0]
	s.Exec(t, "USE d",
		"CREATE TABLE t (id INT UNSIGNED NOT NULL, v VARCHAR(20) CHARACTER SET latin1, amount DECIMAL(8,3) NOT NULL, PRIMARY KEY (id)) DEFAULT CHARSET=utf8mb4",
		"INSERT INTO t VALUES (1, 'a', 1.5)",
		"ALTER TABLE t ADD COLUMN kind ENUM('x','y') NULL",
		"RENAME TABLE t TO u",
		"DROP TABLE u",
	)
	type column struct {
		Name     string  `json:"name"`
		TypeName string  `json:"typeName"`
		JdbcType int     `json:"jdbcType"`
		Charset  *string `json:"charsetName"`
		Length   *int    `json:"length"`
		Scale    *int    `json:"scale"`
		Position int     `json:"position"`
		Optional bool    `json:"optional"`
	}
	type change struct {
		Type  string `json:"type"`
		ID    string `json:"id"`
		Table *struct {
			Charset string   `json:"defaultCharsetName"`
			PK      []string `json:"primaryKeyColumnNames"`
			Columns []column `json:"columns"`
		} `json:"table"`
	}
	for _, schemas := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "out.jsonl")
		args := []string{"--dsn", s.DSN(mariadb.ReplUser), "--out", out, "--start", start[0] + ":" + start[1], "--stop-at-current",
			"--format", "debezium", "--server-id", "86", "--quiet"}
		if schemas {
			args = append(args, "--schemas")
		}
		r := runBinary(t, context.Background(), args...)
		require.Equal(t, 0, r.code, r.stderr)
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		var changes []change
		for _, e := range parseEnvelopes(t, b) {
			if e.Topic != "binlog" {
				continue
			}
			var v map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(e.Value, &v))
			if p, ok := v["payload"]; ok {
				assert.True(t, schemas)
				require.NoError(t, json.Unmarshal(p, &v))
			}
			var tc []change
			require.NoError(t, json.Unmarshal(v["tableChanges"], &tc))
			for _, c := range tc {
				if c.ID == `"d"."t"` || c.ID == `"d"."u"` { // the server's own statements touch other tables
					changes = append(changes, c)
				}
			}
		}
		require.Len(t, changes, 4, "CREATE, ALTER, RENAME, DROP (schemas %v)", schemas)
		c, a, rn, d := changes[0], changes[1], changes[2], changes[3]
		require.Equal(t, "CREATE", c.Type)
		require.NotNil(t, c.Table, "the CREATE's table")
		assert.Equal(t, "utf8mb4", c.Table.Charset)
		assert.Equal(t, []string{"id"}, c.Table.PK)
		latin, twenty, eight, three := "latin1", 20, 8, 3
		assert.Equal(t, []column{
			{Name: "id", TypeName: "INT UNSIGNED", JdbcType: 4, Position: 1},
			{Name: "v", TypeName: "VARCHAR", JdbcType: 12, Charset: &latin, Length: &twenty, Position: 2, Optional: true},
			{Name: "amount", TypeName: "DECIMAL", JdbcType: 3, Length: &eight, Scale: &three, Position: 3},
		}, c.Table.Columns)
		require.Equal(t, "ALTER", a.Type)
		require.NotNil(t, a.Table, "the ALTER's table")
		var names []string
		for _, col := range a.Table.Columns {
			names = append(names, col.Name)
		}
		assert.Equal(t, []string{"id", "v", "amount", "kind"}, names)
		assert.True(t, a.Table.Columns[3].Optional)
		require.Equal(t, "ALTER", rn.Type, "the RENAME")
		require.Equal(t, `"d"."u"`, rn.ID)
		require.NotNil(t, rn.Table, "the renamed table")
		assert.Equal(t, a.Table.Columns, rn.Table.Columns)
		assert.Equal(t, "DROP", d.Type)
		require.NotNil(t, d.Table, "the DROP's table: its id alone")
		assert.Empty(t, d.Table.Columns)
	}
}
