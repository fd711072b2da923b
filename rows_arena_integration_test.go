package binlogstream_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	"github.com/binlogstream/binlogstream/testhelpers/valuecases"
)

// TestIntegrationRecycleRows: over a real MariaDB binlog of every column
// type family (temporal and DECIMAL values are text in the arenas, NULLs
// in every column), a SyncerSource that recycles released events' rows
// delivers what one that does not delivers, the consumer holding events
// and releasing them out of order.
func TestIntegrationRecycleRows(t *testing.T) {
	s := mariadb.Start(t, mariadb.Options{})
	createV, insertV := valuecases.TableSQL("v", valuecases.Columns)
	createX, insertX := valuecases.TableSQL("x", valuecases.Exotic)
	s.Exec(t, "CREATE DATABASE d")
	from := masterPos(t, s)
	s.Exec(t, append(append([]string{"USE d", "SET SESSION sql_mode = ''", createV, createX}, insertV...), insertX...)...)
	names := func(cols []valuecases.Col) string {
		var n []string
		for _, c := range cols {
			if c.Vals != nil && c.Name != "mb" { // copies without the 1 MiB blobs
				n = append(n, c.Name)
			}
		}
		return strings.Join(n, ", ")
	}
	// Copies of the rows in statements of growing size: events of a few
	// rows (decoded in place) to several KB (on the workers).
	for k := 1; k <= 80; k++ {
		for _, tbl := range []struct {
			name string
			cols []valuecases.Col
		}{{"v", valuecases.Columns}, {"x", valuecases.Exotic}} {
			n := valuecases.Rows(tbl.cols)
			s.Exec(t, "USE d", "SET SESSION sql_mode = ''", fmt.Sprintf("INSERT INTO %s (id, %s) SELECT id + %d, %s FROM %s WHERE id <= %d",
				tbl.name, names(tbl.cols), k*1000, names(tbl.cols), tbl.name, min(k, 4)*n))
		}
	}
	s.Exec(t, "USE d", "UPDATE v SET id = id + 100000 WHERE id % 2 = 0", "DELETE FROM v WHERE id % 3 = 0",
		"UPDATE x SET id = id + 100000 WHERE id % 2 = 1", "DELETE FROM x WHERE id % 5 = 0")
	target := masterPos(t, s)
	open := func(recycle bool) binlogstream.Source {
		src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{
			DSN:      binlogstream.DSN{User: s.ReplUser(), Password: s.ReplPassword(), Host: s.Host(), Port: uint16(s.Port())},
			ServerID: 1002, Flavor: mysql.MariaDBFlavor, HeartbeatPeriod: 200 * time.Millisecond,
			DecodeWorkers: 2, RecycleRows: recycle, EventCacheCount: 16,
		})
		require.NoError(t, err)
		return src
	}
	stop := func(_ int, ev binlogstream.Event) bool { return ev.End.Compare(target) >= 0 }
	start := binlogstream.StartAt(from)
	want, none := recycledRun(t, open(false), start, stop, 0, 1)
	require.Zero(t, none)
	require.Greater(t, len(want), 150)
	t.Logf("%d rows events, binlog %s to %s", len(want), from, target)
	for _, window := range []int{0, 3, 12} {
		got, arenas := recycledRun(t, open(true), start, stop, window, uint64(window))
		require.Equal(t, want, got, "window %d", window)
		require.Less(t, arenas, len(want)/2, "window %d: %d arenas for %d rows events", window, arenas, len(want))
	}
}
