package binlogstream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// dirWorkload writes a binlog over many files (rotated by size and by
// FLUSH BINARY LOGS): split statements, multi-table statements, triggers,
// multi-statement transactions, DDL.
func dirWorkload(t *testing.T, s *mariadb.Server) {
	s.Exec(t,
		"CREATE DATABASE d", "USE d",
		"CREATE TABLE t1 (id INT PRIMARY KEY, v VARCHAR(100))",
		"CREATE TABLE t2 (id INT PRIMARY KEY, n INT, pad VARCHAR(200))",
		"CREATE TABLE log (id INT AUTO_INCREMENT PRIMARY KEY, msg VARCHAR(50))",
		"CREATE TRIGGER t1_ai AFTER INSERT ON t1 FOR EACH ROW INSERT INTO log (msg) VALUES (CONCAT('ins ', NEW.id))",
		"INSERT INTO t1 VALUES (1, 'a'), (2, 'b'), (3, 'c')",
		"INSERT INTO t2 SELECT seq, seq, REPEAT('p', 200) FROM seq_1_to_40",
		"UPDATE t1 JOIN t2 ON t1.id = t2.id SET t1.v = 'x', t2.n = t2.n + 1",
	)
	s.FlushBinaryLogs(t)
	s.Exec(t, "USE d", "ALTER TABLE t2 ADD COLUMN z INT",
		"BEGIN", "INSERT INTO t1 VALUES (4, 'd')", "DELETE FROM t2 WHERE id > 30", "COMMIT")
	s.FlushBinaryLogs(t)
	s.FlushBinaryLogs(t)
	s.Exec(t, "USE d",
		"UPDATE t2 SET pad = REPEAT('q', 150), z = id WHERE id <= 30",
		"DELETE t1, t2 FROM t1 JOIN t2 ON t1.id = t2.id WHERE t1.id = 1")
	for i := 0; i < 5; i++ {
		s.Exec(t, "USE d", fmt.Sprintf("INSERT INTO t1 VALUES (%d, REPEAT('r', 90))", 100+i))
	}
}

func dirSourceOf(t *testing.T, dir string) *binlogstream.DirSource {
	t.Helper()
	src, err := binlogstream.NewDirSource(binlogstream.DirConfig{Dir: dir, PollInterval: 10 * time.Millisecond})
	require.NoError(t, err)
	return src
}

