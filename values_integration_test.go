package binlogstream_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	"github.com/binlogstream/binlogstream/testhelpers/valuecases"
)

func renderValue(kind string, v any) string {
	switch kind {
	case "num":
		switch x := v.(type) {
		case float32:
			return strconv.FormatFloat(float64(x), 'g', -1, 32)
		case float64:
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		return fmt.Sprint(v)
	case "utf8hex":
		s, ok := v.(string)
		if !ok {
			return fmt.Sprintf("not a string: %#v", v)
		}
		return strings.ToUpper(hex.EncodeToString([]byte(s)))
	case "hex":
		b, ok := v.([]byte)
		if !ok {
			return fmt.Sprintf("not bytes: %#v", v)
		}
		return strings.ToUpper(hex.EncodeToString(b))
	case "geom":
		g, ok := v.(binlogstream.Geometry)
		if !ok {
			return fmt.Sprintf("not a geometry: %#v", v)
		}
		return fmt.Sprintf("%d:%s", g.SRID, strings.ToUpper(hex.EncodeToString(g.WKB)))
	}
	return fmt.Sprint(v)
}

// TestIntegrationValuesEqualServer: every column type family, written
// with edge values (integer limits and sign boundaries, BIT(1..64), zero
// dates, negative and large TIME, every fractional precision, a non-UTC
// session time zone, text in utf8mb4, latin1, ascii, utf16, utf16le,
// utf32, ucs2, cp1251, binary strings with NUL and invalid UTF-8 bytes
// and a 1 MiB value, JSON, ENUM, SET of 64 members, a generated column,
// MariaDB's UUID, INET6, INET4 and GEOMETRY, and NULL in every column),
// inserted, updated and deleted, streamed in binlog_row_metadata NO_LOG,
// MINIMAL and FULL with binlog_row_image FULL, MINIMAL and NOBLOB: every
// value of every row image Event.RowValues gives equals the server's own
// SELECT of that row, and a column the image left out is Absent (never
// nil, which is NULL). Once more with MariaDB's compressed binlog events
// (log_bin_compress: compressed Query and rows events).
func TestIntegrationValuesEqualServer(t *testing.T) {
	mariadb.Require(t)
	t.Parallel()
	for _, mode := range []string{"NO_LOG", "MINIMAL", "FULL"} {
		for _, image := range []string{"FULL", "MINIMAL", "NOBLOB"} {
			t.Run(mode+"/"+image, func(t *testing.T) {
				valuesEqualServer(t, mode, image)
			})
		}
	}
	t.Run("NO_LOG/FULL/log_bin_compress", func(t *testing.T) {
		valuesEqualServer(t, "NO_LOG", "FULL", "--log-bin-compress=ON", "--log-bin-compress-min-len=10")
	})
}

type imageVals struct {
	kind string // insert, before, after, delete
	vals []any
}

func valuesEqualServer(t *testing.T, mode, image string, extra ...string) {
	s := mariadb.Start(t, mariadb.Options{ExtraArgs: append([]string{"--binlog-row-metadata=" + mode, "--binlog-row-image=" + image,
		"--max-allowed-packet=64M"}, extra...)})
	createX, insertX := valuecases.TableSQL("x", valuecases.Exotic)
	s.Exec(t, "CREATE DATABASE d", "USE d", createX)
	from := masterPos(t, s)
	createV, insertV := valuecases.TableSQL("v", valuecases.Columns)
	stmts := append([]string{"USE d", "SET SESSION sql_mode = ''", "SET SESSION time_zone = '+05:30'", createV}, insertV...)
	s.Exec(t, append(stmts, insertX...)...)
	before := map[string]map[string][]string{"v": valuecases.ServerRows(t, s, "v", valuecases.Columns), "x": valuecases.ServerRows(t, s, "x", valuecases.Exotic)}
	s.Exec(t, "USE d", "UPDATE v SET id = id + 100", "UPDATE x SET id = id + 100", "DELETE FROM v WHERE id > 102", "DELETE FROM x WHERE id > 102")
	target := masterPos(t, s)

	store := binlogstream.NewFileSchemaStore(filepath.Join(t.TempDir(), "h"))
	defer store.Close()
	st, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: itSource(t, s), Start: binlogstream.StartAt(from),
		Schema: &binlogstream.SchemaConfig{Store: store, Snapshot: true}})
	require.NoError(t, err)
	got := map[string][]imageVals{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		if re, ok := ev.Event.(*replication.RowsEvent); ok {
			if !ev.Table.Known() {
				return fmt.Errorf("%s unknown: %s", ev.Table.Name, ev.Table.Unknown)
			}
			kind := binlogstream.RowKind(ev.Header.EventType)
			for i := range re.Rows {
				k := kind
				if kind == "update" {
					k = [...]string{"before", "after"}[i%2]
				}
				got[ev.Table.Name] = append(got[ev.Table.Name], imageVals{k, ev.RowValues(i)})
			}
		}
		if ev.End.Compare(target) >= 0 {
			cancel()
		}
		return nil
	})
	require.ErrorIs(t, st.Run(ctx), context.Canceled)

	absent := 0
	for table, cols := range map[string][]valuecases.Col{"v": valuecases.Columns, "x": valuecases.Exotic} {
		want := before[table]
		rows := valuecases.Rows(cols) // ids 1..rows, updated to 101.., deleted above 102
		require.Equal(t, rows+2*rows+rows-2, len(got[table]), "%s: %d inserts, %d updates (2 images), %d deletes", table, rows, rows, rows-2)
		for _, im := range got[table] {
			id, ok := im.vals[0].(int64)
			require.True(t, ok, "%s %s: the primary key is in every image: %#v", table, im.kind, im.vals[0])
			if id > 100 {
				id -= 100
			}
			row := want[strconv.FormatInt(id, 10)]
			require.NotNil(t, row, "%s id %d", table, id)
			for k, c := range cols {
				v := im.vals[k+1]
				what := fmt.Sprintf("%s/%s %s.%s id %d %s", mode, image, table, c.Name, id, im.kind)
				switch {
				case v == binlogstream.Absent:
					absent++
					assert.NotEqual(t, "FULL", image, "%s: only MINIMAL and NOBLOB images leave columns out", what)
				case row[k] == "NULL":
					assert.Nil(t, v, what)
				default:
					assert.Equal(t, row[k], renderValue(c.Render, v), "%s (%.200v)", what, v)
				}
			}
		}
	}
	if image != "FULL" {
		assert.Positive(t, absent, "a %s image leaves columns out", image)
	}
	t.Logf("%s/%s: %d row images compared, %d columns absent", mode, image, len(got["v"])+len(got["x"]), absent)
}

