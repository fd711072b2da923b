package binlogstream_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// snapBenchRows is the size of the snapshot benchmarks' table.
const snapBenchRows = 1_000_000

// snapBenchTable makes snap.t: snapBenchRows rows of a mixed-type table.
func snapBenchTable(b *testing.B, s *mariadb.Server) {
	t0 := time.Now()
	s.MixedTable(b, "snap", snapBenchRows)
	b.Logf("table of %d rows written in %s", snapBenchRows, time.Since(t0).Round(time.Millisecond))
}

// snapChunkRowsEnv sets BenchmarkRealSnapshot's --snapshot-chunk-rows
// (unset: the library's default).
const snapChunkRowsEnv = "BINLOGSTREAM_BENCH_CHUNK_ROWS"

// snapBaselineEnv names a second binlog-tail binary (an earlier build)
// that BenchmarkRealSnapshot runs in the same turns, reporting its times
// and binlog-tail's over them.
const snapBaselineEnv = "BINLOGSTREAM_BENCH_BASELINE_TAIL"

// snapBaselineReadersEnv, when set, is the --snapshot-readers of the
// baseline's runs (unset: the same as binlog-tail's): with the baseline
// the same binary, it compares reader counts in turns.
const snapBaselineReadersEnv = "BINLOGSTREAM_BENCH_BASELINE_READERS"

// snapBufferPoolEnv, when set, is the benchmark server's
// innodb_buffer_pool_size (e.g. "512M": the table held in memory; unset:
// the test servers' 64 MiB, smaller than the table, so both tools read
// pages from disk).
const snapBufferPoolEnv = "BINLOGSTREAM_BENCH_BUFFER_POOL"