// TestIntegrationDirSource: the files a real MariaDB wrote, read from its
// datadir, give the events, positions and tokens its dump gives; and a
// crash at every event and every row of the offline stream resumes
// exactly, in file and in GTID mode.
func TestIntegrationDirSource(t *testing.T) {
	mariadb.Require(t)
	t.Parallel()
	s := mariadb.Start(t, mariadb.Options{BinlogRowEventMaxSize: 1024, MaxBinlogSize: 4096})
	dirWorkload(t, s)
	target := masterPos(t, s)
	logs := s.BinaryLogs(t)
	require.GreaterOrEqual(t, len(logs), 6, "rotated by size and by FLUSH")
	start := binlogstream.StartAt(binlogstream.Position{File: logs[0].Name, Offset: 4})
	files := dirSourceOf(t, s.DataDir())

	online := itStream(t, itSource(t, s), start, target, binlogstream.Config{}, nil)
	require.NoError(t, online.err)
	var points []struct {
		tok  binlogstream.ResumePosition
		done int
	}
	delivered := 0
	offline := itStream(t, files, start, target, binlogstream.Config{}, func(ev binlogstream.Event) error {
		n := len(itEntries(ev))
		if _, ok := ev.Event.(*replication.RowsEvent); ok {
			for r := 1; r < n; r++ {
				points = append(points, struct {
					tok  binlogstream.ResumePosition
					done int
				}{ev.ResumeAfterRows(r), delivered + r})
			}
		}
		delivered += n
		points = append(points, struct {
			tok  binlogstream.ResumePosition
			done int
		}{ev.Resume, delivered})
		return nil
	})
	require.NoError(t, offline.err)
	require.Equal(t, len(online.events), len(offline.events))
	for i, want := range online.events {
		got := offline.events[i]
		require.Equal(t, want.Header.EventType, got.Header.EventType, "event %d", i)
		require.Equal(t, [3]binlogstream.Position{want.Start, want.End, want.Resume.Streamed}, [3]binlogstream.Position{got.Start, got.End, got.Resume.Streamed}, "event %d", i)
		require.Equal(t, want.Resume, got.Resume, "event %d", i)
		require.Equal(t, want.RawData, got.RawData, "event %d", i)
	}
	require.Equal(t, online.entries, offline.entries)
	t.Logf("%d files, %d events, %d entries, %d resume points", len(logs), len(offline.events), len(offline.entries), len(points))

	for i, p := range points[:len(points)-1] {
		rest := itStream(t, files, reparse(t, p.tok), target, binlogstream.Config{}, nil)
		require.NoError(t, rest.err, "resume point %d", i)
		require.Equal(t, offline.entries, append(append([]string(nil), offline.entries[:p.done]...), rest.entries...),
			"crash at point %d (%d entries done)", i, p.done)
	}

	t.Run("gtid", func(t *testing.T) {
		executed := s.GTIDBinlogPos(t)
		gstart, err := binlogstream.StartAtGTID("mariadb", "")
		require.NoError(t, err)
		run := func(src binlogstream.Source, from binlogstream.ResumePosition) itRun {
			st, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: from})
			require.NoError(t, err)
			require.NoError(t, st.StopAtGTID(executed))
			var r itRun
			st.AddListener(func(_ context.Context, ev binlogstream.Event) error {
				r.entries = append(r.entries, itEntries(ev)...)
				r.events = append(r.events, ev)
				return nil
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r.err = st.Run(ctx)
			require.NoError(t, st.Close())
			return r
		}
		on := run(itSource(t, s), gstart)
		require.NoError(t, on.err)
		off := run(files, gstart)
		require.NoError(t, off.err)
		require.Equal(t, on.entries, off.entries)
		require.Equal(t, len(on.events), len(off.events))
		for i := range on.events {
			require.Equal(t, on.events[i].Resume, off.events[i].Resume, "event %d", i)
		}
		for k := 1; k < len(off.events); k += 3 {
			rest := run(files, reparse(t, off.events[k-1].Resume))
			require.NoError(t, rest.err)
			n := 0
			for _, ev := range off.events[:k] {
				n += len(itEntries(ev))
			}
			require.Equal(t, off.entries, append(append([]string(nil), off.entries[:n]...), rest.entries...), "crash after event %d", k)
		}
		st, err := files.Probe(context.Background())
		require.NoError(t, err)
		assert.Equal(t, executed, st.Executed, "the files' end state is the server's @@gtid_binlog_pos")
		assert.Equal(t, masterPos(t, s), st.Binlog)
	})
}

// TestIntegrationDirSourceAcrossRestarts: files that end with a Stop event
// (SIGTERM) or with nothing (SIGKILL) before the server's next file read
// offline as the restarted server's dump sends them.
func TestIntegrationDirSourceAcrossRestarts(t *testing.T) {
	mariadb.Require(t)
	t.Parallel()
	s := mariadb.Start(t, mariadb.Options{BinlogRowEventMaxSize: 1024})
	s.Exec(t, "CREATE DATABASE d", "USE d", "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(100))",
		"INSERT INTO t SELECT seq, REPEAT('a', 50) FROM seq_1_to_100")
	s.Restart(t) // SIGTERM: the file ends with a Stop event
	s.Exec(t, "USE d", "UPDATE t SET v = 'b' WHERE id % 2 = 0")
	s.Kill() // SIGKILL: the file just ends
	s.Restart(t)
	s.Exec(t, "USE d", "DELETE FROM t WHERE id % 3 = 0")
	logs := s.BinaryLogs(t)
	require.GreaterOrEqual(t, len(logs), 3)
	target := masterPos(t, s)
	start := binlogstream.StartAt(binlogstream.Position{File: logs[0].Name, Offset: 4})

	online := itStream(t, itSource(t, s), start, target, binlogstream.Config{}, nil)
	require.NoError(t, online.err)
	files := dirSourceOf(t, s.DataDir())
	offline := itStream(t, files, start, target, binlogstream.Config{}, nil)
	require.NoError(t, offline.err)
	require.Equal(t, online.entries, offline.entries)
	require.Equal(t, len(online.events), len(offline.events))
	var stops int
	for i := range online.events {
		require.Equal(t, online.events[i].Resume, offline.events[i].Resume, "event %d", i)
		if offline.events[i].Header.EventType == replication.STOP_EVENT {
			stops++
		}
	}
	assert.Positive(t, stops, "a file ends with a Stop event")
	t.Logf("%d files, %d events", len(logs), len(offline.events))
}
