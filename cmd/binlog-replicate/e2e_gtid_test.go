package main

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// GTID mode: the replicator is SIGKILLed a few times under the workload,
// then the source primary is SIGKILLed and its replica promoted; the
// running replicator fails over to it (--failover) and applies what the
// new primary writes. The tables end identical to the new primary's.
func TestReplicateGTIDFailover(t *testing.T) {
	p := mariadb.StartPair(t, mariadb.Options{BinlogRowEventMaxSize: 1024})
	tgt := mariadb.Start(t, mariadb.Options{ServerID: 3})
	killSchema(t, p.Primary)
	r := &rig{src: p.Primary, tgt: tgt, args: []string{"--tables", "d.a,d.b", "--gtid", "--batch", "50",
		"--failover", p.Replica.DSN(mariadb.ReplUser), "--checkpoint-interval", "200ms", "--heartbeat", "200ms"}}

	ctx, stopWorkload := context.WithCancel(context.Background())
	var stmts atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); workload(ctx, p.Primary, 7, &stmts) }()
	defer func() { stopWorkload(); wg.Wait() }()
	for k := range 4 {
		cmd, stderr := r.start(t)
		time.Sleep(time.Duration(400+300*k) * time.Millisecond)
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
		require.NotContains(t, stderr.String(), "binlog-replicate: ", "run %d failed before its kill", k)
	}

	cmd, stderr := r.start(t)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	time.Sleep(500 * time.Millisecond)
	stopWorkload()
	wg.Wait()
	p.WaitReplicaCaughtUp(t)
	p.Primary.Kill()
	newPrimary := p.Promote(t)
	newPrimary.Exec(t, "USE d",
		"INSERT INTO a SELECT 5000000 + seq, 'after failover', seq FROM seq_1_to_500",
		"UPDATE b SET note = 'after failover' WHERE k1 < 100",
		"DELETE FROM a WHERE id BETWEEN 100 AND 200")
	want := dump(t, newPrimary, "d.a", "id")
	deadline := time.Now().Add(45 * time.Second)
	for !slices.Equal(want, dump(t, tgt, "d.a", "id")) {
		select {
		case err := <-exited:
			t.Fatalf("the replicator exited (%v):\n%s", err, stderr)
		default:
		}
		require.True(t, time.Now().Before(deadline), "the target did not catch up with the new primary:\n%s", stderr)
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, <-exited, stderr.String())
	require.Equal(t, 1, stat(t, stderr.String(), "failovers"), stderr.String())
	require.Equal(t, dump(t, newPrimary, "d.b", "k1, k2"), dump(t, tgt, "d.b", "k1, k2"))
	t.Logf("%d workload statements, 4 kills, 1 failover; d.a %d rows identical", stmts.Load(), len(want))
}
