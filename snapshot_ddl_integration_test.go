package binlogstream_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

// DDL while a table is snapshotted: a column added and another dropped
// while its chunks are read and written to, the consumer crashing at
// random. Every read and every change carries the table as of its own
// position, so a consumer that applies each ALTER to the rows it holds
// ends equal to the table.

// ddlFold applies the test's two ALTERs to the rows a snapFold holds.
func ddlFold(f *snapFold, ev binlogstream.Event) {
	q, ok := ev.Event.(*replication.QueryEvent)
	if !ok {
		return
	}
	stmt := string(q.Query)
	if strings.HasPrefix(stmt, "DROP TABLE") && strings.Contains(stmt, "gone") { // the server logs it as DROP TABLE `app`.`gone` /* ... */
		clear(f.rows["app.gone"])
		return
	}
	for k, row := range f.rows["app.d"] {
		parts := strings.Split(row, "|")
		switch {
		case strings.Contains(stmt, "ADD COLUMN w"):
			parts = append(parts, "7")
		case strings.Contains(stmt, "DROP COLUMN pad"):
			parts = append(parts[:2], parts[3:]...)
		default:
			return
		}
		f.rows["app.d"][k] = strings.Join(parts, "|")
	}
}

func TestSnapshotDDLDuringRead(t *testing.T) {
	const rows = 30_000
	srv := snapServer(t)
	srv.Exec(t, "CREATE DATABASE app",
		"CREATE TABLE app.d (id INT PRIMARY KEY, v INT NOT NULL, pad VARCHAR(20) NOT NULL DEFAULT 'q')",
		"CREATE TABLE app.gone (id INT PRIMARY KEY, v INT NOT NULL)",
		"USE app", fmt.Sprintf("INSERT INTO app.d SELECT seq, 0, 'p' FROM seq_1_to_%d", rows),
		fmt.Sprintf("INSERT INTO app.gone SELECT seq, 0 FROM seq_1_to_%d", rows))
	start := binlogstream.StartAt(masterPos(t, srv))
	src := itSource(t, srv)
	pats, err := binlogstream.ParseTablePatterns("app.d,app.gone")
	require.NoError(t, err)
	snap := &binlogstream.SnapshotConfig{Tables: pats, ChunkRows: 500}
	f := newSnapFold(map[string][]string{"app.d": {"id"}, "app.gone": {"id"}})

	// The writer: updates and inserts around the key being read; the
	// ALTERs once a third and two thirds of the table were read; app.gone
	// (read after it) dropped half way through its read; it ends 300
	// statements after that.
	var cursor, read atomic.Int64
	c := srv.Conn(t, "root")
	werr := make(chan error, 1)
	go func() {
		rng := rand.New(rand.NewPCG(7, 8))
		added, dropped, gone, after := false, false, false, 0
		for i := 0; after < 300; i++ {
			near := cursor.Load() + int64(rng.IntN(2000)) - 1000
			q := fmt.Sprintf("UPDATE app.d SET v = v + 1 WHERE id = %d", near)
			switch n := read.Load(); {
			case !added && n > rows/3:
				q, added = "ALTER TABLE app.d ADD COLUMN w INT NOT NULL DEFAULT 7", true
			case added && !dropped && n > rows*2/3:
				q, dropped = "ALTER TABLE app.d DROP COLUMN pad", true
			case dropped && !gone && n > rows*3/2:
				q, gone = "DROP TABLE app.gone", true
			case !gone && i%5 == 0:
				q = fmt.Sprintf("UPDATE app.gone SET v = v + 1 WHERE id = %d", rng.IntN(rows)+1)
			case added && i%3 == 0:
				q = fmt.Sprintf("UPDATE app.d SET w = w + 1 WHERE id = %d", near)
			case i%7 == 0:
				q = fmt.Sprintf("INSERT INTO app.d (id, v) VALUES (%d, 1)", rows+1+i)
			}
			if gone {
				after++
			}
			if _, err := c.Execute(q); err != nil {
				werr <- fmt.Errorf("%s: %w", q, err)
				return
			}
		}
		close(werr)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errCrash := errors.New("crash")
	rng := rand.New(rand.NewPCG(9, 10))
	token, crashes, writing := start, 0, true
	for {
		s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: token, Snapshot: snap})
		require.NoError(t, err)
		s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
			if crashes < 8 && rng.IntN(rows/8) == 0 {
				return errCrash
			}
			ddlFold(f, ev)
			if k := f.apply(ev); k != "" {
				var id int64
				_, _ = fmt.Sscan(k, &id)
				cursor.Store(id)
				read.Add(1)
			}
			token = ev.Resume
			return nil
		})
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		var runErr error
		if writing {
			select {
			case runErr = <-done:
			case err := <-werr:
				require.NoError(t, err)
				writing = false
			}
		}
		if !writing && runErr == nil {
			// The writes are over: run to the server's position, the
			// snapshot complete.
			_, err := s.StopAtCurrent(ctx)
			require.NoError(t, err)
			runErr = <-done
		}
		_ = s.Close()
		require.NoError(t, f.err)
		if runErr == nil {
			break
		}
		require.ErrorIs(t, runErr, errCrash)
		crashes++
	}
	want := tableRows(t, srv, "app.d", []string{"id"})
	require.Equal(t, "id v w", srv.QueryValue(t,
		"SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY ORDINAL_POSITION SEPARATOR ' ') FROM information_schema.COLUMNS WHERE TABLE_NAME = 'd'"),
		"both ALTERs ran")
	require.True(t, maps.Equal(want, f.rows["app.d"]), "the fold (%d rows) equals the table (%d rows)", len(f.rows["app.d"]), len(want))
	require.Empty(t, f.rows["app.gone"], "the dropped table folds empty")
	t.Logf("%d reads, %d row changes, %d crashes", f.reads, f.changes, crashes)
}
