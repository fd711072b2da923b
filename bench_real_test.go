package binlogstream_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// Benchmarks on a real MariaDB binlog (testhelpers/mariadb). They skip
// when mariadbd is not installed (make bench says so). Each benchmark
// function starts its own server and writes its binlog once; the
// sub-benchmarks then read the same bytes.
//
//   - BenchmarkRealMariaDB/syncer-vs-streamer: a bare go-mysql BinlogSyncer
//     loop with the SyncerSource's settings against the streamer with a
//     no-op listener, alternating in every iteration.
//   - BenchmarkRealMariaDB/binlog-tail-vs-mariadb-binlog: the built
//     binlog-tail (--start oldest --stop-at-current --quiet) against
//     `mariadb-binlog -R -v --base64-output=decode-rows` of every file.
//   - BenchmarkRealMariaDB/offline-binlog-tail-vs-mariadb-binlog: the
//     same binlog read from its files: binlog-tail --binlog-dir against
//     `mariadb-binlog -v FILES`, both to a file, and the library alone.
//   - BenchmarkRealSmallEvents: the syncer-vs-streamer comparison on a
//     binlog of one-row events.
//   - BenchmarkRealResumeInLargeTransaction: a resume after 900k of the
//     rows of a 1M-row INSERT ... SELECT, against streaming those rows.
//   - BenchmarkRealHugeTransaction: the peak RSS of a process streaming one
//     transaction of 1 GiB of row events, against the same process streaming
//     one of 64 MiB (library with a listener that drops rows, and
//     binlog-tail).

// realRows is the number of row changes of the BenchmarkRealMariaDB binlog:
// 400k inserts in transactions of 10k, 100k updates, 50k deletes.
const realRows = 550_000

// realWorkload writes the benchmark's binlog (the README table of
// docs/performance.md): a table of a few INT and VARCHAR columns.
func realWorkload(b *testing.B, s *mariadb.Server) {
	s.Exec(b, "CREATE DATABASE bench", "USE bench",
		"CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(40), c VARCHAR(60), d INT)")
	for i := 0; i < 400_000; i += 10_000 {
		s.Exec(b, "USE bench", fmt.Sprintf("INSERT INTO t SELECT seq, seq*7, CONCAT('name-', seq), "+
			"REPEAT(CHAR(97 + seq %% 26), 5 + seq %% 20), seq %% 1000 FROM seq_%d_to_%d", i+1, i+10_000))
	}
	s.Exec(b, "USE bench",
		"UPDATE t SET a = a + 1, b = CONCAT(b, '-u') WHERE id % 4 = 0",
		"DELETE FROM t WHERE id % 8 = 1")
}

// realTarget is where the server's binlog ends now.
func realTarget(b *testing.B, s *mariadb.Server) binlogstream.Position {
	f, p := s.MasterStatus(b)
	return binlogstream.Position{File: f, Offset: p}
}

