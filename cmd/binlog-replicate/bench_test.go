package main

import (
	"fmt"
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
