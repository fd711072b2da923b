package binlogstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// TestSchemaMySQLFullMetadataOverTheWire: MySQL 8's FULL row metadata,
// served by the fake primary over TCP and read by go-mysql through the
// SyncerSource: names, signedness, ENUM/SET members, charset and primary
// key come from the Table_map itself, with no history; a DDL in between
// changes nothing the Table_map does not say.
func TestSchemaMySQLFullMetadataOverTheWire(t *testing.T) {
	tbl := th.Table{ID: 9, Schema: "shop", Name: "items", PrimaryKey: []int{1}, Columns: []th.Column{
		{Name: "flags", Type: th.TinyInt, Unsigned: true},
		{Name: "id", Type: th.BigInt},
		{Name: "label", Type: th.Varchar(160), Collation: 255}, // utf8mb4_0900_ai_ci: 40 characters
		{Name: "size", Type: th.Enum("s", "m", "l")},
		{Name: "tags", Type: th.Set("new", "sale")},
		{Name: "qty", Type: th.Int, Unsigned: false},
	}}
	b := th.NewBuilder(th.MySQL)
	// The history would not know this table (no CREATE in the stream):
	// FULL metadata needs none.
	b.Txn(func(x *th.Txn) { x.Insert(tbl, th.Row{255, int64(1), "a", 2, 3, int32(-1)}) })
	b.DDL("shop", "ALTER TABLE items ADD COLUMN note INT") // the history cannot apply it: the table is unknown to it
	bl := b.Build()
	p := startPrimary(t, bl)
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: wireSource(t, p),
		Start: binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got *binlogstream.Table
	var row []any
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		if re, ok := ev.Event.(*replication.RowsEvent); ok {
			got, row = ev.Table, re.Rows[0]
		}
		if _, ok := ev.Event.(*replication.QueryEvent); ok && got != nil {
			cancel()
		}
		return nil
	})
	require.ErrorIs(t, s.Run(ctx), context.Canceled)
	require.NotNil(t, got)
	assert.Equal(t, binlogstream.SchemaFromBinlog, got.Source)
	assert.Equal(t, []string{"flags", "id", "label", "size", "tags", "qty"}, got.ColumnNames())
	assert.Equal(t, []int{1}, got.PrimaryKey)
	var types []string
	for _, c := range got.Columns {
		types = append(types, c.Type)
	}
	assert.Equal(t, []string{"tinyint unsigned", "bigint", "varchar(40)", "enum('s','m','l')", "set('new','sale')", "int"}, types)
	assert.Equal(t, "utf8mb4", got.Columns[2].Charset)
	assert.Equal(t, "utf8mb4_0900_ai_ci", got.Columns[2].Collation)
	assert.Equal(t, []string{"s", "m", "l"}, got.Columns[3].Elems)
	assert.True(t, got.Columns[0].Unsigned)
	assert.Equal(t, uint8(255), row[0], "go-mysql reads the signedness from the same metadata")
}