func BenchmarkRealMariaDB(b *testing.B) {
	mariadb.Require(b)
	s := mariadb.Start(b, mariadb.Options{})
	t0 := time.Now()
	realWorkload(b, s)
	logs := s.BinaryLogs(b)
	var size uint64
	var files []string
	for _, l := range logs {
		size += l.Size
		files = append(files, l.Name)
	}
	target := realTarget(b, s)
	b.Logf("binlog: %d files, %.1f MB, written in %s", len(files), float64(size)/1e6, time.Since(t0).Round(time.Millisecond))
	cfg := binlogstream.SyncerConfig{DSN: binlogstream.DSN{User: s.ReplUser(), Password: s.ReplPassword(), Host: s.Host(), Port: uint16(s.Port())},
		ServerID: 501, Flavor: mysql.MariaDBFlavor, HeartbeatPeriod: time.Second}
	start := binlogstream.Position{File: files[0], Offset: 4}

	b.Run("syncer-vs-streamer", func(b *testing.B) { compareToSyncer(b, cfg, start, target, realRows) })

	b.Run("binlog-tail-vs-mariadb-binlog", func(b *testing.B) {
		bin := buildBinlogTail(b)
		dir := b.TempDir()
		out := filepath.Join(dir, "out.jsonl")
		toolOut := filepath.Join(dir, "out.sql")
		dsn := s.DSN(s.ReplUser())
		var tail, tool, toolFile time.Duration
		var outBytes int64
		for b.Loop() {
			os.Remove(out)
			t0 := time.Now()
			runCmd(b, exec.Command(bin, "--dsn", dsn, "--out", out, "--start", "oldest", "--stop-at-current", "--quiet", "--server-id", "502"))
			t1 := time.Now()
			t2 := time.Now()
			args := []string{"--read-from-remote-server", "--host=" + s.Host(), "--port=" + strconv.Itoa(s.Port()),
				"--user=" + s.ReplUser(), "--password=" + s.ReplPassword(), "-v", "--base64-output=decode-rows"}
			tail += t1.Sub(t0)
			cmd := exec.Command("mariadb-binlog", append(args, files...)...)
			cmd.Stdout = nil // /dev/null
			runCmd(b, cmd)
			t3 := time.Now()
			tool += t3.Sub(t2)
			// The same into a file, as binlog-tail has to write one.
			f, err := os.Create(toolOut)
			if err != nil {
				b.Fatal(err)
			}
			cmd = exec.Command("mariadb-binlog", append(args, files...)...)
			cmd.Stdout = f
			runCmd(b, cmd)
			f.Close()
			toolFile += time.Since(t3)
			st, err := os.Stat(out)
			if err != nil {
				b.Fatal(err)
			}
			outBytes = st.Size()
		}
		n := float64(b.N)
		b.ReportMetric(tail.Seconds()/n, "binlog-tail-s")
		b.ReportMetric(tool.Seconds()/n, "mariadb-binlog-s")
		b.ReportMetric(toolFile.Seconds()/n, "mariadb-binlog-to-file-s")
		b.ReportMetric(tail.Seconds()/tool.Seconds(), "binlog-tail/mariadb-binlog")
		b.ReportMetric(realRows*n/tail.Seconds(), "binlog-tail-rows/s")
		b.ReportMetric(float64(outBytes)/1e6, "out-MB")
	})

	b.Run("offline-binlog-tail-vs-mariadb-binlog", func(b *testing.B) { compareOffline(b, s.DataDir(), files) })
}

// compareOffline times the built binlog-tail reading the binlog files of
// dir (--binlog-dir, no server) against `mariadb-binlog -v` of the same
// files, both writing a file, alternating in every iteration; and the
// library alone (DirSource, streamer, no-op listener).
func compareOffline(b *testing.B, dir string, files []string) {
	bin := buildBinlogTail(b)
	tmp := b.TempDir()
	out := filepath.Join(tmp, "out.jsonl")
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join(dir, f))
	}
	// CPU time (user+system) too: on a shared machine it varies less
	// than wall time.
	cpu := func(cmd *exec.Cmd) time.Duration { return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime() }
	var tailCPU, toolCPU time.Duration
	tool := func(out string, args ...string) time.Duration {
		f, err := os.Create(out)
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command("mariadb-binlog", append(args, paths...)...)
		cmd.Stdout = f
		runCmd(b, cmd)
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		return cpu(cmd)
	}
	var tail, toolV, toolRows, lib time.Duration
	var outBytes, toolBytes int64
	for b.Loop() {
		os.Remove(out)
		t0 := time.Now()
		cmd := exec.Command(bin, "--binlog-dir", dir, "--out", out, "--start", "oldest", "--stop-at-current", "--quiet")
		runCmd(b, cmd)
		tailCPU += cpu(cmd)
		t1 := time.Now()
		toolCPU += tool(filepath.Join(tmp, "v.sql"), "-v")
		t2 := time.Now()
		tool(filepath.Join(tmp, "rows.sql"), "-v", "--base64-output=decode-rows")
		t3 := time.Now()
		rows := offlineStreamerLoop(b, dir)
		t4 := time.Now()
		if rows != realRows {
			b.Fatalf("the library delivered %d row changes, want %d", rows, realRows)
		}
		tail, toolV, toolRows, lib = tail+t1.Sub(t0), toolV+t2.Sub(t1), toolRows+t3.Sub(t2), lib+t4.Sub(t3)
		st, err := os.Stat(out)
		if err != nil {
			b.Fatal(err)
		}
		outBytes = st.Size()
		if st, err = os.Stat(filepath.Join(tmp, "v.sql")); err == nil {
			toolBytes = st.Size()
		}
	}
	n := float64(b.N)
	b.ReportMetric(tail.Seconds()/n, "binlog-tail-s")
	b.ReportMetric(toolV.Seconds()/n, "mariadb-binlog-v-s")
	b.ReportMetric(toolRows.Seconds()/n, "mariadb-binlog-decode-rows-s")
	b.ReportMetric(tail.Seconds()/toolV.Seconds(), "binlog-tail/mariadb-binlog-v")
	b.ReportMetric(tailCPU.Seconds()/n, "binlog-tail-cpu-s")
	b.ReportMetric(toolCPU.Seconds()/n, "mariadb-binlog-v-cpu-s")
	b.ReportMetric(lib.Seconds()/n, "library-s")
	b.ReportMetric(realRows*n/lib.Seconds(), "library-rows/s")
	b.ReportMetric(float64(outBytes)/1e6, "out-MB")
	b.ReportMetric(float64(toolBytes)/1e6, "mariadb-binlog-v-MB")
}

