package main

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// waitCheckpoint waits until the target's checkpoint is at or past the
// source's current binlog position.
func waitCheckpoint(t *testing.T, src, tgt *mariadb.Server, timeout time.Duration) binlogstream.ResumePosition {
	t.Helper()
	file, pos := src.MasterStatus(t)
	want := binlogstream.Position{File: file, Offset: pos}
	deadline := time.Now().Add(timeout)
	for {
		tok := checkpoint(tgt) // "" until the replicator made its tables
		if tok != "" {
			r, err := binlogstream.ParseResumePosition(tok)
			require.NoError(t, err)
			if r.Streamed.Compare(want) >= 0 {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("checkpoint %s did not reach %s in %v", r.Streamed, want, timeout)
			}
		} else if time.Now().After(deadline) {
			t.Fatalf("no checkpoint in %v", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkpointReaches is waitCheckpoint reporting a timeout instead of
// failing.
func checkpointReaches(t *testing.T, src, tgt *mariadb.Server, timeout time.Duration) bool {
	t.Helper()
	file, pos := src.MasterStatus(t)
	want := binlogstream.Position{File: file, Offset: pos}
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if tok := checkpoint(tgt); tok != "" {
			r, err := binlogstream.ParseResumePosition(tok)
			require.NoError(t, err)
			if r.Streamed.Compare(want) >= 0 {
				return true
			}
		}
	}
	return false
}

func checkpoint(s *mariadb.Server) string {
	c, err := conn(s)
	if err != nil {
		return ""
	}
	defer c.Close()
	r, err := c.Execute("SELECT token FROM binlogstream.checkpoint")
	if err != nil || r.RowNumber() == 0 {
		return ""
	}
	tok, _ := r.GetString(0, 0)
	return tok
}

// A long stretch of traffic on tables the replicator filters out (many
// small transactions, then one large one) is covered by checkpoints: a
// replicator SIGKILLed afterwards restarts without reading it again.
func TestReplicateFilteredTrafficNotReplayed(t *testing.T) {
	mariadb.Require(t)
	src := mariadb.Start(t, mariadb.Options{})
	tgt := mariadb.Start(t, mariadb.Options{ServerID: 2})
	src.Exec(t, "CREATE DATABASE d", "USE d",
		"CREATE TABLE a (id INT PRIMARY KEY, v INT)",
		"CREATE TABLE other (id INT AUTO_INCREMENT PRIMARY KEY, x INT, pad VARCHAR(100))",
		"INSERT INTO a SELECT seq, seq FROM seq_1_to_100")
	r := &rig{src: src, tgt: tgt, args: []string{"--tables", "d.a", "--checkpoint-interval", "100ms", "--heartbeat", "100ms"}}
	cmd, stderr := r.start(t)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	waitCheckpoint(t, src, tgt, 20*time.Second)

	// The unrelated traffic: 2000 transactions of 20 rows, then one of
	// 100000 rows (a few hundred rows events), and one change of d.a.
	file0, pos0 := src.MasterStatus(t)
	c, err := conn(src)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Execute("USE d")
	require.NoError(t, err)
	began := time.Now()
	for i := range 2000 {
		_, err := c.Execute(fmt.Sprintf("INSERT INTO d.other (x, pad) SELECT seq, REPEAT('p', %d) FROM seq_1_to_20", 50+i%50))
		require.NoError(t, err)
	}
	_, err = c.Execute("INSERT INTO d.other (x, pad) SELECT seq, REPEAT('q', 80) FROM seq_1_to_100000")
	require.NoError(t, err)
	_, err = c.Execute("UPDATE d.a SET v = v + 1 WHERE id = 1")
	require.NoError(t, err)
	_, err = c.Execute("INSERT INTO d.other (x) VALUES (1)")
	require.NoError(t, err)
	file1, pos1 := src.MasterStatus(t)
	var events int
	for _, f := range src.BinaryLogs(t) {
		if f.Name < file0 {
			continue
		}
		for _, e := range src.BinlogEvents(t, f.Name) {
			if (f.Name > file0 || e.Pos >= pos0) && (f.Name < file1 || e.Pos < pos1) {
				events++
			}
		}
	}
	t.Logf("unrelated traffic: %d binlog events (%s:%d to %s:%d) written in %v", events, file0, pos0, file1, pos1,
		time.Since(began).Round(time.Millisecond))
	if !checkpointReaches(t, src, tgt, 30*time.Second) {
		// Why: the replicator's log and its goroutines (SIGQUIT).
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		<-exited
		exited <- nil
		t.Fatalf("the checkpoint did not reach the end of the traffic in 30s; the replicator's stderr:\n%s", stderr)
	}
	select {
	case err := <-exited:
		t.Fatalf("the replicator exited (%v):\n%s", err, stderr)
	default:
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))

	res := r.run(t, "--stop-at-current")
	require.Equal(t, 0, res.code, res.stderr)
	replayed := stat(t, res.stderr, "delivered") + stat(t, res.stderr, "dropped_at_start")
	t.Logf("restart after the traffic: %d events read again (delivered or dropped as replayed) of %d", replayed, events)
	assert.LessOrEqual(t, replayed, 5, "the restart reads the unrelated traffic again")
	require.Greater(t, events, 5000)
	assert.Equal(t, dump(t, src, "d.a", "id"), dump(t, tgt, "d.a", "id"))
}
