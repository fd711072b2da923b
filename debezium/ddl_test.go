package debezium_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/debezium"
)

// ddlEvent is a DDL statement's event with the tables the schema history
// says it left.
func ddlEvent(q string, pos uint64, changes ...binlogstream.TableChange) binlogstream.Event {
	ev := queryEvent("app", q, pos)
	ev.DDL = changes
	return ev
}

// TestSchemaChangeTable: a CREATE's, an ALTER's and a RENAME's schema
// change carry the table as it is after the statement (defaultCharsetName,
// primaryKeyColumnNames, each column; a RENAME's under its new id alone,
// as an ALTER), a DROP's the table's id alone
// (no charset, key or columns, as Debezium's MySQL connector gives it),
// with schemas on and off (testdata/ddl*.golden; go test -update rewrites
// them).
func TestSchemaChangeTable(t *testing.T) {
	created := &binlogstream.Table{Schema: "app", Name: "t", PrimaryKey: []int{0}, Source: binlogstream.SchemaFromHistory,
		Columns: []binlogstream.Column{
			col("id", "int unsigned", "int", func(c *binlogstream.Column) { c.Unsigned, c.Nullable = true, false }),
			col("name", "varchar(40)", "varchar", func(c *binlogstream.Column) { c.Length, c.Charset = 40, "utf8mb4" }),
			col("price", "decimal(10,2)", "decimal", func(c *binlogstream.Column) { c.Precision, c.Scale = 10, 2 }),
			col("kind", "enum('a','it''s')", "enum", func(c *binlogstream.Column) { c.Elems, c.Charset = []string{"a", "it's"}, "latin1" }),
			col("at", "datetime(3)", "datetime", func(c *binlogstream.Column) { c.FSP = 3 }),
			col("doc", "json", "json", nil),
			col("g", "int", "int", func(c *binlogstream.Column) { c.Generated = true }),
		}}
	altered := &binlogstream.Table{Schema: "app", Name: "t", PrimaryKey: []int{0}, Source: binlogstream.SchemaFromHistory,
		Columns: append(append([]binlogstream.Column(nil), created.Columns...),
			col("bits", "bit(12)", "bit", func(c *binlogstream.Column) { c.Length, c.Nullable = 12, false }))}
	renamed := &binlogstream.Table{Schema: "app", Name: "u", PrimaryKey: altered.PrimaryKey, Source: altered.Source, Columns: altered.Columns}
	evs := []binlogstream.Event{
		ddlEvent("CREATE TABLE t (id INT UNSIGNED PRIMARY KEY, name VARCHAR(40), price DECIMAL(10,2), kind ENUM('a','it''s') CHARACTER SET latin1, "+
			"at DATETIME(3), doc JSON, g INT AS (id + 1)) DEFAULT CHARSET=utf8mb4", 100,
			binlogstream.TableChange{Schema: "app", Name: "t", Table: created, Charset: "utf8mb4"}),
		ddlEvent("ALTER TABLE t ADD COLUMN bits BIT(12) NOT NULL", 200,
			binlogstream.TableChange{Schema: "app", Name: "t", Table: altered, Charset: "utf8mb4"}),
		ddlEvent("RENAME TABLE t TO u", 250, binlogstream.TableChange{Schema: "app", Name: "t"},
			binlogstream.TableChange{Schema: "app", Name: "u", Table: renamed, Charset: "utf8mb4"}),
		ddlEvent("DROP TABLE u", 300, binlogstream.TableChange{Schema: "app", Name: "u"}),
	}
	for _, tc := range []struct {
		name string
		opts debezium.Options
	}{
		{"ddl", debezium.Options{}},
		{"ddl-schemas", debezium.Options{Schemas: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := encode(t, tc.opts, evs...)
			require.Len(t, recs, 4)
			var b bytes.Buffer
			for _, r := range recs {
				require.True(t, json.Valid(r.Value), "%s", r.Value)
				fmt.Fprintf(&b, "%s\t%s\t%s\n", r.Topic, r.Key, r.Value)
			}
			assertGolden(t, tc.name, b.Bytes())

			type column struct {
				Name       string   `json:"name"`
				JdbcType   int      `json:"jdbcType"`
				TypeName   string   `json:"typeName"`
				Charset    *string  `json:"charsetName"`
				Length     *int     `json:"length"`
				Scale      *int     `json:"scale"`
				Position   int      `json:"position"`
				Optional   bool     `json:"optional"`
				Generated  bool     `json:"generated"`
				EnumValues []string `json:"enumValues"`
			}
			type change struct {
				Type  string `json:"type"`
				ID    string `json:"id"`
				Table *struct {
					DefaultCharsetName string   `json:"defaultCharsetName"`
					PK                 []string `json:"primaryKeyColumnNames"`
					Columns            []column `json:"columns"`
				} `json:"table"`
			}
			var got [4][]change
			for i, r := range recs {
				require.NoError(t, json.Unmarshal(payload(t, r.Value)["tableChanges"], &got[i]))
				require.Len(t, got[i], 1)
			}
			c := got[0][0]
			assert.Equal(t, "CREATE", c.Type)
			assert.Equal(t, `"app"."t"`, c.ID)
			require.NotNil(t, c.Table, "a CREATE names its table")
			assert.Equal(t, "utf8mb4", c.Table.DefaultCharsetName)
			assert.Equal(t, []string{"id"}, c.Table.PK)
			require.Len(t, c.Table.Columns, 7)
			ten, two, forty, three := 10, 2, 40, 3
			utf, latin := "utf8mb4", "latin1"
			assert.Equal(t, column{Name: "id", JdbcType: 4, TypeName: "INT UNSIGNED", Position: 1}, c.Table.Columns[0])
			assert.Equal(t, column{Name: "name", JdbcType: 12, TypeName: "VARCHAR", Charset: &utf, Length: &forty, Position: 2, Optional: true}, c.Table.Columns[1])
			assert.Equal(t, column{Name: "price", JdbcType: 3, TypeName: "DECIMAL", Length: &ten, Scale: &two, Position: 3, Optional: true}, c.Table.Columns[2])
			assert.Equal(t, column{Name: "kind", JdbcType: 1, TypeName: "ENUM", Charset: &latin, Position: 4, Optional: true,
				EnumValues: []string{"'a'", "'it''s'"}}, c.Table.Columns[3])
			assert.Equal(t, column{Name: "at", JdbcType: 93, TypeName: "DATETIME", Length: &three, Position: 5, Optional: true}, c.Table.Columns[4])
			assert.Equal(t, column{Name: "doc", JdbcType: 1111, TypeName: "JSON", Position: 6, Optional: true}, c.Table.Columns[5])
			assert.True(t, c.Table.Columns[6].Generated)

			a := got[1][0]
			assert.Equal(t, "ALTER", a.Type)
			require.NotNil(t, a.Table, "an ALTER names the table as it is after it")
			require.Len(t, a.Table.Columns, 8)
			twelve := 12
			assert.Equal(t, column{Name: "bits", JdbcType: -7, TypeName: "BIT", Length: &twelve, Position: 8}, a.Table.Columns[7])

			r := got[2][0]
			assert.Equal(t, "ALTER", r.Type, "a RENAME: one ALTER, of the new name")
			assert.Equal(t, `"app"."u"`, r.ID)
			require.NotNil(t, r.Table)
			assert.Equal(t, a.Table.Columns, r.Table.Columns)

			assert.Equal(t, "DROP", got[3][0].Type)
			require.NotNil(t, got[3][0].Table, "a DROP's table: its id alone")
			assert.Empty(t, got[3][0].Table.Columns)
			assert.Empty(t, got[3][0].Table.PK)
			assert.Contains(t, string(payload(t, recs[3].Value)["tableChanges"]),
				`"table":{"defaultCharsetName":null,"primaryKeyColumnNames":[],"columns":[],"comment":null}`)
		})
	}
}

