package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

const (
	killRowsA = 30000 // rows of d.a before the first run
	killRowsB = 8000  // rows of d.b
)

func killSchema(t *testing.T, src *mariadb.Server) {
	src.Exec(t, "CREATE DATABASE d", "USE d",
		"CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(200), n BIGINT)",
		"CREATE TABLE b (k1 INT, k2 VARCHAR(16), note TEXT, PRIMARY KEY (k1, k2))",
		"CREATE TABLE other (id INT AUTO_INCREMENT PRIMARY KEY, x INT, pad VARCHAR(200))",
		fmt.Sprintf("INSERT INTO a SELECT seq, REPEAT('v', seq %% 150), seq FROM seq_1_to_%d", killRowsA),
		fmt.Sprintf("INSERT INTO b SELECT seq, CONCAT('k', seq %% 7), REPEAT('n', seq %% 300) FROM seq_1_to_%d", killRowsB))
}

// workload writes to the source until ctx ends: multi-row statements split
// into many rows events, multi-table transactions, rollbacks, primary key
// updates of both tables, and traffic on a table that is not replicated.
// It rides out the source's restart by reconnecting.
func workload(ctx context.Context, s *mariadb.Server, seed uint64, stmts *atomic.Int64) {
	rnd := rand.New(rand.NewPCG(seed, 1))
	var c *client.Conn
	for i := 0; ctx.Err() == nil; i++ {
		if c == nil {
			var err error
			if c, err = conn(s); err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			if _, err := c.Execute("USE d"); err != nil {
				c.Close()
				c = nil
				continue
			}
		}
		x := 1 + rnd.IntN(killRowsA)
		var sql []string
		switch i % 8 {
		case 0: // one statement, many rows events
			base := 100000 + i*300
			sql = []string{fmt.Sprintf("INSERT INTO a SELECT %d + seq, REPEAT('w', 120), seq FROM seq_1_to_%d", base, 50+rnd.IntN(250))}
		case 1:
			sql = []string{fmt.Sprintf("UPDATE a SET n = n + 1, v = CONCAT(LEFT(v, 60), 'u') WHERE id BETWEEN %d AND %d", x, x+200)}
		case 2: // multi-table transaction
			sql = []string{"BEGIN",
				fmt.Sprintf("INSERT INTO b VALUES (%d, 'w%d', 'multi')", 100000+i, i),
				fmt.Sprintf("UPDATE a SET n = -n WHERE id = %d", x),
				fmt.Sprintf("DELETE FROM b WHERE k1 = %d", 1+rnd.IntN(killRowsB)),
				"COMMIT"}
		case 3: // rolled back: nothing in the binlog
			sql = []string{"BEGIN", fmt.Sprintf("INSERT INTO a VALUES (%d, 'rolled back', 0)", 90000+i%1000),
				fmt.Sprintf("DELETE FROM a WHERE id BETWEEN %d AND %d", x, x+30), "ROLLBACK"}
		case 4: // primary key updates (moved rows never move again: ids past 1000000)
			sql = []string{fmt.Sprintf("UPDATE a SET id = id + 1000000 WHERE id BETWEEN %d AND %d ORDER BY id DESC", x, x+20),
				fmt.Sprintf("UPDATE b SET k2 = CONCAT(k2, 'x') WHERE k1 = %d AND LENGTH(k2) < 12", 1+rnd.IntN(killRowsB))}
		case 5:
			sql = []string{fmt.Sprintf("DELETE FROM a WHERE id BETWEEN %d AND %d", x, x+40)}
		case 6: // not replicated
			sql = []string{"INSERT INTO other (x, pad) SELECT seq, REPEAT('o', 150) FROM seq_1_to_100"}
		case 7:
			sql = []string{fmt.Sprintf("UPDATE b SET note = CONCAT('updated ', %d) WHERE k1 BETWEEN %d AND %d", i, x%killRowsB, x%killRowsB+50)}
		}
		for _, q := range sql {
			if _, err := c.Execute(q); err != nil {
				c.Close() // the source restarting, most likely: start over
				c = nil
				break
			}
			stmts.Add(1)
		}
		time.Sleep(time.Duration(rnd.IntN(8)) * time.Millisecond)
	}
	if c != nil {
		c.Close()
	}
}