// offlineStreamerLoop streams the files of dir to their end through a
// DirSource with a listener that counts row changes.
func offlineStreamerLoop(b *testing.B, dir string) (rows int) {
	src, err := binlogstream.NewDirSource(binlogstream.DirConfig{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	names, err := src.Files()
	if err != nil {
		b.Fatal(err)
	}
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src,
		Start: binlogstream.StartAt(binlogstream.Position{File: names[0], Offset: 4})})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		rows += binlogstream.RowChanges(ev.BinlogEvent)
		return nil
	})
	ctx := context.Background()
	if _, err := s.StopAtCurrent(ctx); err != nil {
		b.Fatal(err)
	}
	if err := s.Run(ctx); err != nil {
		b.Fatal(err)
	}
	return rows
}

// smallTxns × 4 single-row INSERT statements make BenchmarkRealSmallEvents'
// binlog.
const smallTxns = 25_000

// BenchmarkRealSmallEvents is BenchmarkRealMariaDB/syncer-vs-streamer on
// a binlog of small events, the streamer's worst case: 25k transactions
// of 4 single-row INSERT statements, each its own Annotate_rows,
// Table_map and one-row Write_rows (15 events per transaction), written by
// a stored procedure.
func BenchmarkRealSmallEvents(b *testing.B) {
	mariadb.Require(b)
	s := mariadb.Start(b, mariadb.Options{})
	t0 := time.Now()
	s.Exec(b, "CREATE DATABASE bench", "USE bench",
		"CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(40))",
		`CREATE PROCEDURE fill(n INT)
		BEGIN
			DECLARE i INT DEFAULT 0;
			WHILE i < n DO
				START TRANSACTION;
				INSERT INTO t VALUES (4*i, i, CONCAT('name-', i));
				INSERT INTO t VALUES (4*i+1, i, CONCAT('name-', i));
				INSERT INTO t VALUES (4*i+2, i, CONCAT('name-', i));
				INSERT INTO t VALUES (4*i+3, i, CONCAT('name-', i));
				COMMIT;
				SET i = i + 1;
			END WHILE;
		END`)
	logs := s.BinaryLogs(b)
	start := binlogstream.Position{File: logs[len(logs)-1].Name, Offset: 4}
	s.Exec(b, "USE bench", fmt.Sprintf("CALL fill(%d)", smallTxns))
	target := realTarget(b, s)
	b.Logf("binlog: %.1f MB, written in %s", float64(target.Offset)/1e6, time.Since(t0).Round(time.Millisecond))
	cfg := binlogstream.SyncerConfig{DSN: binlogstream.DSN{User: s.ReplUser(), Password: s.ReplPassword(), Host: s.Host(), Port: uint16(s.Port())},
		ServerID: 505, Flavor: mysql.MariaDBFlavor, HeartbeatPeriod: time.Second}
	compareToSyncer(b, cfg, start, target, 4*smallTxns)
}

