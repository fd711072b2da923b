package main

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// benchRows is how many rows the benchmark's binlog inserts: 4000
// transactions of 5 rows, then 4000 single-row updates.
const benchRows = 20000

// BenchmarkRealReplicate measures the streaming phase on real MariaDB servers:
// row changes applied to the target per second, by --batch, from one
// binlog of small transactions. events/commit is the number of binlog
// events one target transaction covers: a crash at a random moment
// replays half of that on average (the events after the last committed
// checkpoint are read and applied again), never more than one batch plus
// the rest of the source transaction it ends in.
func BenchmarkRealReplicate(b *testing.B) {
	mariadb.Require(b)
	src := mariadb.Start(b, mariadb.Options{})
	tgt := mariadb.Start(b, mariadb.Options{ServerID: 2})
	src.Exec(b, "CREATE DATABASE d", "USE d", "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(64), n INT)")
	r := &rig{src: src, tgt: tgt, args: []string{"--tables", "d.t"}}
	if res := r.run(b, "--snapshot-only"); res.code != 0 { // the empty table, at the position before the writes
		b.Fatal(res.stderr)
	}
	// Each iteration streams again from the snapshot's checkpoint.
	snapToken := tgt.QueryValue(b, "SELECT token FROM binlogstream.checkpoint")
	c, err := conn(src)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for i := range benchRows / 5 {
		q := fmt.Sprintf("INSERT INTO d.t VALUES (%d,'value',0),(%d,'value',0),(%d,'value',0),(%d,'value',0),(%d,'value',0)",
			5*i, 5*i+1, 5*i+2, 5*i+3, 5*i+4)
		if _, err := c.Execute(q); err != nil {
			b.Fatal(err)
		}
	}
	for i := range benchRows / 5 {
		if _, err := c.Execute(fmt.Sprintf("UPDATE d.t SET n = n + 1 WHERE id = %d", i*5)); err != nil {
			b.Fatal(err)
		}
	}
	changes := benchRows + benchRows/5
	for _, batch := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			var elapsed time.Duration
			var perCommit float64
			for b.Loop() {
				tgt.Exec(b, "TRUNCATE d.t", "UPDATE binlogstream.checkpoint SET token = '"+snapToken+"'")
				began := time.Now()
				res := r.run(b, "--stop-at-current", "--batch", fmt.Sprint(batch))
				elapsed += time.Since(began)
				if res.code != 0 {
					b.Fatal(res.stderr)
				}
				if got := stat(b, res.stderr, "applied"); got != changes {
					b.Fatalf("applied %d row changes, want %d", got, changes)
				}
				perCommit = float64(stat(b, res.stderr, "delivered")) / float64(stat(b, res.stderr, "commits"))
			}
			b.ReportMetric(float64(changes)*float64(b.N)/elapsed.Seconds(), "rows/s")
			b.ReportMetric(perCommit, "events/commit")
		})
	}
}

// verifyBenchRows is the size of BenchmarkRealVerify's table.
const verifyBenchRows = 1_000_000

// verifyChunkEnv sets BenchmarkRealVerify's --chunk for --verify-only
// (unset: the default; the copy keeps the default).
const verifyChunkEnv = "BINLOGSTREAM_BENCH_VERIFY_CHUNK"

// verifyBaselineEnv names a second binlog-replicate binary (an earlier
// build) whose --verify-only BenchmarkRealVerify runs in the same turns,
// reporting its time and this build's over it.
const verifyBaselineEnv = "BINLOGSTREAM_BENCH_BASELINE_REPLICATE"

// BenchmarkRealVerify: on a 1M-row table of mixed column types, per
// iteration and in one run: binlog-replicate --snapshot-only into an
// empty target (the copy), --stop-at-current (nothing left to apply:
// untimed), then --verify-only of the quiesced copy, then CHECKSUM TABLE
// on both servers at once. It reports the three wall times and the
// verification's over the copy's (the goal: at most 0.5) and over the
// checksums'.
func BenchmarkRealVerify(b *testing.B) {
	mariadb.Require(b)
	src := mariadb.Start(b, mariadb.Options{})
	tgt := mariadb.Start(b, mariadb.Options{ServerID: 2})
	t0 := time.Now()
	src.MixedTable(b, "v", verifyBenchRows)
	b.Logf("table of %d rows written in %s", verifyBenchRows, time.Since(t0).Round(time.Millisecond))
	r := &rig{src: src, tgt: tgt, args: []string{"--tables", "v.t"}}
	var copying, verifying, checksum, baseline time.Duration
	base := &rig{src: src, tgt: tgt, args: r.args, bin: os.Getenv(verifyBaselineEnv)}
	for b.Loop() {
		tgt.Exec(b, "DROP DATABASE IF EXISTS v", "DROP DATABASE IF EXISTS binlogstream", "CREATE DATABASE v")
		tgt.Exec(b, "USE v", src.Query(b, "SHOW CREATE TABLE v.t")[0][1])
		began := time.Now()
		if res := r.runFor(b, 10*time.Minute, "--snapshot-only"); res.code != 0 {
			b.Fatal(res.stderr)
		}
		copying += time.Since(began)
		if res := r.runFor(b, time.Minute, "--stop-at-current"); res.code != 0 {
			b.Fatal(res.stderr)
		}

		args := []string{"--verify-only"}
		if n := os.Getenv(verifyChunkEnv); n != "" {
			args = append(args, "--chunk", n)
		}
		verify := func(r *rig) time.Duration {
			began := time.Now()
			res := r.runFor(b, 10*time.Minute, args...)
			took := time.Since(began)
			if res.code != 0 || !strings.Contains(res.stderr, fmt.Sprintf(`"rows":%d,"differences":0,`, verifyBenchRows)) {
				b.Fatalf("--verify-only: exit %d\n%s", res.code, res.stderr)
			}
			return took
		}
		if base.bin != "" {
			baseline += verify(base)
		}
		verifying += verify(r)

		began = time.Now()
		sums := make([]string, 2)
		var wg sync.WaitGroup
		for i, s := range []*mariadb.Server{src, tgt} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := conn(s)
				if err != nil {
					return
				}
				defer c.Close()
				if res, err := c.Execute("CHECKSUM TABLE v.t"); err == nil {
					sums[i], _ = res.GetString(0, 1)
				}
			}()
		}
		wg.Wait()
		checksum += time.Since(began)
		if sums[0] == "" || sums[0] != sums[1] {
			b.Fatalf("CHECKSUM TABLE: source %q, target %q", sums[0], sums[1])
		}
	}
	n := float64(b.N)
	b.ReportMetric(copying.Seconds()/n, "copy-s")
	b.ReportMetric(verifying.Seconds()/n, "verify-s")
	b.ReportMetric(checksum.Seconds()/n, "checksum-s")
	b.ReportMetric(verifying.Seconds()/copying.Seconds(), "verify/copy")
	b.ReportMetric(verifying.Seconds()/checksum.Seconds(), "verify/checksum")
	if base.bin != "" {
		b.ReportMetric(baseline.Seconds()/n, "baseline-verify-s")
		b.ReportMetric(verifying.Seconds()/baseline.Seconds(), "verify/baseline")
	}
}
