package binlogstream_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// decodeFamilies are tables of one column type family each, for
// BenchmarkRealDecodeFamilies.
var decodeFamilies = []struct{ name, cols, vals string }{
	{"integers", "a TINYINT, b SMALLINT UNSIGNED, c MEDIUMINT, d INT, e BIGINT UNSIGNED, f INT",
		"seq % 100, seq % 60000, seq, seq * 3, seq * 1000003, -seq"},
	{"decimal", "a DECIMAL(10,2), b DECIMAL(20,6), c DECIMAL(5,0), d DECIMAL(30,10)",
		"seq / 100, seq * 1.000001, seq % 99999, seq / 7"},
	{"temporal", "a DATETIME, b DATETIME(6), c TIMESTAMP(3) NULL, d DATE, e TIME(3), f YEAR",
		"'2024-01-02 03:04:05' + INTERVAL seq SECOND, NOW(6) - INTERVAL seq MICROSECOND, FROM_UNIXTIME(1700000000 + seq), " +
			"'2020-01-01' + INTERVAL seq % 3000 DAY, SEC_TO_TIME(seq % 86400), 1901 + seq % 255"},
	{"strings", "a VARCHAR(40), b CHAR(10), c VARCHAR(200) CHARACTER SET latin1, d VARCHAR(20)",
		"CONCAT('name-', seq), LEFT(MD5(seq), 10), REPEAT('x', seq % 150), HEX(seq)"},
	{"blobs-json", "a TEXT, b BLOB, c JSON",
		"REPEAT('t', 50 + seq % 100), UNHEX(MD5(seq)), JSON_OBJECT('id', seq, 'name', CONCAT('n', seq), 'tags', JSON_ARRAY(1, 2))"},
	{"enum-set", "a ENUM('red','green','blue'), b SET('x','y','z','w'), c ENUM('a','b')",
		"1 + seq % 3, seq % 16, 1 + seq % 2"},
	{"bit", "a BIT(1), b BIT(13), c BIT(64)", "seq % 2, seq % 8192, seq * 2654435761"},
	// A 14-column table (with the id): most families in one row.
	{"14-columns", "a VARCHAR(40), b DECIMAL(12,4), c DATETIME(6), d TIMESTAMP NULL, e DATE, f TIME(3), g DOUBLE, " +
		"h ENUM('new','open','closed'), i TEXT, j VARBINARY(32), k TINYINT UNSIGNED, l FLOAT, m BIGINT",
		"CONCAT('customer-', seq), seq / 7, '2024-01-02 03:04:05.123456' + INTERVAL seq SECOND, FROM_UNIXTIME(1700000000 + seq), " +
			"'2020-01-01' + INTERVAL seq % 3000 DAY, SEC_TO_TIME(seq % 86400) + INTERVAL 0.25 SECOND, seq / 3, 1 + seq % 3, " +
			"REPEAT('lorem ipsum ', 1 + seq % 8), UNHEX(MD5(seq)), seq % 256, seq / 11, -seq"},
}

const decodeRows = 100_000