// TestSchemaChangeWithoutHistory: a DDL event without the history's
// tables (Event.DDL nil) keeps a null table.
func TestSchemaChangeWithoutHistory(t *testing.T) {
	recs := encode(t, debezium.Options{}, queryEvent("app", "CREATE TABLE t (k INT PRIMARY KEY)", 100))
	require.Len(t, recs, 1)
	assert.Contains(t, string(recs[0].Value), `"tableChanges":[{"type":"CREATE","id":"\"app\".\"t\"","table":null}]`)
}

// TestSchemaChangeRename: as Debezium's MySQL connector has it, a table
// rename is one ALTER of the table under its new id, with the table as
// it is after the statement; the old name gets no entry. A RENAME of
// several tables has one per new name, in the statement's order (a
// swap's temporary name gone by its end: a null table), and source.table
// names the new names. A renamed column renames no table.
func TestSchemaChangeRename(t *testing.T) {
	tbl := func(name string) *binlogstream.Table {
		return &binlogstream.Table{Schema: "app", Name: name, PrimaryKey: []int{0}, Source: binlogstream.SchemaFromHistory,
			Columns: []binlogstream.Column{col("id", "int", "int", func(c *binlogstream.Column) { c.Nullable = false })}}
	}
	change := func(name string, table bool) binlogstream.TableChange {
		tc := binlogstream.TableChange{Schema: "app", Name: name}
		if table {
			tc.Table, tc.Charset = tbl(name), "utf8mb4"
		}
		return tc
	}
	type entry struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Table json.RawMessage `json:"table"`
	}
	for _, c := range []struct {
		sql    string
		ddl    []binlogstream.TableChange
		ids    []string
		tables []bool // whether each entry has a table
		source string
	}{
		{"RENAME TABLE t TO u", []binlogstream.TableChange{change("t", false), change("u", true)},
			[]string{`"app"."u"`}, []bool{true}, "u"},
		{"RENAME TABLE a TO b, c TO d", []binlogstream.TableChange{change("a", false), change("b", true), change("c", false), change("d", true)},
			[]string{`"app"."b"`, `"app"."d"`}, []bool{true, true}, "b,d"},
		{"RENAME TABLE a TO tmp, b TO a, tmp TO b", []binlogstream.TableChange{change("a", true), change("tmp", false), change("b", true)},
			[]string{`"app"."tmp"`, `"app"."a"`, `"app"."b"`}, []bool{false, true, true}, "tmp,a,b"},
		{"ALTER TABLE t ADD COLUMN x INT, RENAME TO u", []binlogstream.TableChange{change("t", false), change("u", true)},
			[]string{`"app"."u"`}, []bool{true}, "u"},
		{"ALTER TABLE u RENAME COLUMN x TO y", []binlogstream.TableChange{change("u", true)},
			[]string{`"app"."u"`}, []bool{true}, "u"},
	} {
		recs := encode(t, debezium.Options{}, ddlEvent(c.sql, 100, c.ddl...))
		require.Len(t, recs, 1, c.sql)
		p := payload(t, recs[0].Value)
		var got []entry
		require.NoError(t, json.Unmarshal(p["tableChanges"], &got), c.sql)
		var ids []string
		var tables []bool
		for _, e := range got {
			assert.Equal(t, "ALTER", e.Type, c.sql)
			ids = append(ids, e.ID)
			tables = append(tables, string(e.Table) != "null")
		}
		assert.Equal(t, c.ids, ids, c.sql)
		assert.Equal(t, c.tables, tables, c.sql)
		var source struct {
			Table string `json:"table"`
		}
		require.NoError(t, json.Unmarshal(p["source"], &source))
		assert.Equal(t, c.source, source.Table, c.sql)
	}
}
