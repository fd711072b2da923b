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
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// ddlScript is a binlog of NO_LOG Table_maps (no column names) whose
// tables change under DDL: every rows event's expected column names are
// those of the th.Table it was written with. It returns them in order.
func ddlScript(b *th.Builder, meta th.RowMetadata) [][]string {
	var want [][]string
	tbl := func(id uint64, name string, cols ...th.Column) th.Table {
		return th.Table{ID: id, Schema: "app", Name: name, Columns: cols, Metadata: meta}
	}
	ins := func(t th.Table, rows ...th.Row) {
		b.Txn(func(x *th.Txn) { x.Insert(t, rows...) })
		var names []string
		for _, c := range t.Columns {
			names = append(names, c.Name)
		}
		want = append(want, names)
	}
	id, name, score := th.Column{Name: "id", Type: th.Int}, th.Column{Name: "name", Type: th.Varchar(64)}, th.Column{Name: "score", Type: th.BigInt}
	b.DDL("", "CREATE DATABASE app")
	b.DDL("app", "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(64))")
	ins(tbl(1, "t", id, name), th.Row{int32(1), "a"}, th.Row{int32(2), "b"})
	b.DDL("app", "ALTER TABLE t ADD COLUMN score BIGINT FIRST")
	ins(tbl(2, "t", score, id, name), th.Row{int64(7), int32(3), "c"})
	b.DDL("app", "ALTER TABLE t CHANGE COLUMN name label VARCHAR(64) AFTER score")
	label := th.Column{Name: "label", Type: th.Varchar(64)}
	ins(tbl(3, "t", score, label, id), th.Row{int64(8), "d", int32(4)})
	b.DDL("app", "CREATE TABLE u (k BIGINT, v VARCHAR(64))")
	k, v := th.Column{Name: "k", Type: th.BigInt}, th.Column{Name: "v", Type: th.Varchar(64)}
	ins(tbl(4, "u", k, v), th.Row{int64(1), "x"})
	b.DDL("app", "RENAME TABLE t TO tmp, u TO t, tmp TO u")
	ins(tbl(5, "t", k, v), th.Row{int64(2), "y"})
	ins(tbl(6, "u", score, label, id), th.Row{int64(9), "e", int32(5)})
	b.DDL("app", "TRUNCATE TABLE u")
	b.DDL("app", "DROP TABLE u")
	b.DDL("app", "CREATE TABLE u (only_col INT)")
	ins(tbl(7, "u", th.Column{Name: "only_col", Type: th.Int}), th.Row{int32(1)})
	b.DDL("app", "ALTER TABLE u DROP COLUMN only_col, ADD COLUMN a INT, ADD COLUMN b BIGINT")
	ins(tbl(8, "u", th.Column{Name: "a", Type: th.Int}, th.Column{Name: "b", Type: th.BigInt}), th.Row{int32(1), int64(2)})
	return want
}

// namesRun streams src from start with a file schema store at path,
// stopping after stop events (acknowledged), or failing on event failAt
// (not acknowledged), and returns the column names of every rows event.
type namesRun struct {
	names  [][]string
	events int
	last   binlogstream.ResumePosition
	err    error
}

func streamNames(t *testing.T, src binlogstream.Source, start binlogstream.ResumePosition, path string, stop, failAt int) namesRun {
	t.Helper()
	store := binlogstream.NewFileSchemaStore(path)
	defer store.Close()
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: start,
		Schema: &binlogstream.SchemaConfig{Store: store}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var r namesRun
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		if r.events+1 == failAt {
			return errors.New("crash before the acknowledgement")
		}
		if _, ok := ev.Event.(*replication.RowsEvent); ok {
			if !ev.Table.Known() {
				return fmt.Errorf("rows event at %s: table unknown: %s", ev.Start, ev.Table.Unknown)
			}
			r.names = append(r.names, ev.Table.ColumnNames())
		}
		r.events++
		if r.events == stop {
			cancel()
		}
		return nil
	})
	r.err = s.Run(ctx)
	r.last = s.ResumePosition()
	return r
}

// TestSchemaCrashAtEveryEvent: a binlog with NO_LOG and MINIMAL Table_maps
// whose tables are created, altered, renamed (a swap), truncated, dropped
// and recreated. For every k, a stream is stopped after k events, or
// fails on event k after the DDL record was written but before the event
// was acknowledged; the resumed stream's rows carry the same names as an
// uninterrupted run's, which are the names they were written with.
func TestSchemaCrashAtEveryEvent(t *testing.T) {
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		for _, meta := range []th.RowMetadata{th.MetadataNoLog, th.MetadataMinimal} {
			for _, gtid := range []bool{false, true} {
				b := th.NewBuilder(f)
				want := ddlScript(b, meta)
				bl := b.Build()
				start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
				if gtid {
					var err error
					start, err = binlogstream.StartAtGTID(string(f), "")
					require.NoError(t, err)
				}
				t.Run(fmt.Sprintf("%s/meta%d/gtid=%v", f, meta, gtid), func(t *testing.T) {
					// every event in file mode; GTID mode leaves out those outside transactions
					n := len(bl.Events)
					if gtid {
						n = 0
						for _, e := range bl.Events {
							if e.GTID != "" {
								n++
							}
						}
					}
					full := streamNames(t, th.NewFakeSource(bl), start, filepath.Join(t.TempDir(), "h"), n, -1)
					require.ErrorIs(t, full.err, context.Canceled)
					require.Equal(t, n, full.events)
					require.Equal(t, want, full.names)
					for k := 1; k < n; k++ {
						for _, fail := range []bool{false, true} {
							path := filepath.Join(t.TempDir(), "h")
							var first namesRun
							if fail {
								first = streamNames(t, th.NewFakeSource(bl), start, path, -1, k)
								require.Error(t, first.err)
								require.Equal(t, k-1, first.events)
							} else {
								first = streamNames(t, th.NewFakeSource(bl), start, path, k, -1)
								require.Equal(t, k, first.events)
							}
							tok, err := binlogstream.ParseResumePosition(first.last.String())
							require.NoError(t, err)
							rest := streamNames(t, th.NewFakeSource(bl), tok, path, n-first.events, -1)
							require.ErrorIs(t, rest.err, context.Canceled, "k=%d fail=%v", k, fail)
							require.Equal(t, want, append(first.names, rest.names...), "k=%d fail=%v", k, fail)
						}
					}
				})
			}
		}
	}
}