// TestIntegrationCompressedWithGoMySQLDecoder: with go-mysql's decoder
// chosen (Tune sets ParseTime), a COMPRESSED column, which only this
// package's decoder reads, stops the stream with an error that says so,
// not the hint for a start inside a statement.
func TestIntegrationCompressedWithGoMySQLDecoder(t *testing.T) {
	mariadb.Require(t)
	t.Parallel()
	s := mariadb.Start(t, mariadb.Options{})
	from := masterPos(t, s)
	s.Exec(t, "CREATE DATABASE d", "USE d", "CREATE TABLE c (id INT PRIMARY KEY, b BLOB COMPRESSED)", "INSERT INTO c VALUES (1, REPEAT('a', 100))")
	src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{
		DSN:      binlogstream.DSN{User: s.ReplUser(), Password: s.ReplPassword(), Host: s.Host(), Port: uint16(s.Port())},
		ServerID: 1002, Flavor: mysql.MariaDBFlavor,
		Tune: func(c *replication.BinlogSyncerConfig) { c.ParseTime = true },
	})
	require.NoError(t, err)
	st, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: binlogstream.StartAt(from)})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = st.Run(ctx)
	var de *binlogstream.DecodeError
	require.ErrorAs(t, err, &de)
	require.ErrorContains(t, err, "a column type go-mysql's decoder does not know")
	require.NotContains(t, err.Error(), "a start inside a statement")
	require.NoError(t, st.Close())
}
