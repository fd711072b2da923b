package binlogstream_test

import (
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/internal/fakeprimary"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// The MySQL flavor's chunk reads, through the fake primary: it serves a
// MySQL 8.4 (SHOW BINARY LOG STATUS only) with a table of rows, and
// writes to the binlog while chunks are read: the output folded by key
// must end equal to the table.

var wmTable = th.Table{ID: 77, Schema: "app", Name: "t", Columns: []th.Column{
	{Name: "id", Type: th.BigInt}, {Name: "v", Type: th.Varchar(64)},
}}

var wmCols = []fakeprimary.TableColumn{{Name: "id", Type: "bigint"}, {Name: "v", Type: "varchar(64)"}}

func wmRow(id int64, v string) th.Row { return th.Row{id, v} }

// wmSnapshot snapshots app.t from the end of p's binlog (chunkRows 0:
// the default) and stops once everything up to the end is delivered.
func wmSnapshot(t *testing.T, p *fakeprimary.Primary, flavor string, chunkRows int) (snapRun, *snapFold) {
	t.Helper()
	pats, err := binlogstream.ParseTablePatterns("app.t")
	require.NoError(t, err)
	f := newSnapFold(map[string][]string{"app.t": {"id"}})
	stop := make(chan struct{})
	close(stop)
	first := p.Binlog().Files[0]
	start := binlogstream.StartAt(binlogstream.Position{File: first.Name, Offset: uint64(len(first.Data))})
	snap := &binlogstream.SnapshotConfig{Tables: pats, ChunkRows: chunkRows}
	return runSnapshot(t, wmSource(t, p, flavor), start, snap, f, nil, stop, nil), f
}

// wmSource is a source on p whose heartbeats let the stream attach a
// chunk read on an idle binlog at once.
func wmSource(t *testing.T, p *fakeprimary.Primary, flavor string) binlogstream.Source {
	t.Helper()
	src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{
		DSN:      binlogstream.DSN{User: p.User(), Password: p.Password(), Host: p.Host(), Port: p.Port()},
		ServerID: 4243, Flavor: flavor, HeartbeatPeriod: 100 * time.Millisecond,
	})
	require.NoError(t, err)
	return src
}

