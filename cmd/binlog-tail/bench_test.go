package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// BenchmarkTail is binlog-tail's own cost (events to JSON lines in a file)
// with the in-process fake source: 200k row changes, inserts, updates and
// deletes of an INT, BIGINT and VARCHAR table, 100 rows an event. It
// reports rows/s and allocations per row; the end-to-end comparison with
// mariadb-binlog is BenchmarkRealMariaDB in the root package.
func BenchmarkTail(b *testing.B) {
	tbl := th.Table{ID: 7, Schema: "bench", Name: "t", Columns: []th.Column{
		{Name: "id", Type: th.BigInt}, {Name: "a", Type: th.Int}, {Name: "name", Type: th.Varchar(60)}}}
	row := func(i int) th.Row {
		return th.Row{int64(i), int32(i * 7), fmt.Sprintf("name-%d-%s", i, "abcdefghij"[:i%10])}
	}
	const txns, per = 200, 1000
	bld := th.NewBuilder(th.MariaDB, th.MaxRowsPerEvent(100))
	for t := 0; t < txns; t++ {
		rows := make([]th.Row, per)
		for i := range rows {
			rows[i] = row(t*per + i)
		}
		bld.Txn(func(x *th.Txn) {
			switch t % 4 {
			case 2:
				pairs := make([]th.Row, 0, 2*per)
				for i := range rows {
					pairs = append(pairs, rows[i], row(t*per+i+1))
				}
				x.Update(tbl, pairs...)
			case 3:
				x.Delete(tbl, rows...)
			default:
				x.Insert(tbl, rows...)
			}
		})
	}
	bl := bld.Build()
	last := bl.Files[len(bl.Files)-1]
	dir := b.TempDir()
	var lines uint64
	b.ReportAllocs()
	for b.Loop() {
		path := filepath.Join(dir, "out.jsonl")
		os.Remove(path)
		res, err := tail(context.Background(), path, tailConfig{Source: th.NewFakeSource(bl),
			Start:  binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4}),
			Target: binlogstream.Position{File: last.Name, Offset: uint64(len(last.Data))}, ReconnectBackoff: time.Millisecond})
		if err != nil || !res.Reached {
			b.Fatal(err, res.Reached)
		}
		lines = res.Lines
	}
	rows := float64(txns * per)
	b.ReportMetric(rows*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(lines), "lines")
}