// compareToSyncer streams start..target with a bare go-mysql loop and the
// streamer, alternating, each run on a collected heap, and reports their
// rates and time ratio. Every run must see wantRows row changes.
func compareToSyncer(b *testing.B, cfg binlogstream.SyncerConfig, start, target binlogstream.Position, wantRows int) {
	var raw, lib time.Duration
	var events, rows int
	for b.Loop() {
		// Each run starts on a collected heap, not paying for the
		// garbage of the one before it.
		runtime.GC()
		t0 := time.Now()
		rawEvents, rawRows := realSyncerLoop(b, cfg, start, target)
		raw += time.Since(t0)
		runtime.GC()
		t1 := time.Now()
		libEvents, libRows := realStreamerLoop(b, cfg, start, target)
		lib += time.Since(t1)
		if rawRows != libRows || rawRows != wantRows {
			b.Fatalf("rows: syncer %d, streamer %d, want %d", rawRows, libRows, wantRows)
		}
		events, rows = events+libEvents, rows+libRows
		_ = rawEvents
	}
	b.ReportMetric(float64(events)/raw.Seconds(), "syncer-events/s")
	b.ReportMetric(float64(rows)/raw.Seconds(), "syncer-rows/s")
	b.ReportMetric(float64(events)/lib.Seconds(), "streamer-events/s")
	b.ReportMetric(float64(rows)/lib.Seconds(), "streamer-rows/s")
	b.ReportMetric(lib.Seconds()/raw.Seconds(), "streamer/syncer")
}

// realSyncerLoop is a hand-written go-mysql consumer with the settings the
// SyncerSource uses (no retry, no per-packet read deadline, heartbeats,
// Annotate_rows asked for): it parses up to target and counts row changes.
func realSyncerLoop(b *testing.B, cfg binlogstream.SyncerConfig, start, target binlogstream.Position) (events, rows int) {
	return realSyncerLoopDecoding(b, cfg, start, target, nil)
}

// headerOnly is a RowsEventDecodeFunc that leaves the rows undecoded: a
// syncer with it measures the dump itself (the server sending, go-mysql
// reading and parsing events).
func headerOnly(re *replication.RowsEvent, data []byte) error {
	_, err := re.DecodeHeader(data)
	return err
}

// realSyncerLoopDecoding is realSyncerLoop with go-mysql's
// RowsEventDecodeFunc set to decode (nil: go-mysql's own decoding).
func realSyncerLoopDecoding(b *testing.B, cfg binlogstream.SyncerConfig, start, target binlogstream.Position,
	decode func(*replication.RowsEvent, []byte) error) (events, rows int) {
	s := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{ServerID: cfg.ServerID, Flavor: cfg.Flavor,
		Host: cfg.Host, Port: cfg.Port, User: cfg.User, Password: cfg.Password, Logger: quietSlog(),
		HeartbeatPeriod: cfg.HeartbeatPeriod, DisableRetrySync: true, MaxReconnectAttempts: 1,
		DumpCommandFlag: replication.BINLOG_SEND_ANNOTATE_ROWS_EVENT, EventCacheCount: 1024, RowsEventDecodeFunc: decode})
	defer s.Close()
	st, err := s.StartSync(mysql.Position{Name: start.File, Pos: uint32(start.Offset)})
	if err != nil {
		b.Fatal(err)
	}
	file := start.File
	for {
		ev, err := st.GetEvent(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if r, ok := ev.Event.(*replication.RotateEvent); ok {
			file = string(r.NextLogName)
		}
		if ev.Header.LogPos == 0 || ev.Header.Flags&replication.LOG_EVENT_ARTIFICIAL_F != 0 {
			continue
		}
		events++
		rows += binlogstream.RowChanges(ev)
		if (binlogstream.Position{File: file, Offset: uint64(ev.Header.LogPos)}).Compare(target) >= 0 {
			return events, rows
		}
	}
}

// realStreamerLoop streams up to target with a listener that only counts.
func realStreamerLoop(b *testing.B, cfg binlogstream.SyncerConfig, start, target binlogstream.Position) (events, rows int) {
	src, err := binlogstream.NewSyncerSource(cfg)
	if err != nil {
		b.Fatal(err)
	}
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: binlogstream.StartAt(start)})
	if err != nil {
		b.Fatal(err)
	}
	s.StopAt(target)
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		if ev.Header.LogPos != 0 && ev.Header.Flags&replication.LOG_EVENT_ARTIFICIAL_F == 0 {
			events++
		}
		rows += binlogstream.RowChanges(ev.BinlogEvent)
		return nil
	})
	if err := s.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	_ = s.Close()
	return events, rows
}