// BenchmarkRealSnapshot: binlog-tail --snapshot --stop-at-current of a
// 1M-row table to a file against `mariadb-dump --single-transaction
// --quick` of the same table to a file, in turns, with one chunk reader
// and with two. It reports both wall times, their ratio (binlog-tail's
// over the dump tool's), CPU times and binlog-tail's rows/s.
//
// With one reader a third contender runs in the same turns: binlog-tail
// of the same rows from the binlog (the table's INSERTs, from the
// position before them to --stop-at-current), the same lines in the
// same format. Its client CPU against the snapshot's is what a snapshot
// row costs over a binlog row (binlog-path-cpu-s,
// snapshot-cpu/binlog-path-cpu).
func BenchmarkRealSnapshot(b *testing.B) {
	mariadb.Require(b)
	var opts mariadb.Options
	if size := os.Getenv(snapBufferPoolEnv); size != "" {
		opts.ExtraArgs = []string{"--innodb-buffer-pool-size=" + size, "--loose-innodb-buffer-pool-size-max=" + size}
	}
	s := mariadb.Start(b, opts)
	from := realTarget(b, s)
	snapBenchTable(b, s)
	bin := buildBinlogTail(b)
	dir := b.TempDir()
	out, dumpOut, binlogOut := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "dump.sql"), filepath.Join(dir, "binlog.jsonl")
	cpu := func(cmd *exec.Cmd) time.Duration { return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime() }
	for _, readers := range []int{1, 2} {
		b.Run(fmt.Sprintf("readers-%d", readers), func(b *testing.B) {
			var tail, dump, tailCPU, dumpCPU, base, baseCPU, tailSrv, dumpSrv, baseSrv time.Duration
			var fromLog, fromLogCPU time.Duration
			baseline := os.Getenv(snapBaselineEnv)
			runs := 0
			for b.Loop() {
				runs++
				// timeTail runs bin to the file out with args, after the
				// arguments every run has, and times it.
				timeTail := func(bin, name, out string, args ...string) (time.Duration, time.Duration) {
					os.Remove(out)
					os.Remove(out + ".schema")
					args = append([]string{"--dsn", s.DSN(s.ReplUser()), "--out", out, "--stop-at-current", "--tables", "snap.t",
						"--quiet", "--server-id", "506"}, args...)
					if p := os.Getenv("BINLOGSTREAM_TAIL_PROFILE"); p != "" {
						args = append(args, "--cpuprofile", filepath.Join(p, fmt.Sprintf("%s-%d-%d.pprof", name, readers, runs)))
					}
					cmd := exec.Command(bin, args...)
					t0 := time.Now()
					runCmd(b, cmd)
					return time.Since(t0), cpu(cmd)
				}
				runTail := func(bin, name string) (time.Duration, time.Duration) {
					n := strconv.Itoa(readers)
					if r := os.Getenv(snapBaselineReadersEnv); r != "" && name == "baseline" {
						n = r
					}
					args := []string{"--start", "current", "--snapshot", "--snapshot-readers", n}
					if n := os.Getenv(snapChunkRowsEnv); n != "" {
						args = append(args, "--snapshot-chunk-rows", n)
					}
					return timeTail(bin, name, out, args...)
				}
				if baseline != "" {
					srv0 := procCPU(b, s.PID())
					w, c := runTail(baseline, "baseline")
					base += w
					baseCPU += c
					baseSrv += procCPU(b, s.PID()) - srv0
				}
				srv0 := procCPU(b, s.PID())
				w, c := runTail(bin, "snapshot")
				tail += w
				tailCPU += c
				tailSrv += procCPU(b, s.PID()) - srv0

				f, err := os.Create(dumpOut)
				if err != nil {
					b.Fatal(err)
				}
				cmd := exec.Command("mariadb-dump", "--host="+s.Host(), "--port="+strconv.Itoa(s.Port()),
					"--user="+s.ReplUser(), "--password="+s.ReplPassword(), "--single-transaction", "--quick", "snap", "t")
				cmd.Stdout = f
				srv0 = procCPU(b, s.PID())
				t1 := time.Now()
				runCmd(b, cmd)
				dump += time.Since(t1)
				dumpCPU += cpu(cmd)
				dumpSrv += procCPU(b, s.PID()) - srv0
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}

				if readers == 1 {
					w, c := timeTail(bin, "binlog", binlogOut, "--start", fmt.Sprintf("%s:%d", from.File, from.Offset))
					fromLog += w
					fromLogCPU += c
				}
			}
			n := float64(b.N)
			if lines := countLines(b, out); lines < snapBenchRows {
				b.Fatalf("binlog-tail wrote %d lines, want at least %d", lines, snapBenchRows)
			}
			if readers == 1 {
				if lines := countLines(b, binlogOut); lines < snapBenchRows {
					b.Fatalf("binlog-tail from the binlog wrote %d lines, want at least %d", lines, snapBenchRows)
				}
				b.ReportMetric(fromLog.Seconds()/n, "binlog-path-s")
				b.ReportMetric(fromLogCPU.Seconds()/n, "binlog-path-cpu-s")
				b.ReportMetric(tailCPU.Seconds()/fromLogCPU.Seconds(), "snapshot-cpu/binlog-path-cpu")
			}
			b.ReportMetric(tail.Seconds()/n, "binlog-tail-s")
			b.ReportMetric(dump.Seconds()/n, "mariadb-dump-s")
			b.ReportMetric(tail.Seconds()/dump.Seconds(), "binlog-tail/mariadb-dump")
			b.ReportMetric(tailCPU.Seconds()/n, "binlog-tail-cpu-s")
			b.ReportMetric(dumpCPU.Seconds()/n, "mariadb-dump-cpu-s")
			b.ReportMetric(tailSrv.Seconds()/n, "binlog-tail-server-cpu-s")
			b.ReportMetric(dumpSrv.Seconds()/n, "mariadb-dump-server-cpu-s")
			b.ReportMetric(snapBenchRows*n/tail.Seconds(), "binlog-tail-rows/s")
			if baseline != "" {
				b.ReportMetric(baseCPU.Seconds()/n, "baseline-cpu-s")
				b.ReportMetric(baseSrv.Seconds()/n, "baseline-server-cpu-s")
				b.ReportMetric(tail.Seconds()/base.Seconds(), "binlog-tail/baseline")
				b.ReportMetric(tailCPU.Seconds()/baseCPU.Seconds(), "binlog-tail-cpu/baseline")
				b.ReportMetric(base.Seconds()/dump.Seconds(), "baseline/mariadb-dump")
			}
			b.ReportMetric(loadAvg(), "load-avg-1m")
		})
	}
}

// procCPU is the user and system time process pid has used, from
// /proc/pid/stat (in clock ticks of 10 ms).
func procCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command's name, which ends with the last ')':
	// utime and stime are the 12th and 13th.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(f) < 13 {
		b.Fatalf("/proc/%d/stat: %q", pid, data)
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	k, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, data)
	}
	return time.Duration(u+k) * 10 * time.Millisecond
}

// countLines counts the newlines of the file at path.
func countLines(b *testing.B, path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, c := range data {
		if c == '\n' {
			n++
		}
	}
	return n
}

// loadAvg is the machine's 1-minute load average (0 when unreadable):
// the benchmarks report it beside their figures.
func loadAvg() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var v float64
	fmt.Sscan(string(data), &v)
	return v
}