// TestSchemaNaiveResumeMapsWrong shows what the history prevents: a
// consumer that resumes after the ALTER with the schema it had at the
// start (or the live one, for a later resume) puts values under the
// wrong names. Without a store, a resumed streamer cannot know the
// table, and says so instead of guessing.
func TestSchemaResumeWithoutHistoryIsUnknown(t *testing.T) {
	b := th.NewBuilder(th.MariaDB)
	ddlScript(b, th.MetadataNoLog)
	bl := b.Build()
	// resume right after the first ALTER without the history
	var alter th.EventInfo
	for _, e := range bl.Events {
		if strings.Contains(e.Desc, "ADD COLUMN score") {
			alter = e
		}
	}
	require.NotZero(t, alter.End)
	tok := binlogstream.StartAt(binlogstream.Position{File: alter.File, Offset: uint64(alter.End)})
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: th.NewFakeSource(bl), Start: tok})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var first *binlogstream.Table
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		if _, ok := ev.Event.(*replication.RowsEvent); ok && first == nil {
			first = ev.Table
			cancel()
		}
		return nil
	})
	_ = s.Run(ctx)
	require.NotNil(t, first)
	require.False(t, first.Known())
	require.Equal(t, binlogstream.SchemaUnknown, first.Source)
	require.Contains(t, first.Unknown, "binlog_row_metadata is not FULL")
	require.Equal(t, []string{"", "", ""}, first.ColumnNames())
	require.Equal(t, "bigint", first.Columns[0].Type)
}

// TestSchemaHiddenDDLFailsClosed: a DDL the binlog never saw (sql_log_bin=0)
// leaves the history with two columns while the rows have three: the
// stream stops with a *SchemaMismatchError naming the table, its position
// and the difference, and no row of that table is delivered.
func TestSchemaHiddenDDLFailsClosed(t *testing.T) {
	b := th.NewBuilder(th.MariaDB)
	id, name := th.Column{Name: "id", Type: th.Int}, th.Column{Name: "name", Type: th.Varchar(64)}
	b.DDL("app", "CREATE TABLE t (id INT, name VARCHAR(64))")
	b.Txn(func(x *th.Txn) {
		x.Insert(th.Table{ID: 1, Schema: "app", Name: "t", Columns: []th.Column{id, name}, Metadata: th.MetadataNoLog}, th.Row{int32(1), "a"})
	})
	// ALTER TABLE t ADD extra BIGINT FIRST, run with sql_log_bin=0
	hidden := th.Table{ID: 2, Schema: "app", Name: "t", Metadata: th.MetadataNoLog,
		Columns: []th.Column{{Name: "extra", Type: th.BigInt}, id, name}}
	b.Txn(func(x *th.Txn) { x.Insert(hidden, th.Row{int64(5), int32(2), "b"}) })
	bl := b.Build()
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: th.NewFakeSource(bl),
		Start: binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})})
	require.NoError(t, err)
	var rows int
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		if _, ok := ev.Event.(*replication.RowsEvent); ok {
			rows++
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = s.Run(ctx)
	var me *binlogstream.SchemaMismatchError
	require.ErrorAs(t, err, &me)
	require.ErrorIs(t, err, binlogstream.ErrSchemaMismatch)
	require.Equal(t, "`app`.`t`", me.Table)
	require.Contains(t, me.Diff, "the binlog has 3 columns, the schema history 2")
	require.Equal(t, 1, rows, "the rows after the hidden DDL are not delivered")
	require.Contains(t, err.Error(), "sql_log_bin=0")

	// same column count, another type in one column
	b2 := th.NewBuilder(th.MariaDB)
	b2.DDL("app", "CREATE TABLE t (id INT, name VARCHAR(64))")
	b2.Txn(func(x *th.Txn) {
		x.Insert(th.Table{ID: 2, Schema: "app", Name: "t", Metadata: th.MetadataNoLog,
			Columns: []th.Column{{Name: "id", Type: th.BigInt}, name}}, th.Row{int64(1), "a"})
	})
	bl2 := b2.Build()
	s2, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: th.NewFakeSource(bl2),
		Start: binlogstream.StartAt(binlogstream.Position{File: bl2.Files[0].Name, Offset: 4})})
	require.NoError(t, err)
	err = s2.Run(ctx)
	require.ErrorAs(t, err, &me)
	require.Contains(t, me.Diff, "column 1 `id` int: the binlog writes it as bigint")
}