// tailBinEnv names a binlog-tail binary to benchmark instead of building
// one (to compare two versions on the same binlog).
const tailBinEnv = "BINLOGSTREAM_BENCH_BINLOG_TAIL"

// buildBinlogTail builds cmd/binlog-tail into b's temporary directory.
func buildBinlogTail(b *testing.B) string {
	if bin := os.Getenv(tailBinEnv); bin != "" {
		return bin
	}
	bin := filepath.Join(b.TempDir(), "binlog-tail")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/binlog-tail").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runCmd runs cmd and returns its peak RSS in bytes.
func runCmd(b *testing.B, cmd *exec.Cmd) int64 {
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v\n%s", filepath.Base(cmd.Path), err, stderr.String())
	}
	return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
}

// hugeRows × hugeRowBytes is the size of the one big transaction.
const (
	hugeRows     = 1 << 20
	hugeRowBytes = 1 << 10
)

// BenchmarkRealHugeTransaction streams one transaction of 1 GiB of row
// events (one INSERT ... SELECT of 1 Mi rows of 1 KiB) and, for the
// baseline, one of 64 MiB, each in a fresh process: the library with a
// listener that drops rows (a re-run of this test binary, see
// TestRealStreamHelper) and binlog-tail. It reports each process's peak RSS
// (getrusage of the child) and the peaks of the RSS sampled while each
// quarter of the 1 GiB went through (the library: by position streamed,
// with the heap too; binlog-tail: by run time). Flat means the later
// quarters' peaks are no higher than the earlier ones': nothing grows with
// the transaction; the 64 MiB run is the small-transaction reference.
func BenchmarkRealHugeTransaction(b *testing.B) {
	mariadb.Require(b)
	s := mariadb.Start(b, mariadb.Options{})
	s.Exec(b, "CREATE DATABASE bench", "USE bench", "CREATE TABLE big (id INT PRIMARY KEY, v LONGTEXT)")
	insert := func(from, n int) (binlogstream.Position, binlogstream.Position) {
		s.FlushBinaryLogs(b)
		start := realTarget(b, s)
		t0 := time.Now()
		s.Exec(b, "USE bench", fmt.Sprintf("INSERT INTO big SELECT seq, REPEAT(CHAR(97 + seq %% 26), %d) FROM seq_%d_to_%d",
			hugeRowBytes-16, from, from+n-1))
		end := realTarget(b, s)
		b.Logf("transaction of %d rows: %.1f MB of binlog, written in %s", n, float64(end.Offset-start.Offset)/1e6, time.Since(t0).Round(time.Millisecond))
		return start, end
	}
	bin := buildBinlogTail(b)
	dsn := s.DSN(s.ReplUser())
	out := filepath.Join(b.TempDir(), "out.jsonl")
	// tailRSS runs binlog-tail from start to the server's current end and
	// returns its peak RSS, and the peaks sampled in each quarter of its
	// run time.
	tailRSS := func(start binlogstream.Position) (int64, [4]int64) {
		os.Remove(out)
		defer os.Remove(out)
		cmd := exec.Command(bin, "--dsn", dsn, "--out", out, "--start", start.String(), "--stop-at-current", "--quiet", "--server-id", "503")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		type sample struct {
			at  time.Duration
			rss int64
		}
		var samples []sample
		stop := make(chan struct{})
		sampled := make(chan struct{})
		t0 := time.Now()
		go func() {
			defer close(sampled)
			statm := fmt.Sprintf("/proc/%d/statm", cmd.Process.Pid)
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for {
				if b, err := os.ReadFile(statm); err == nil {
					if f := strings.Fields(string(b)); len(f) > 1 {
						pages, _ := strconv.ParseInt(f[1], 10, 64)
						samples = append(samples, sample{time.Since(t0), pages * int64(os.Getpagesize())})
					}
				}
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
		err := cmd.Wait()
		took := time.Since(t0)
		close(stop)
		<-sampled
		if err != nil {
			b.Fatalf("binlog-tail: %v\n%s", err, stderr.String())
		}
		var quarters [4]int64
		for _, sm := range samples {
			q := min(int(4*sm.at/max(took, 1)), 3)
			quarters[q] = max(quarters[q], sm.rss)
		}
		return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10, quarters
	}
	// The baseline is measured before the huge transaction exists, so
	// that binlog-tail's --stop-at-current ends right after it.
	smallStart, smallEnd := insert(1, hugeRows/16)
	smallLib := runStreamHelper(b, dsn, smallStart, smallEnd)
	smallTail, _ := tailRSS(smallStart)
	hugeStart, hugeEnd := insert(hugeRows, hugeRows)
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }

	b.Run("library", func(b *testing.B) {
		for b.Loop() {
			huge := runStreamHelper(b, dsn, hugeStart, hugeEnd)
			b.ReportMetric(mib(smallLib.rss), "64MiB-txn-peak-RSS-MiB")
			b.ReportMetric(mib(huge.rss), "1GiB-txn-peak-RSS-MiB")
			b.ReportMetric(mib(smallLib.heap), "64MiB-txn-peak-heap-MiB")
			b.ReportMetric(mib(huge.heap), "1GiB-txn-peak-heap-MiB")
			// Flat: the later quarters need no more than the earlier.
			for q, p := range huge.quarters {
				b.ReportMetric(mib(p.rss), fmt.Sprintf("q%d-peak-RSS-MiB", q+1))
				b.ReportMetric(mib(p.heap), fmt.Sprintf("q%d-peak-heap-MiB", q+1))
			}
		}
	})
	b.Run("binlog-tail", func(b *testing.B) {
		for b.Loop() {
			huge, quarters := tailRSS(hugeStart)
			b.ReportMetric(mib(smallTail), "64MiB-txn-peak-RSS-MiB")
			b.ReportMetric(mib(huge), "1GiB-txn-peak-RSS-MiB")
			for q, rss := range quarters {
				b.ReportMetric(mib(rss), fmt.Sprintf("q%d-peak-RSS-MiB", q+1))
			}
		}
	})
}

// helperResult: the child's peak RSS (getrusage) and heap, and its peaks
// while streaming each quarter of the range.
type helperResult struct {
	rss, heap int64
	quarters  [4]memPeak
}

const streamHelperEnv = "BINLOGSTREAM_BENCH_STREAM_HELPER"

// runStreamHelper runs TestRealStreamHelper in a child process that
// streams [start, end) from dsn and reports its peak RSS and heap.
func runStreamHelper(b *testing.B, dsn string, start, end binlogstream.Position) helperResult {
	cmd := exec.Command(os.Args[0], "-test.run=^TestRealStreamHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%s", streamHelperEnv, dsn, start, end))
	var stdout strings.Builder
	cmd.Stdout = &stdout
	rss := runCmd(b, cmd)
	var r helperResult
	for _, line := range strings.Split(stdout.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "peak-heap-bytes "); ok {
			r.heap, _ = strconv.ParseInt(v, 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "quarter-peak "); ok {
			var q int
			var p memPeak
			if _, err := fmt.Sscan(v, &q, &p.heap, &p.rss); err == nil && q >= 0 && q < 4 {
				r.quarters[q] = p
			}
		}
	}
	if r.heap == 0 {
		b.Fatalf("stream helper said nothing:\n%s", stdout.String())
	}
	r.rss = rss
	return r
}