// The replicator is SIGKILLed at random many times, during the snapshot
// and while streaming a live workload, and the source is SIGKILLed and
// restarted once in the middle; at the end the tables are identical to the
// source's, and no run failed (no duplicate key, no missing row).
func TestReplicateKilledAtRandom(t *testing.T) {
	mariadb.Require(t)
	src := mariadb.Start(t, mariadb.Options{BinlogRowEventMaxSize: 1024, MaxBinlogSize: 256 << 10})
	tgt := mariadb.Start(t, mariadb.Options{ServerID: 2})
	killSchema(t, src)
	r := &rig{src: src, tgt: tgt, args: []string{"--tables", "d.a,d.b", "--chunk", "500", "--batch", "50",
		"--checkpoint-interval", "200ms", "--heartbeat", "200ms"}}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 2))

	ctx, stopWorkload := context.WithCancel(context.Background())
	var stmts atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); workload(ctx, src, seed, &stmts) }()
	defer func() { stopWorkload(); wg.Wait() }()

	// The first kills land in the snapshot: each once the run has
	// committed something (a chunk, mostly), at a random moment after, so
	// they fall inside a chunk's delivery and between chunks. Once the
	// snapshot is done, the rest land while streaming.
	const kills, snapshotKills = 24, 10
	var inSnapshot, streaming, scans, cutScans int
	for k := range kills {
		before := checkpoint(tgt)
		cmd, stderr := r.start(t)
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		alive := func(d time.Duration) {
			select {
			case err := <-exited:
				t.Fatalf("run %d exited by itself (%v) before its kill:\n%s", k, err, stderr)
			case <-time.After(d):
			}
		}
		switch {
		case k == 0 || k == 1:
			// In the middle of the snapshot of d.a (an integer key), then
			// of d.b (a composite key with a VARCHAR): each resumes where
			// its checkpoint stands, inside the table.
			tbl, rows := [...]string{"d.a", "d.b"}[k], [...]uint64{killRowsA / 3, killRowsB / 4}[k]
			require.Eventually(t, func() bool { return midCopy(tgt, tbl, rows) }, 60*time.Second, time.Millisecond,
				"%s never mid-copy:\n%s", tbl, stderr)
		case k < snapshotKills && snapshotPending(t, tgt):
			require.Eventually(t, func() bool { return checkpoint(tgt) != before }, 60*time.Second, 2*time.Millisecond,
				"run %d commits nothing:\n%s", k, stderr)
			// Soon after: a run copies thousands of rows a second, and
			// the snapshot must last for several kills.
			alive(time.Duration(rnd.IntN(60)) * time.Millisecond)
		default:
			require.Eventually(t, func() bool { return !snapshotPending(t, tgt) }, 120*time.Second, 10*time.Millisecond,
				"the snapshot never ends:\n%s", stderr)
			alive(time.Duration(200+rnd.IntN(1200)) * time.Millisecond)
		}
		if k == kills/2 {
			// The source dies under the running replicator and the
			// workload; the replicator reconnects once it is back.
			src.Kill()
			time.Sleep(300 * time.Millisecond)
			src.Restart(t)
			select {
			case err := <-exited:
				t.Fatalf("run %d exited (%v) when the source restarted:\n%s", k, err, stderr)
			case <-time.After(1500 * time.Millisecond):
			}
		}
		if snapshotPending(t, tgt) {
			inSnapshot++
		} else {
			streaming++
		}
		require.NoError(t, cmd.Process.Kill())
		<-exited
		assert.NotContains(t, stderr.String(), "level=error", "run %d", k)
		// A scan cut by the kill is read again by the next run; one that
		// finished is recorded and never read again.
		scans += strings.Count(stderr.String(), "read the binlog up to the schema snapshot's position: recorded")
		cutScans += strings.Count(stderr.String(), "reading the binlog up to the schema snapshot's position") -
			strings.Count(stderr.String(), "read the binlog up to the schema snapshot's position: recorded")
		if k == kills/2 {
			// It notices once it has applied the events read ahead of
			// the lost connection (up to 1024 queued): a replicator that
			// lags the workload may take longer than the wait here, so
			// the reconnect is logged, not required.
			t.Logf("run %d while the source restarted: reconnect logged: %v", k, strings.Contains(stderr.String(), "reconnecting"))
		}
	}
	stopWorkload()
	wg.Wait()
	res := r.run(t, "--stop-at-current")
	require.Equal(t, 0, res.code, res.stderr)
	t.Logf("%d kills (%d in the snapshot, %d streaming), source restarted once, %d workload statements; last run: %s",
		kills, inSnapshot, streaming, stmts.Load(), res.stderr[strings.LastIndex(res.stderr, "binlog-replicate stopped"):])
	require.GreaterOrEqual(t, inSnapshot, 6, "kills during the snapshot")
	// The schema history lives in the target: one information_schema
	// snapshot and at most one read of the binlog up to it, not one per run.
	records := tgt.QueryValue(t, "SELECT COUNT(*) FROM binlogstream.schema_history")
	t.Logf("schema history: %s records, %d DDL scans finished, %d cut by a kill", records, scans, cutScans)
	assert.LessOrEqual(t, scans, 1)
	assert.Contains(t, []string{"1", "2"}, records)
	require.GreaterOrEqual(t, streaming, 10, "kills while streaming")
	for _, tc := range []struct{ table, order string }{{"d.a", "id"}, {"d.b", "k1, k2"}} {
		want, got := dump(t, src, tc.table, tc.order), dump(t, tgt, tc.table, tc.order)
		require.Equal(t, len(want), len(got), tc.table)
		require.True(t, slices.Equal(want, got), "%s differs", tc.table) // not Equal: thousands of lines on failure
		t.Logf("%s: %d rows identical", tc.table, len(want))
	}
}

// snapshotPending reports whether the target's checkpoint has tables left
// to read (or no checkpoint yet).
func snapshotPending(t *testing.T, tgt *mariadb.Server) bool {
	tok := tgt.QueryValue(t, "SELECT COALESCE((SELECT token FROM binlogstream.checkpoint), '')")
	if tok == "" {
		return true
	}
	r, err := binlogstream.ParseResumePosition(tok)
	require.NoError(t, err)
	return r.SnapshotPending()
}

// midCopy reports whether the target holds part of tbl's snapshot, at
// least rows rows, and its checkpoint has the snapshot still to finish.
func midCopy(tgt *mariadb.Server, tbl string, rows uint64) bool {
	c, err := conn(tgt)
	if err != nil {
		return false
	}
	defer c.Close()
	r, err := c.Execute("SELECT (SELECT COUNT(*) FROM " + tbl + "), (SELECT token FROM binlogstream.checkpoint)")
	if err != nil || r.RowNumber() == 0 {
		return false
	}
	n, _ := r.GetUint(0, 0)
	tok, _ := r.GetString(0, 1)
	p, err := binlogstream.ParseResumePosition(tok)
	return err == nil && n >= rows && p.SnapshotPending()
}
