package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// withoutPositions is each line with "file", "pos" and "resume" left out
// (they differ from server to server; the GTIDs do not), re-encoded.
func withoutPositions(t *testing.T, lines [][]byte) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(l, &m), "%s", l)
		delete(m, "file")
		delete(m, "pos")
		delete(m, "resume")
		b, err := json.Marshal(m)
		require.NoError(t, err)
		out = append(out, string(b))
	}
	return out
}

// TestPublishGTIDFailover: binlog-publish --gtid --failover-to REPLICA
// under a live workload on the primary, SIGKILLed once; the primary is
// SIGKILLed and the replica promoted, and the running publisher moves
// over by itself (its refusal would stop it) and publishes the new
// primary's writes; SIGKILLed once more, it continues from the stream.
// The stream then equals binlog-tail --gtid on the promoted server, line
// for line without positions, and a consumer sampling it never saw half
// a batch.
func TestPublishGTIDFailover(t *testing.T) {
	mariadb.Require(t)
	if testing.Short() {
		t.Skip("starts two MariaDB servers and a 3-node NATS cluster")
	}
	p := mariadb.StartPair(t, mariadb.Options{})
	p.Primary.Exec(t, "CREATE DATABASE d", "USE d", "CREATE TABLE w (txn INT, k INT, n INT, pad VARCHAR(40), PRIMARY KEY (txn, k))")
	c := natstest.StartCluster(t, 3)
	js, err := jetstream.New(c.Connect(t))
	require.NoError(t, err)
	args := func(dsn string) []string {
		return []string{"--dsn", dsn, "--gtid", "--start", "oldest", "--nats", c.URLs(), "--stream", "F", "--server-id", "611"}
	}
	live := append(args(p.Primary.DSN(mariadb.ReplUser)), "--failover-to", p.Replica.DSN(mariadb.ReplUser))

	stop := make(chan struct{})
	samples, torn, swg := atomicity(t, js, "F", stop)
	began := time.Now()
	var wwg sync.WaitGroup
	var before, after int
	stopPrimary := make(chan struct{})
	wwg.Go(func() { before = workload(t, p.Primary, stopPrimary) })
	pub := startPublisher(t, live...)
	time.Sleep(1500 * time.Millisecond)
	pub.kill()
	pub = startPublisher(t, live...)
	time.Sleep(1500 * time.Millisecond)

	// A failover without loss: the replica holds everything the primary
	// wrote (a transaction it lacks would make the failover refuse it).
	close(stopPrimary)
	wwg.Wait()
	p.WaitReplicaCaughtUp(t)
	p.Primary.Kill()
	p.Promote(t)
	stopReplica := make(chan struct{})
	wwg.Go(func() { after = workloadFrom(t, p.Replica, before+1, stopReplica) })
	require.Eventually(t, func() bool {
		return strings.Contains(pub.stderr.String(), "failing over to a validated writer")
	}, time.Minute, 50*time.Millisecond, "no failover: %s", pub.stderr.String())
	time.Sleep(1500 * time.Millisecond)
	select {
	case err := <-pub.done:
		t.Fatalf("binlog-publish exited: %v: %s", err, pub.stderr.String())
	default:
	}
	pub.kill()
	t.Logf("the failed-over publisher: %s", strings.TrimSpace(pub.stderr.String()))
	// A restart names the promoted server: the stream's GTID position
	// holds on it.
	pub = startPublisher(t, args(p.Replica.DSN(mariadb.ReplUser))...)
	time.Sleep(time.Second)
	close(stopReplica)
	wwg.Wait()
	close(stop)
	swg.Wait()
	pub.kill()
	finish(t, append(args(p.Replica.DSN(mariadb.ReplUser)), "--quiet"))

	want := bytes.SplitAfter(tailOutput(t, "--dsn", p.Replica.DSN(mariadb.ReplUser), "--gtid", "--start", "oldest"), []byte("\n"))
	want = want[:len(want)-1]
	got := natstest.Payloads(t, js, "F")
	require.Equal(t, withoutPositions(t, want), withoutPositions(t, got))
	assert.Zero(t, torn.Load(), "samples ending inside a batch")
	assert.Positive(t, samples.Load())
	assert.Contains(t, string(got[len(got)-1]), `"gtid":"0-2-`, "the new primary's own transactions")
	t.Logf("%d transactions on the primary, %d on the promoted replica; %d messages equal to binlog-tail's lines without positions; "+
		"2 publisher SIGKILLs, 1 failover; %d samples of the stream's end, none inside a batch; %s",
		before, after, len(got), samples.Load(), time.Since(began).Round(time.Millisecond))
}
