package binlogstream_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/internal/fakeprimary"
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

// TestWirePrescanStreamedWhenNotListed: a server that cannot list its
// binlog's statements (the fake primary refuses SHOW BINLOG EVENTS) has
// the binlog from the start to the snapshot streamed for its DDL instead,
// and the run goes on with the same record.
func TestWirePrescanStreamedWhenNotListed(t *testing.T) {
	other := th.Table{ID: 302, Schema: "wire", Name: "other", Columns: []th.Column{{Name: "id", Type: th.Int}}}
	bl := th.NewBuilder(th.MariaDB).
		Txn(func(t *th.Txn) { t.Insert(wireUsers, wireRows(1, 2)...) }).
		Rotate().
		DDL("wire", "ALTER TABLE users ADD COLUMN x INT").
		Txn(func(t *th.Txn) { t.Insert(other, th.Row{int32(1)}) }).
		Build()
	p := startPrimary(t, bl)
	path := filepath.Join(t.TempDir(), "h")
	store := binlogstream.NewFileSchemaStore(path)
	log, hook := logtest.NewNullLogger()
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: wireSource(t, p), Logger: log,
		Start:  binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4}),
		Schema: &binlogstream.SchemaConfig{Store: store, Snapshot: true}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = s.StopAtCurrent(ctx)
	require.NoError(t, err)
	rows := 0
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		if _, ok := ev.Event.(*replication.RowsEvent); ok {
			rows++
		}
		return nil
	})
	require.NoError(t, s.Run(ctx))
	assert.Equal(t, 2, rows)
	require.NoError(t, store.Close())

	recs, err := binlogstream.NewFileSchemaStore(path).Load()
	require.NoError(t, err)
	var prescans []*binlogstream.SchemaPrescan
	for _, r := range recs {
		if r.Prescan != nil {
			prescans = append(prescans, r.Prescan)
		}
	}
	require.Len(t, prescans, 1)
	assert.Equal(t, [][2]string{{"wire", "users"}}, prescans[0].Tables)
	var fell []string
	for _, e := range hook.AllEntries() {
		if strings.Contains(e.Message, "reading the binlog instead") {
			fell = append(fell, fmt.Sprint(e.Data["error"]))
		}
	}
	require.Len(t, fell, 1)
	assert.Contains(t, fell[0], "SHOW BINLOG EVENTS")
}

// failingStore is a SchemaStore whose Load fails.
type failingStore struct{}

func (failingStore) Load() ([]binlogstream.SchemaRecord, error) {
	return nil, errors.New("disk on fire")
}
func (failingStore) Append(binlogstream.SchemaRecord) error { return nil }

// TestWireSchemaOpenFailsFirst: a schema history that cannot be loaded
// ends Run with its error and delivers nothing, also while the server
// refuses connections (not a reconnect error after the dump's attempts).
func TestWireSchemaOpenFailsFirst(t *testing.T) {
	bl := th.NewBuilder(th.MariaDB).Txn(func(t *th.Txn) { t.Insert(wireUsers, wireRows(1, 2)...) }).Build()
	for _, refuse := range []bool{false, true} {
		p := startPrimary(t, bl)
		if refuse {
			p.Refuse(fakeprimary.RefuseClose)
		}
		s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: wireSource(t, p),
			Start:                binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4}),
			MaxReconnectAttempts: 1000, ReconnectBackoff: 10 * time.Millisecond,
			Schema: &binlogstream.SchemaConfig{Store: failingStore{}, Snapshot: true}})
		require.NoError(t, err)
		delivered := 0
		s.AddListener(func(context.Context, binlogstream.Event) error { delivered++; return nil })
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err = s.Run(ctx)
		cancel()
		require.ErrorIs(t, err, binlogstream.ErrSchemaHistory, "refused %v", refuse)
		assert.Contains(t, err.Error(), "disk on fire")
		assert.Zero(t, delivered)
		assert.Zero(t, s.Stats().Reconnects)
	}
}
