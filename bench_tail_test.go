package binlogstream_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// tailMixes are the tables of BenchmarkRealTailMixes: the README table
// (integers and strings, the one docs/performance.md reports on), a
// DATETIME and a DECIMAL beside integers and a string, and 14 columns of
// most type families. Each is written by INSERT ... SELECT in
// transactions of 10k rows, then updated and deleted in part.
var tailMixes = []struct {
	name, cols, vals, update  string
	inserts, updates, deletes int
	metadata                  string // binlog_row_metadata; "" keeps MariaDB 10.11's NO_LOG
	gtid                      bool   // binlog-tail --gtid: GTID-mode tokens
}{
	{"readme", "id INT PRIMARY KEY, a INT, b VARCHAR(40), c VARCHAR(60), d INT",
		"seq, seq*7, CONCAT('name-', seq), REPEAT(CHAR(97 + seq % 26), 5 + seq % 20), seq % 1000",
		"a = a + 1, b = CONCAT(b, '-u')", 400_000, 100_000, 50_000, "", false},
	{"datetime-decimal", "id INT PRIMARY KEY, a BIGINT, b VARCHAR(40), c DECIMAL(10,2), d DATETIME",
		"seq, seq * 1000003, CONCAT('name-', seq), seq / 100, '2024-01-02 03:04:05' + INTERVAL seq SECOND",
		"c = c + 1, d = d + INTERVAL 1 DAY", 300_000, 150_000, 100_000, "", false},
	{"14-columns", "id BIGINT PRIMARY KEY, a VARCHAR(40), b DECIMAL(12,4), c DATETIME(6), d TIMESTAMP NULL, e DATE, " +
		"f TIME(3), g DOUBLE, h ENUM('new','open','closed'), i TEXT, j VARBINARY(32), k TINYINT UNSIGNED, l FLOAT, m INT",
		"seq, CONCAT('customer-', seq), seq / 7, '2024-01-02 03:04:05.123456' + INTERVAL seq SECOND, FROM_UNIXTIME(1700000000 + seq), " +
			"'2020-01-01' + INTERVAL seq % 3000 DAY, SEC_TO_TIME(seq % 86400) + INTERVAL 0.25 SECOND, seq / 3, 1 + seq % 3, " +
			"REPEAT('lorem ipsum ', 1 + seq % 8), UNHEX(MD5(seq)), seq % 256, seq / 11, -seq",
		"h = 'closed', b = b + 1", 200_000, 100_000, 50_000, "", false},
}

func init() {
	// The 14 columns again with FULL row metadata: names and types from
	// each Table_map instead of the schema snapshot and history.
	full := tailMixes[2]
	full.name, full.metadata = "14-columns-full-metadata", "FULL"
	// The README table again in GTID mode (--gtid): every token holds
	// the executed set and the transaction's progress.
	gtid := tailMixes[0]
	gtid.name, gtid.gtid = "readme-gtid", true
	tailMixes = append(tailMixes, full, gtid)
}

// BenchmarkRealTailMixes: binlog-tail against `mariadb-binlog -v
// --base64-output=decode-rows`, both reading a real MariaDB server and
// writing a file, in turns, on each of tailMixes; and the dump alone (a
// go-mysql syncer reading every event, rows not decoded), the floor of
// any client of the server. With
// BINLOGSTREAM_TAIL_PROFILE=DIR binlog-tail writes a CPU profile per table
// and run into DIR (make pgo merges them into cmd/binlog-tail/default.pgo).
func BenchmarkRealTailMixes(b *testing.B) {
	mariadb.Require(b)
	for _, mix := range tailMixes {
		b.Run(mix.name, func(b *testing.B) {
			var opts mariadb.Options
			if mix.metadata != "" {
				opts.ExtraArgs = []string{"--binlog-row-metadata=" + mix.metadata}
			}
			s := mariadb.Start(b, opts)
			s.Exec(b, "CREATE DATABASE mix", "USE mix", "CREATE TABLE t ("+mix.cols+")")
			for i := 0; i < mix.inserts; i += 10_000 {
				s.Exec(b, "USE mix", fmt.Sprintf("INSERT INTO t SELECT %s FROM seq_%d_to_%d", mix.vals, i+1, i+10_000))
			}
			s.Exec(b, "USE mix",
				fmt.Sprintf("UPDATE t SET %s WHERE id %% %d = 0", mix.update, mix.inserts/mix.updates),
				fmt.Sprintf("DELETE FROM t WHERE id %% %d = 1", mix.inserts/mix.deletes))
			var files []string
			for _, l := range s.BinaryLogs(b) {
				files = append(files, l.Name)
			}
			rows := mix.inserts + mix.updates + mix.deletes
			bin := buildBinlogTail(b)
			dir := b.TempDir()
			out, toolOut := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "out.sql")
			cpu := func(cmd *exec.Cmd) time.Duration { return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime() }
			cfg := binlogstream.SyncerConfig{DSN: binlogstream.DSN{User: s.ReplUser(), Password: s.ReplPassword(), Host: s.Host(), Port: uint16(s.Port())},
				ServerID: 504, Flavor: mysql.MariaDBFlavor, HeartbeatPeriod: time.Second}
			start, target := binlogstream.Position{File: files[0], Offset: 4}, realTarget(b, s)
			var tail, tool, dump, tailCPU, toolCPU time.Duration
			runs := 0
			for b.Loop() {
				runs++
				os.Remove(out)
				args := []string{"--dsn", s.DSN(s.ReplUser()), "--out", out, "--start", "oldest", "--stop-at-current", "--quiet", "--server-id", "502"}
				if mix.gtid {
					args = append(args, "--gtid")
				}
				if p := os.Getenv("BINLOGSTREAM_TAIL_PROFILE"); p != "" {
					args = append(args, "--cpuprofile", filepath.Join(p, fmt.Sprintf("%s-%d.pprof", mix.name, runs)))
				}
				t0 := time.Now()
				cmd := exec.Command(bin, args...)
				runCmd(b, cmd)
				tail += time.Since(t0)
				tailCPU += cpu(cmd)

				f, err := os.Create(toolOut)
				if err != nil {
					b.Fatal(err)
				}
				cmd = exec.Command("mariadb-binlog", append([]string{"--read-from-remote-server", "--host=" + s.Host(),
					"--port=" + strconv.Itoa(s.Port()), "--user=" + s.ReplUser(), "--password=" + s.ReplPassword(),
					"-v", "--base64-output=decode-rows"}, files...)...)
				cmd.Stdout = f
				t1 := time.Now()
				runCmd(b, cmd)
				tool += time.Since(t1)
				toolCPU += cpu(cmd)
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				realSyncerLoopDecoding(b, cfg, start, target, headerOnly)
				dump += time.Since(t2)
			}
			n := float64(b.N)
			b.ReportMetric(tail.Seconds()/n, "binlog-tail-s")
			b.ReportMetric(tool.Seconds()/n, "mariadb-binlog-s")
			b.ReportMetric(tail.Seconds()/tool.Seconds(), "binlog-tail/mariadb-binlog")
			b.ReportMetric(dump.Seconds()/n, "dump-only-s")
			b.ReportMetric(tailCPU.Seconds()/n, "binlog-tail-cpu-s")
			b.ReportMetric(toolCPU.Seconds()/n, "mariadb-binlog-cpu-s")
			b.ReportMetric(float64(rows)*n/tail.Seconds(), "binlog-tail-rows/s")
		})
	}
}
