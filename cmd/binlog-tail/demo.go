package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// demoServer is what the demo streams from. Today it is the in-process
// FakeSource; a fake primary over TCP only has to fill the same fields
// (its Source would be a binlogstream.SyncerSource).
type demoServer struct {
	Name   string
	Source func() binlogstream.Source // a fresh source per run, as a new connection
	Binlog *th.Binlog                 // what the server serves, to name events
	First  binlogstream.Position      // the first file at offset 4
	End    binlogstream.Position      // end of the last event
	Close  func()
}

// demoTable is the table of seed 001 (table id as in the seed).
var demoTable = th.Seed001Table

var demoNotes = th.Table{ID: 5132, Schema: "app_db", Name: "notes", Columns: []th.Column{
	{Name: "id", Type: th.BigInt}, {Name: "note", Type: th.Varchar(300)},
}}

// demoBinlog is seed 001's layout (a 10-row INSERT split into 5 Write_rows
// after one Table_map, no GTIDs) plus updates, deletes, DDL, a rotation and
// a two-table statement.
func demoBinlog() *th.Binlog {
	row := func(id int64) th.Row { return th.Row{id, fmt.Sprintf("row-%d", id), int32(id % 7)} }
	b := th.NewBuilder(th.MySQL, th.AnonymousGTID(), th.MaxRowsPerEvent(2))
	b.DDL("app_db", "CREATE TABLE _other_table_gho (id BIGINT PRIMARY KEY, v VARCHAR(64), n INT)")
	b.Txn(func(t *th.Txn) { t.Insert(demoTable, row(1)) })
	var rows []th.Row
	for id := int64(10); id < 20; id++ {
		rows = append(rows, row(id))
	}
	b.Txn(func(t *th.Txn) { t.Insert(demoTable, rows...) }) // the seed's statement
	b.Txn(func(t *th.Txn) { t.Insert(demoTable, row(2)) })
	b.Txn(func(t *th.Txn) {
		t.Update(demoTable, row(10), th.Row{int64(10), "ten", nil}, row(11), th.Row{int64(11), "eleven", int32(0)})
	})
	b.Txn(func(t *th.Txn) { t.Delete(demoTable, row(12), row(13), row(14)) })
	b.DDL("app_db", "CREATE TABLE notes (id BIGINT PRIMARY KEY, note VARCHAR(300))")
	b.Rotate()
	b.Txn(func(t *th.Txn) {
		t.MultiTable(
			th.Inserted(demoNotes, th.Row{int64(1), "naïve \"quoted\"\n"}, th.Row{int64(2), "\xff\xfe not UTF-8"}, th.Row{int64(3), nil}),
			th.Deleted(demoTable, row(15), row(16), row(17)),
		)
	})
	return b.Build()
}

// newFakeDemoServer serves demoBinlog from the in-process fake source.
func newFakeDemoServer() (*demoServer, error) {
	bl := demoBinlog()
	last := bl.Events[len(bl.Events)-1]
	return &demoServer{
		Name:   "an in-process fake MySQL server (no GTIDs, as the seed's server ran)",
		Source: func() binlogstream.Source { return th.NewFakeSource(bl) },
		Binlog: bl,
		First:  binlogstream.Position{File: bl.Files[0].Name, Offset: 4},
		End:    binlogstream.Position{File: last.File, Offset: uint64(last.End)},
		Close:  func() {},
	}, nil
}

// crashPoint is where the demo's crashed run dies: before writing row
// crashRow (0-based) of the crashNth Write_rows of the seed's statement.
const (
	crashNth = 4
	crashRow = 1
)