// TestRealStreamHelper is not a test: BenchmarkRealHugeTransaction runs
// it in a child process (the env var set) to stream a range with a
// listener that drops rows and print the peak of the Go heap, sampled.
func TestRealStreamHelper(t *testing.T) {
	arg := os.Getenv(streamHelperEnv)
	if arg == "" {
		t.Skip("run by BenchmarkRealHugeTransaction")
	}
	parts := strings.Split(arg, "|")
	dsn, err := binlogstream.ParseDSN(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	start, err := binlogstream.ParsePosition(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	end, err := binlogstream.ParsePosition(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{DSN: dsn, ServerID: 504, Flavor: mysql.MariaDBFlavor})
	if err != nil {
		t.Fatal(err)
	}
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: binlogstream.StartAt(start)})
	if err != nil {
		t.Fatal(err)
	}
	s.StopAt(end)
	rows := 0
	var reached atomic.Uint64 // offset streamed up to, for the sampler
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		rows += binlogstream.RowChanges(ev.BinlogEvent) // and drop them
		reached.Store(ev.End.Offset)
		return nil
	})
	done := make(chan struct{})
	peaks := make(chan [4]memPeak)
	span := max(end.Offset-start.Offset, 1)
	go func() {
		peaks <- sampleMemPeaks(done, func() int { return int(min(4*(reached.Load()-start.Offset)/span, 3)) })
	}()
	err = s.Run(context.Background())
	close(done)
	p := <-peaks
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, "rows %d\npeak-heap-bytes %d\n", rows, max(p[0].heap, p[1].heap, p[2].heap, p[3].heap))
	for q, pk := range p {
		fmt.Fprintf(w, "quarter-peak %d %d %d\n", q, pk.heap, pk.rss)
	}
	w.Flush()
}