func TestSnapshotWatermarkMySQLWire(t *testing.T) {
	got, want, f, qs := wmWireScenario(t)
	require.NoError(t, f.err)
	require.True(t, maps.Equal(want, got), "fold %v, want %v", got, want)
	require.Equal(t, 0, f.changes, "every change was to a key not yet read: folded, not delivered")

	// The queries MySQL 8.4 gets: positions by SHOW BINARY LOG STATUS,
	// locking reads in READ COMMITTED, no binlog_snapshot_* status.
	assert.Contains(t, qs, "SHOW BINARY LOG STATUS")
	assert.Contains(t, qs, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
	assert.Contains(t, qs, "ORDER BY `id` LIMIT 4 LOCK IN SHARE MODE")
	assert.Contains(t, qs, "WHERE `id` > 4 ORDER BY")
	assert.NotContains(t, qs, "binlog_snapshot")
}

// TestSnapshotWatermarkMySQLWireNegative: the same reads with the low
// watermark taken after the SELECT lose the first chunk's writes.
func TestSnapshotWatermarkMySQLWireNegative(t *testing.T) {
	binlogstream.SnapshotWatermarkNaive("low-after")
	defer binlogstream.SnapshotWatermarkNaive("")
	got, want, _, _ := wmWireScenario(t)
	require.NotEqual(t, want, got)
	t.Logf("fold %v, table %v", got, want)
}

// wmWireScenario snapshots app.t in chunks of 4 rows through a fake
// MySQL 8.4 that commits while the chunks are read, and returns the
// output folded by key, the table at the end, the fold and the queries
// the fake answered.
func wmWireScenario(t *testing.T) (got, want map[string]string, f *snapFold, queries string) {
	b := th.NewBuilder(th.MySQL)
	var initial [][]any
	var rows []th.Row
	for i := int64(1); i <= 10; i++ {
		initial = append(initial, []any{i, fmt.Sprintf("r%d", i)})
		rows = append(rows, wmRow(i, fmt.Sprintf("r%d", i)))
	}
	b.Txn(func(t *th.Txn) { t.Insert(wmTable, rows...) })
	bl := b.Build()
	p, err := fakeprimary.Start(bl, fakeprimary.WithVar("version", "8.4.3"))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	p.SetTable("app", "t", wmCols, initial)

	// Each SELECT, after its low watermark: the first one's writes reach
	// the binlog only (as a commit logged and not yet visible to it would
	// have to be folded), the second one's the binlog and the rows (a
	// read that sees them: the fold puts the same rows again).
	var mu sync.Mutex
	selects := 0
	commit := func(visible bool, fn func(t *th.Txn), puts ...[]any) {
		b.Txn(fn)
		require.NoError(t, p.Append(b.Build()))
		if visible {
			for _, r := range puts {
				if len(r) == 1 {
					p.PutRow("app", "t", r[0].(int64), nil)
				} else {
					p.PutRow("app", "t", r[0].(int64), r)
				}
			}
		}
	}
	p.OnSelect(func(string) error {
		mu.Lock()
		defer mu.Unlock()
		selects++
		switch selects {
		case 1: // chunk (-inf, 4]: key 2 updated, 3 deleted, not visible to the read
			commit(false, func(t *th.Txn) {
				t.Update(wmTable, wmRow(2, "r2"), wmRow(2, "u2"))
				t.Delete(wmTable, wmRow(3, "r3"))
			})
		case 2: // chunk (4, 8]: 6 updated, 9 moved into it as 5, visible to the read
			commit(true, func(t *th.Txn) {
				t.Update(wmTable, wmRow(6, "r6"), wmRow(6, "u6"))
				t.Update(wmTable, wmRow(9, "r9"), wmRow(5, "moved"))
			}, []any{int64(6), "u6"}, []any{int64(9)}, []any{int64(5), "moved"})
		}
		return nil
	})

	run, f := wmSnapshot(t, p, mysql.MySQLFlavor, 4)
	require.NoError(t, run.err)
	require.Equal(t, 3, selects)

	// The first chunk's writes were not visible to it: the rows hold them
	// only through the fold. The table is the binlog's end.
	want = map[string]string{}
	for _, k := range []int64{1, 2, 4, 5, 6, 7, 8, 10} {
		v := fmt.Sprintf("r%d", k)
		switch k {
		case 2:
			v = "u2"
		case 5:
			v = "moved"
		case 6:
			v = "u6"
		}
		want[fmt.Sprint(k)] = fmt.Sprintf("%d|%s", k, v)
	}
	return f.rows["app.t"], want, f, strings.Join(p.Queries(), "\n")
}

// TestSnapshotFlavorChoosesReads: the MariaDB flavor reads chunks at
// binlog_snapshot_position (here refused: the fake has no SHOW STATUS),
// the MySQL flavor with watermarks.
func TestSnapshotFlavorChoosesReads(t *testing.T) {
	for _, c := range []struct {
		flavor th.Flavor
		query  string
	}{
		{th.MariaDB, "SHOW STATUS LIKE 'binlog_snapshot_%'"},
		{th.MySQL, "LOCK IN SHARE MODE"},
	} {
		t.Run(string(c.flavor), func(t *testing.T) {
			b := th.NewBuilder(c.flavor)
			b.Txn(func(t *th.Txn) { t.Insert(wmTable, wmRow(1, "r1")) })
			bl := b.Build()
			p := startPrimary(t, bl)
			p.SetTable("app", "t", wmCols, [][]any{{int64(1), "r1"}})
			run, f := wmSnapshot(t, p, string(c.flavor), 0)
			assert.Contains(t, strings.Join(p.Queries(), "\n"), c.query)
			if c.flavor == th.MySQL {
				require.NoError(t, run.err)
				require.Equal(t, map[string]string{"1": "1|r1"}, f.rows["app.t"])
			} else {
				require.ErrorContains(t, run.err, "SHOW STATUS")
			}
		})
	}
}

// TestSnapshotWatermarkLockErrors: a locking read chosen as a deadlock
// victim is read again; one that keeps timing out on a lock ends the run
// with an error naming the table and the reads tried.
func TestSnapshotWatermarkLockErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		fails int // SELECTs answered with the error; -1: all
		code  uint16
	}{
		{"deadlock victims read again", 2, mysql.ER_LOCK_DEADLOCK},
		{"lock wait timeouts give up", -1, mysql.ER_LOCK_WAIT_TIMEOUT},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := th.NewBuilder(th.MySQL)
			b.Txn(func(t *th.Txn) { t.Insert(wmTable, wmRow(1, "r1"), wmRow(2, "r2")) })
			bl := b.Build()
			p := startPrimary(t, bl)
			p.SetTable("app", "t", wmCols, [][]any{{int64(1), "r1"}, {int64(2), "r2"}})
			var mu sync.Mutex
			selects := 0
			p.OnSelect(func(string) error {
				mu.Lock()
				defer mu.Unlock()
				selects++
				if c.fails < 0 || selects <= c.fails {
					return mysql.NewDefaultError(c.code)
				}
				return nil
			})
			run, f := wmSnapshot(t, p, mysql.MySQLFlavor, 0)
			if c.fails < 0 {
				require.ErrorContains(t, run.err, "snapshot of app.t: read 50 times")
				require.ErrorContains(t, run.err, "Lock wait timeout")
				return
			}
			require.NoError(t, run.err)
			require.Equal(t, map[string]string{"1": "1|r1", "2": "2|r2"}, f.rows["app.t"])
			require.Equal(t, c.fails+1, selects)
			require.Contains(t, strings.Join(p.Queries(), "\n"), "ROLLBACK")
		})
	}
}