// runDemo streams srv to a temporary file, "kills" the run between two
// rows of the seed's split statement, resumes from the file and checks the
// result against an uninterrupted run. It prints the story to out.
func runDemo(ctx context.Context, out io.Writer, newServer func() (*demoServer, error)) error {
	began := time.Now()
	srv, err := newServer()
	if err != nil {
		return err
	}
	defer srv.Close()
	dir, err := os.MkdirTemp("", "binlog-tail-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }

	// The statement of seed 001: its Table_map and Write_rows events.
	var tableMap th.EventInfo
	var stmt []th.EventInfo
	for i, e := range srv.Binlog.Events {
		if e.Type != replication.TABLE_MAP_EVENT {
			continue
		}
		var rows []th.EventInfo
		for _, r := range srv.Binlog.Events[i+1:] {
			if th.IsRowsEvent(r.Type) {
				rows = append(rows, r)
			}
			if !r.MidStatement {
				break
			}
		}
		if len(rows) > crashNth {
			tableMap, stmt = e, rows
			break
		}
	}
	if len(stmt) < crashNth+1 {
		return fmt.Errorf("demo binlog: no statement split into %d+ rows events", crashNth+1)
	}
	victim := stmt[crashNth-1]

	p("binlog-tail demo: %s; %d binlog files, %d events.", srv.Name, len(srv.Binlog.Files), len(srv.Binlog.Events))
	p("Seed 001's statement: one Table_map at %s:%d, then %d Write_rows events; only the last has STMT_END_F.",
		tableMap.File, tableMap.Start, len(stmt))
	p("")

	cfg := func() tailConfig {
		return tailConfig{Source: srv.Source(), Start: binlogstream.StartAt(srv.First), Target: srv.End,
			ReconnectBackoff: 10 * time.Millisecond}
	}
	// 1. The reference: one uninterrupted run.
	ref := filepath.Join(dir, "reference.jsonl")
	if _, err := tail(ctx, ref, cfg()); err != nil {
		return fmt.Errorf("uninterrupted run: %w", err)
	}
	want, err := os.ReadFile(ref)
	if err != nil {
		return err
	}
	p("1. Uninterrupted run: %d lines, %d bytes.", bytes.Count(want, []byte("\n")), len(want))

	// 2. The crash: killed while writing the second row of the 4th Write_rows.
	path := filepath.Join(dir, "out.jsonl")
	c := cfg()
	var crashed *binlogstream.Event
	var crashTotal int
	c.crashBefore = func(ev *binlogstream.Event, row int) bool {
		if ev.Start.File == victim.File && ev.Start.Offset == uint64(victim.Start) && row == crashRow {
			crashed, crashTotal = ev, binlogstream.RowChanges(ev.BinlogEvent)
			return true
		}
		return false
	}
	if _, err := tail(ctx, path, c); !errors.Is(err, errCrashed) {
		return fmt.Errorf("crashed run: want the simulated crash, got %v", err)
	}
	p("2. Crashed run: killed while writing row %d of %d of Write_rows #%d at %s-%d (mid-statement),",
		crashRow+1, crashTotal, crashNth, crashed.Start, crashed.End.Offset)
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	complete := bytes.LastIndexByte(data, '\n') + 1
	p("   like a SIGKILL: the file holds %d complete lines and %d bytes of a cut line.",
		bytes.Count(data, []byte("\n")), len(data)-complete)

	// 3. The resume from the file alone.
	f, rec, err := openOutput(path)
	if err != nil {
		return err
	}
	f.Close()
	tok := rec.Resume
	p("3. Resume: cut the partial line; the last complete line's token says")
	p("     Streamed %s, Rows %d: every event up to there and %d row(s) of the next one are in the file;",
		tok.Streamed, tok.Rows, tok.Rows)
	p("     Safe     %s: the statement boundary before the Table_map, where a dump decodes again.", tok.Safe)
	res, err := tail(ctx, path, cfg())
	if err != nil {
		return fmt.Errorf("resumed run: %w", err)
	}
	p("   The resumed dump started at Safe, dropped %d replayed events (Stats().Dropped: the Table_map and",
		res.Stats.Dropped)
	p("   the %d Write_rows before the partial one), trimmed its %d row(s) already written, and wrote %d new lines.",
		crashNth-1, tok.Rows, res.Lines)

	// 4. What the seeds did: resume from the last streamed position.
	naiveErr := naiveResume(ctx, srv.Source(), tok.Streamed)
	if naiveErr == nil {
		return errors.New("the naive resume unexpectedly worked")
	}
	p("4. A naive resume from the last streamed position %s (what gh-ost's checkpoint did) fails:", tok.Streamed)
	var ee *replication.EventError
	if errors.As(naiveErr, &ee) {
		p("     %T from go-mysql: %s", naiveErr, ee.Err)
	} else {
		p("     %v", naiveErr)
	}

	// 5. The result.
	got, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("the resumed file differs from the uninterrupted run's (%d vs %d bytes)", len(got), len(want))
	}
	p("5. The resumed file equals the uninterrupted run's byte for byte (%d lines, file/pos/resume included).",
		bytes.Count(got, []byte("\n")))
	p("")
	p("Done in %s.", time.Since(began).Round(time.Millisecond))
	return nil
}

// naiveResume streams from pos as if it were a statement boundary and
// returns the error the stream stops with.
func naiveResume(ctx context.Context, src binlogstream.Source, pos binlogstream.Position) error {
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: binlogstream.StartAt(pos)})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s.AddListener(func(context.Context, *binlogstream.Event) error { return nil })
	err = s.Run(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}