// BenchmarkRealDecodeFamilies: rows/s decoding a real MariaDB binlog of
// 100k inserted rows per column type family, for a bare go-mysql
// BinlogSyncer loop (its own decoder, on its reading goroutine) and for
// the streamer over a SyncerSource decoding on one worker and on one per
// core. Each run alternates the three on a collected heap.
func BenchmarkRealDecodeFamilies(b *testing.B) {
	mariadb.Require(b)
	s := mariadb.Start(b, mariadb.Options{})
	s.Exec(b, "CREATE DATABASE f")
	type span struct{ from, to binlogstream.Position }
	spans := map[string]span{}
	for _, fam := range decodeFamilies {
		from := realTarget(b, s)
		s.Exec(b, "USE f", fmt.Sprintf("CREATE TABLE `%s` (id INT PRIMARY KEY, %s)", fam.name, fam.cols))
		for i := 0; i < decodeRows; i += 20_000 {
			s.Exec(b, "USE f", fmt.Sprintf("INSERT INTO `%s` SELECT seq, %s FROM seq_%d_to_%d", fam.name, fam.vals, i+1, i+20_000))
		}
		spans[fam.name] = span{from, realTarget(b, s)}
	}
	cfg := binlogstream.SyncerConfig{DSN: binlogstream.DSN{User: s.ReplUser(), Password: s.ReplPassword(), Host: s.Host(), Port: uint16(s.Port())},
		ServerID: 503, Flavor: mysql.MariaDBFlavor, HeartbeatPeriod: time.Second}
	for _, fam := range decodeFamilies {
		sp := spans[fam.name]
		b.Run(fam.name, func(b *testing.B) {
			var raw, one, all time.Duration
			for b.Loop() {
				runtime.GC()
				t0 := time.Now()
				_, rawRows := realSyncerLoop(b, cfg, sp.from, sp.to)
				raw += time.Since(t0)
				c := cfg
				c.DecodeWorkers = 1
				runtime.GC()
				t1 := time.Now()
				_, oneRows := realStreamerLoop(b, c, sp.from, sp.to)
				one += time.Since(t1)
				c.DecodeWorkers = runtime.GOMAXPROCS(0)
				runtime.GC()
				t2 := time.Now()
				_, allRows := realStreamerLoop(b, c, sp.from, sp.to)
				all += time.Since(t2)
				if rawRows != decodeRows || oneRows != decodeRows || allRows != decodeRows {
					b.Fatalf("rows: go-mysql %d, one worker %d, all %d, want %d", rawRows, oneRows, allRows, decodeRows)
				}
			}
			n := float64(b.N * decodeRows)
			b.ReportMetric(n/raw.Seconds(), "go-mysql-rows/s")
			b.ReportMetric(n/one.Seconds(), "1-worker-rows/s")
			b.ReportMetric(n/all.Seconds(), "all-cores-rows/s")
			b.ReportMetric(raw.Seconds()/all.Seconds(), "all-cores-speedup")
		})
	}
}

// BenchmarkRealTableFilter: a stream whose consumer wants 1 of 10 equally
// busy tables (SyncerConfig.DecodeTable) against one that wants all 10,
// on a real MariaDB binlog of 10 x 30k inserted rows, interleaved.
func BenchmarkRealTableFilter(b *testing.B) {
	mariadb.Require(b)
	s := mariadb.Start(b, mariadb.Options{})
	s.Exec(b, "CREATE DATABASE ten")
	for k := range 10 {
		s.Exec(b, "USE ten", fmt.Sprintf("CREATE TABLE t%d (id INT PRIMARY KEY, a BIGINT, b VARCHAR(40), c DATETIME, d DECIMAL(10,2))", k))
	}
	from := realTarget(b, s)
	for i := 0; i < 30_000; i += 5_000 {
		for k := range 10 {
			s.Exec(b, "USE ten", fmt.Sprintf("INSERT INTO t%d SELECT seq, seq * 7, CONCAT('v', seq), '2024-01-01' + INTERVAL seq SECOND, seq / 100 FROM seq_%d_to_%d",
				k, i+1, i+5_000))
		}
	}
	to := realTarget(b, s)
	cfg := binlogstream.SyncerConfig{DSN: binlogstream.DSN{User: s.ReplUser(), Password: s.ReplPassword(), Host: s.Host(), Port: uint16(s.Port())},
		ServerID: 504, Flavor: mysql.MariaDBFlavor, HeartbeatPeriod: time.Second}
	var all, one, dump time.Duration
	for b.Loop() {
		runtime.GC()
		t0 := time.Now()
		_, allRows := realStreamerLoop(b, cfg, from, to)
		all += time.Since(t0)
		c := cfg
		c.DecodeTable = func(_, table string) bool { return table == "t3" }
		runtime.GC()
		t1 := time.Now()
		_, oneRows := realStreamerLoop(b, c, from, to)
		one += time.Since(t1)
		if allRows != 300_000 || oneRows != 30_000 {
			b.Fatalf("rows: all tables %d, one %d", allRows, oneRows)
		}
		// The floor of any filter: the dump alone, every rows event read,
		// none decoded (a bare go-mysql syncer).
		runtime.GC()
		t2 := time.Now()
		realSyncerLoopDecoding(b, cfg, from, to, headerOnly)
		dump += time.Since(t2)
	}
	b.ReportMetric(float64(b.N*300_000)/all.Seconds(), "all-tables-rows/s")
	b.ReportMetric(one.Seconds()/all.Seconds(), "one-of-ten/all")
	b.ReportMetric(dump.Seconds()/all.Seconds(), "dump-only/all")
}
