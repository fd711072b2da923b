package binlogstream_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// A consumer persists ev.Resume with every event it applies. After a
// crash in the middle of a statement split into several rows events, it
// resumes from what it persisted: the dump restarts at the statement's
// start (the safe point), the replayed events are dropped, and every row
// arrives once. A real program would use NewSyncerSource and a database
// or file for the token; the fake source serves a binlog like a server.
func Example_resumeAfterCrash() {
	bl := th.Seed001(th.MySQL) // one Table_map followed by 5 Write_rows
	var saved string           // what the consumer persisted

	consume := func(stopAfterRows int) (int, error) {
		start := binlogstream.StartAt(binlogstream.Position{File: "mysql-bin.000001", Offset: 4})
		if saved != "" {
			var err error
			if start, err = binlogstream.ParseResumePosition(saved); err != nil {
				return 0, err
			}
		}
		s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: th.NewFakeSource(bl), Start: start})
		if err != nil {
			return 0, err
		}
		defer s.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rows := 0
		s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
			if re, ok := ev.Event.(*replication.RowsEvent); ok {
				for _, row := range re.Rows {
					fmt.Println("insert", row[0])
					rows++
				}
			}
			saved = ev.Resume.String() // applied: persist the position with it
			if rows >= stopAfterRows {
				cancel() // the "crash"
			}
			return nil
		})
		if err := s.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return rows, err
		}
		return rows, nil
	}

	if _, err := consume(7); err != nil { // crash inside the big statement
		fmt.Println("error:", err)
		return
	}
	pos, _ := binlogstream.ParseResumePosition(saved)
	fmt.Printf("crashed: streamed up to offset %d, safe point at offset %d\n", pos.Streamed.Offset, pos.Safe.Offset)
	if _, err := consume(5); err != nil {
		fmt.Println("error:", err)
	}
	// Output:
	// insert 1
	// insert 10
	// insert 11
	// insert 12
	// insert 13
	// insert 14
	// insert 15
	// crashed: streamed up to offset 863, safe point at offset 561
	// insert 16
	// insert 17
	// insert 18
	// insert 19
	// insert 2
}

// A listener reaches the rows through ev.Event, go-mysql's decoded body.
// An update carries (before, after) pairs; RowChanges and ResumeAfterRows
// count pairs. Only the events that change something need their token
// persisted.
func Example_readRows() {
	users := th.Table{ID: 7, Schema: "app", Name: "users", Columns: []th.Column{{Name: "id", Type: th.Int}, {Name: "name", Type: th.Varchar(20)}}}
	bl := th.NewBuilder(th.MySQL).
		Txn(func(t *th.Txn) { t.Insert(users, th.Row{int32(1), "ann"}, th.Row{int32(2), "bob"}) }).
		Txn(func(t *th.Txn) {
			t.Update(users, th.Row{int32(1), "ann"}, th.Row{int32(1), "anna"}, th.Row{int32(2), "bob"}, th.Row{int32(2), "rob"})
		}).Build()
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: th.NewFakeSource(bl),
		Start: binlogstream.StartAt(binlogstream.Position{File: "mysql-bin.000001", Offset: 4})})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tokens, commits := 0, 0
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		switch e := ev.Event.(type) {
		case *replication.RowsEvent:
			kind := binlogstream.RowKind(ev.Header.EventType)
			if kind == "" {
				return nil
			}
			fmt.Printf("%s %s.%s, %d changes\n", kind, e.Table.Schema, e.Table.Table, binlogstream.RowChanges(ev.BinlogEvent))
			if kind == "update" {
				for i := 0; i+1 < len(e.Rows); i += 2 {
					fmt.Println("  ", e.Rows[i], "->", e.Rows[i+1])
				}
			} else {
				for _, row := range e.Rows {
					fmt.Println("  ", row)
				}
			}
			tokens++ // persist ev.Resume.String() with the rows
		case *replication.XIDEvent:
			tokens++ // and at each commit
			if commits++; commits == 2 {
				cancel() // the end of this example's binlog
			}
		}
		return nil
	})
	if err := s.Run(ctx); !errors.Is(err, context.Canceled) {
		fmt.Println("error:", err)
	}
	fmt.Println("tokens persisted:", tokens)
	// Output:
	// insert app.users, 2 changes
	//    [1 ann]
	//    [2 bob]
	// update app.users, 2 changes
	//    [1 ann] -> [1 anna]
	//    [2 bob] -> [2 rob]
	// tokens persisted: 4
}

// Binlog files in a directory (a server's, a copy, or an archive) stream
// like the server's dump: the same events, positions and tokens.
// StopAtCurrent stops at the end of the last complete event; without it
// the stream follows the files as they grow.
func ExampleNewDirSource() {
	dir, err := os.MkdirTemp("", "binlogs")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer os.RemoveAll(dir)
	if err := th.Seed001(th.MariaDB).WriteDir(dir); err != nil { // stands in for a server's files
		fmt.Println("error:", err)
		return
	}

	src, err := binlogstream.NewDirSource(binlogstream.DirConfig{Dir: dir})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src,
		Start: binlogstream.StartAt(binlogstream.Position{File: "mysql-bin.000001", Offset: 4})})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer s.Close()
	rows := 0
	var last binlogstream.Event
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		rows += binlogstream.RowChanges(ev.BinlogEvent)
		last = ev
		return nil
	})
	ctx := context.Background()
	end, err := s.StopAtCurrent(ctx)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	if err := s.Run(ctx); err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("end of the files:", end)
	fmt.Println("rows:", rows, "last event:", last.Header.EventType, "ending at", last.End)
	// Output:
	// end of the files: mysql-bin.000001:1447
	// rows: 12 last event: XIDEvent ending at mysql-bin.000001:1447
}

// DecodeRows plugs this package's row decoder into go-mysql for a
// program that reads events with go-mysql itself: the same values as
// go-mysql's decoder, made faster. Here a go-mysql parser reads a binlog
// file's bytes; BinlogSyncerConfig.RowsEventDecodeFunc takes it the same way.
func ExampleDecodeRows() {
	tbl := th.Table{ID: 7, Schema: "shop", Name: "orders",
		Columns: []th.Column{{Name: "id", Type: th.BigInt}, {Name: "note", Type: th.Varchar(40)}}}
	bl := th.NewBuilder(th.MariaDB).Txn(func(x *th.Txn) {
		x.Insert(tbl, th.Row{int64(1), "first"}, th.Row{int64(2), nil})
	}).Build()

	p := replication.NewBinlogParser()
	p.SetRowsEventDecodeFunc(binlogstream.DecodeRows()) // one per stream
	err := p.ParseReader(bytes.NewReader(bl.Files[0].Data[4:]), func(ev *replication.BinlogEvent) error {
		if re, ok := ev.Event.(*replication.RowsEvent); ok {
			fmt.Printf("%s.%s %v\n", re.Table.Schema, re.Table.Table, re.Rows)
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// shop.orders [[1 first] [2 <nil>]]
}
