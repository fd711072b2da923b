package binlogstream_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// snapIdleRows is the size of BenchmarkRealSnapshotIdle's table.
const snapIdleRows = 30_000

// BenchmarkRealSnapshotIdle: binlog-tail --snapshot --stop-at-current of
// a 30k-row table on an idle server (nothing else writes), against the
// time to read the same table: `mariadb --quick -e 'SELECT * FROM t'` to
// a file. A snapshot that waited for heartbeats to pass its chunks'
// positions would show here as a wall time of whole heartbeat periods
// (binlog-tail's is 1 s) on top of the read.
func BenchmarkRealSnapshotIdle(b *testing.B) {
	mariadb.Require(b)
	s := mariadb.Start(b, mariadb.Options{})
	s.Exec(b, "CREATE DATABASE idle", "USE idle",
		"CREATE TABLE t (id BIGINT PRIMARY KEY, a VARCHAR(40) NOT NULL, b DECIMAL(12,4), c DATETIME(6), d INT)",
		fmt.Sprintf("INSERT INTO t SELECT seq, CONCAT('customer-', seq), seq / 7, '2024-01-02 03:04:05.123456' + INTERVAL seq SECOND, -seq "+
			"FROM seq_1_to_%d", snapIdleRows))
	bin := buildBinlogTail(b)
	dir := b.TempDir()
	out, readOut := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "read.tsv")
	cpu := func(cmd *exec.Cmd) time.Duration { return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime() }
	var tail, read, tailCPU time.Duration
	for b.Loop() {
		os.Remove(out)
		os.Remove(out + ".schema")
		cmd := exec.Command(bin, "--dsn", s.DSN(s.ReplUser()), "--out", out, "--start", "current", "--stop-at-current",
			"--snapshot", "--tables", "idle.t", "--quiet", "--server-id", "507")
		t0 := time.Now()
		runCmd(b, cmd)
		tail += time.Since(t0)
		tailCPU += cpu(cmd)

		f, err := os.Create(readOut)
		if err != nil {
			b.Fatal(err)
		}
		cmd = exec.Command("mariadb", "--host="+s.Host(), "--port="+strconv.Itoa(s.Port()),
			"--user="+s.ReplUser(), "--password="+s.ReplPassword(), "--quick", "-e", "SELECT * FROM idle.t")
		cmd.Stdout = f
		t1 := time.Now()
		runCmd(b, cmd)
		read += time.Since(t1)
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	if lines := countLines(b, out); lines < snapIdleRows {
		b.Fatalf("binlog-tail wrote %d lines, want at least %d", lines, snapIdleRows)
	}
	n := float64(b.N)
	b.ReportMetric(tail.Seconds()/n, "binlog-tail-s")
	b.ReportMetric(read.Seconds()/n, "select-s")
	b.ReportMetric(tail.Seconds()/read.Seconds(), "binlog-tail/select")
	b.ReportMetric(tailCPU.Seconds()/n, "binlog-tail-cpu-s")
	b.ReportMetric(loadAvg(), "load-avg-1m")
}