// memPeak is the largest heap (bytes of live and not yet swept objects)
// and resident set seen.
type memPeak struct{ heap, rss int64 }

// sampleMemPeaks samples the heap and the RSS every 5 ms until done, and
// returns the peaks seen in each phase (0-3) phase() reports.
func sampleMemPeaks(done <-chan struct{}, phase func() int) [4]memPeak {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peaks [4]memPeak
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		metrics.Read(sample)
		p := &peaks[phase()]
		p.heap = max(p.heap, int64(sample[0].Value.Uint64()))
		p.rss = max(p.rss, residentBytes())
		select {
		case <-done:
			return peaks
		case <-tick.C:
		}
	}
}

// residentBytes is the process's current RSS (/proc/self/statm), 0 when
// unreadable.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// BenchmarkRealResumeInLargeTransaction: one transaction of a single
// 1M-row INSERT ... SELECT (the worst case for a resume: it replays the
// statement it stopped in, up to where it stopped), then one more
// transaction. It reports the time from the start of a resumed run (a new
// dump from the token taken after about 900k rows) to its first new event,
// against the time to stream those 900k rows from the start, with the
// replayed rows' decoding skipped (the default) and not.
func BenchmarkRealResumeInLargeTransaction(b *testing.B) {
	const rows, done = 1_000_000, 900_000
	mariadb.Require(b)
	s := mariadb.Start(b, mariadb.Options{})
	s.Exec(b, "CREATE DATABASE bench", "USE bench",
		"CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(40))",
		fmt.Sprintf("INSERT INTO t SELECT seq, seq*7, CONCAT('name-', seq) FROM seq_1_to_%d", rows),
		"INSERT INTO t VALUES (0, 0, 'after')")
	logs := s.BinaryLogs(b)
	start := binlogstream.StartAt(binlogstream.Position{File: logs[0].Name, Offset: 4})
	src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{
		DSN:      binlogstream.DSN{User: s.ReplUser(), Password: s.ReplPassword(), Host: s.Host(), Port: uint16(s.Port())},
		ServerID: 503, Flavor: mysql.MariaDBFlavor, HeartbeatPeriod: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	// run streams from from until want row changes were delivered (0: the
	// first rows event) and returns the time it took and that event's
	// token.
	run := func(src binlogstream.Source, from binlogstream.ResumePosition, want int) (time.Duration, binlogstream.ResumePosition) {
		return streamUntil(b, src, from, want, func(ev binlogstream.Event) int { return binlogstream.RowChanges(ev.BinlogEvent) })
	}
	_, mid := run(src, start, done)
	if mid.Rows != 0 || !mid.InTxn || mid.Safe.Compare(mid.Streamed) >= 0 {
		b.Fatalf("token %s is not inside the statement", mid)
	}
	for _, c := range []struct {
		name string
		src  binlogstream.Source
	}{{"skip", src}, {"no-skip", noSkip{src}}} {
		b.Run(c.name, func(b *testing.B) {
			var decode, resume time.Duration
			for b.Loop() {
				d, _ := run(c.src, start, done)
				r, _ := run(c.src, mid, 0)
				decode, resume = decode+d, resume+r
			}
			b.ReportMetric(float64(decode.Milliseconds())/float64(b.N), "decode-900k-rows-ms")
			b.ReportMetric(float64(resume.Milliseconds())/float64(b.N), "resume-ms")
			b.ReportMetric(resume.Seconds()/decode.Seconds(), "resume/decode")
		})
	}
}