// BenchmarkRealSnapshotStreamCost: the stream's cost of a snapshot
// running beside it. A writer inserts 50 rows every 5 ms into snap.w,
// each holding the server's NOW(6) in microseconds; the streamer delivers them with and
// without a snapshot of the 1M-row table at the same time, in turns.
// Each run lasts as long as the snapshot (a fixed time without one). It
// reports the binlog part's rows/s and its lag (delivery time minus the
// row's NOW(6)), p50 and max, both ways; and the chunk reads' read view
// lifetimes (the time from START TRANSACTION WITH CONSISTENT SNAPSHOT to
// COMMIT, which bounds the undo the snapshot keeps), p50 and max.
func BenchmarkRealSnapshotStreamCost(b *testing.B) {
	mariadb.Require(b)
	s := mariadb.Start(b, mariadb.Options{})
	snapBenchTable(b, s)
	s.Exec(b, "USE snap", "CREATE TABLE w (id BIGINT AUTO_INCREMENT PRIMARY KEY, at BIGINT NOT NULL, v INT)")
	cfg := binlogstream.SyncerConfig{DSN: binlogstream.DSN{User: s.ReplUser(), Password: s.ReplPassword(), Host: s.Host(), Port: uint16(s.Port())},
		ServerID: 507, Flavor: mysql.MariaDBFlavor, HeartbeatPeriod: 100 * time.Millisecond}
	pats, err := binlogstream.ParseTablePatterns("snap.t")
	if err != nil {
		b.Fatal(err)
	}
	var with, without streamCost
	var ages []time.Duration
	defer binlogstream.SnapshotReadAges(func(d time.Duration) { ages = append(ages, d) })()
	window := 3 * time.Second
	for b.Loop() {
		c := streamBeside(b, s, cfg, &binlogstream.SnapshotConfig{Tables: pats}, 0)
		with.add(c)
		if c.took > 0 {
			window = c.took
		}
		without.add(streamBeside(b, s, cfg, nil, window))
	}
	b.ReportMetric(with.rowsPerSec(), "with-snapshot-binlog-rows/s")
	b.ReportMetric(without.rowsPerSec(), "without-binlog-rows/s")
	b.ReportMetric(ms(with.p(0.5)), "with-snapshot-lag-p50-ms")
	b.ReportMetric(ms(with.p(1)), "with-snapshot-lag-max-ms")
	b.ReportMetric(ms(without.p(0.5)), "without-lag-p50-ms")
	b.ReportMetric(ms(without.p(1)), "without-lag-max-ms")
	slices.Sort(ages)
	if len(ages) > 0 {
		b.ReportMetric(ms(ages[len(ages)/2]), "read-view-p50-ms")
		b.ReportMetric(ms(ages[len(ages)-1]), "read-view-max-ms")
		b.ReportMetric(float64(len(ages))/float64(b.N), "chunks")
	}
	b.ReportMetric(loadAvg(), "load-avg-1m")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

// streamCost gathers a run's delivered binlog rows and their lags.
type streamCost struct {
	rows int
	took time.Duration
	lags []time.Duration
}

func (c *streamCost) add(o streamCost) {
	c.rows, c.took, c.lags = c.rows+o.rows, c.took+o.took, append(c.lags, o.lags...)
}

func (c *streamCost) rowsPerSec() float64 { return float64(c.rows) / c.took.Seconds() }

// p is the q-quantile of the lags.
func (c *streamCost) p(q float64) time.Duration {
	if len(c.lags) == 0 {
		return 0
	}
	slices.Sort(c.lags)
	return c.lags[min(int(q*float64(len(c.lags))), len(c.lags)-1)]
}

// streamBeside streams from the server's current end while a writer
// inserts into snap.w, with snap (until the snapshot is read) or for
// window (snap nil).
func streamBeside(b *testing.B, s *mariadb.Server, cfg binlogstream.SyncerConfig, snap *binlogstream.SnapshotConfig, window time.Duration) streamCost {
	src, err := binlogstream.NewSyncerSource(cfg)
	if err != nil {
		b.Fatal(err)
	}
	st, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: binlogstream.StartAt(realTarget(b, s)),
		Snapshot: snap})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var c streamCost
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	snapDone := make(chan struct{})
	var once sync.Once
	st.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		if re, ok := ev.Event.(*replication.RowsEvent); ok && string(re.Table.Table) == "w" {
			now := time.Now()
			for _, row := range re.Rows {
				if at, ok := row[1].(int64); ok {
					c.lags = append(c.lags, now.Sub(time.UnixMicro(at)))
				}
			}
			c.rows += len(re.Rows)
		}
		if snap != nil && st.SnapshotStats().Tables == 0 && st.SnapshotStats().Rows > 0 {
			once.Do(func() { close(snapDone) })
		}
		return nil
	})
	conn := s.Conn(b, mariadb.AppUser)
	defer conn.Close()
	run := make(chan error, 1)
	t0 := time.Now()
	go func() { run <- st.Run(ctx) }()
	stop := time.After(window)
	if snap != nil {
		stop = nil
	}
	vals := ""
	for i := range 50 {
		if i > 0 {
			vals += ", "
		}
		vals += "(CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED), " + strconv.Itoa(i) + ")"
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
write:
	for {
		select {
		case <-stop:
			break write
		case <-snapDone:
			break write
		case err := <-run:
			b.Fatalf("stream ended: %v", err)
		case <-tick.C:
			if _, err := conn.Execute("INSERT INTO snap.w (at, v) VALUES " + vals); err != nil {
				b.Fatal(err)
			}
		}
	}
	c.took = time.Since(t0)
	cancel()
	<-run
	return c
}
