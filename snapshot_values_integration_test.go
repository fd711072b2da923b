package binlogstream_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

// TestSnapshotValuesAsTheBinlog: a snapshot read of a row gives every
// column in the form the row's binlog image gives it through
// Event.RowValues, the Go type included: the rows are inserted after a
// position, streamed from there without a snapshot, then read by a
// snapshot of the same table, and each key's values compared. ENUM and
// SET members, UUID and INET6 come back from a SELECT in other forms
// than the binlog's, which the reads turn into the binlog's.
func TestSnapshotValuesAsTheBinlog(t *testing.T) {
	srv := snapServer(t)
	srv.Exec(t, "CREATE DATABASE app", "USE app",
		"CREATE TABLE f (id INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, mi MEDIUMINT UNSIGNED, i INT, bi BIGINT, "+
			"bu BIGINT UNSIGNED, y YEAR, dec_ DECIMAL(20,6), fl FLOAT, db DOUBLE, bt BIT(12), b64 BIT(64), "+
			"e ENUM('x','y','z'), st SET('p','q','r'), c CHAR(5), v VARCHAR(20) CHARACTER SET latin1, tx TEXT, "+
			"bn BINARY(4), vb VARBINARY(8), bl BLOB, j JSON, dt DATE, tm TIME(3), dtm DATETIME(6), ts TIMESTAMP(2) NULL, "+
			"u UUID, i6 INET6, g POINT)")
	start := binlogstream.StartAt(masterPos(t, srv))
	srv.Exec(t, "INSERT INTO app.f VALUES "+
		"(1, -128, 255, -32768, 16777215, -2147483648, -9223372036854775808, 18446744073709551615, 2155, -12345678901234.123456, "+
		"1e0/3, 1e0/3, b'101010101010', b'1111111111111111111111111111111111111111111111111111111111111111', 'z', 'p,r', 'ab', 'café', 'text', "+
		"'ab', 'xy', 'blob', '{\"a\": [1, 2]}', '2024-02-29', '-838:59:59.999', '2024-01-02 03:04:05.678901', '2024-01-02 03:04:05.67', "+
		"'123e4567-e89b-12d3-a456-426614174000', '2001:db8::1', POINT(1, 2)), "+
		"(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "+
		"NULL, NULL, NULL, NULL, NULL, NULL, NULL), "+
		"(3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'x', '', '', '', '', '', '', '', '[]', '0000-00-00', '00:00:00', '0000-00-00 00:00:00', "+
		"'1970-01-01 00:00:01', '00000000-0000-0000-0000-000000000000', '::', POINT(0, 0))")
	end := masterPos(t, srv)
	src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{
		DSN:      binlogstream.DSN{User: srv.ReplUser(), Password: srv.ReplPassword(), Host: srv.Host(), Port: uint16(srv.Port())},
		ServerID: 1001, Flavor: mysql.MariaDBFlavor,
	})
	require.NoError(t, err)

	collect := func(start binlogstream.ResumePosition, snap *binlogstream.SnapshotConfig) map[any][]string {
		rows := map[any][]string{}
		// The schema history gives the binlog's columns their declared
		// types (UUID, INET6: BINARY(16) in a Table_map).
		store := binlogstream.NewFileSchemaStore(filepath.Join(t.TempDir(), "h"))
		defer store.Close()
		s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: start, Snapshot: snap,
			Schema: &binlogstream.SchemaConfig{Store: store, Snapshot: true}})
		require.NoError(t, err)
		defer s.Close()
		s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
			var vals [][]any
			switch e := ev.Event.(type) {
			case *binlogstream.SnapshotRead:
				vals = append(vals, ev.RowValues(0))
			case *replication.RowsEvent:
				if string(e.Table.Table) == "f" {
					for i := range e.Rows {
						vals = append(vals, ev.RowValues(i))
					}
				}
			}
			for _, v := range vals {
				var out []string
				for j, x := range v {
					out = append(out, fmt.Sprintf("%s %T %v", ev.Table.Columns[j].Name, x, x))
				}
				rows[v[0]] = out
			}
			return nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if snap == nil {
			s.StopAt(end)
		} else {
			_, err = s.StopAtCurrent(ctx)
			require.NoError(t, err)
		}
		require.NoError(t, s.Run(ctx))
		return rows
	}
	binlog := collect(start, nil)
	pats, err := binlogstream.ParseTablePatterns("app.f")
	require.NoError(t, err)
	read := collect(binlogstream.StartAt(end), &binlogstream.SnapshotConfig{Tables: pats})
	require.Len(t, binlog, 3)
	for id, want := range binlog {
		require.Equal(t, want, read[id], "row %v", id)
	}
}
