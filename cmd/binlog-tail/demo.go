package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/sirupsen/logrus"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/internal/binlogbuild"
	"github.com/binlogstream/binlogstream/internal/fakeprimary"
)

// demoServer is what the demo streams from: a fake MySQL 8 primary on
// 127.0.0.1, read over TCP by go-mysql's BinlogSyncer as with --dsn.
type demoServer struct {
	Name    string
	Primary *fakeprimary.Primary
	DSN     binlogstream.DSN
	Source  func() binlogstream.Source // the source of one run, as runTail builds it
	Binlog  *binlogbuild.Binlog        // what the server serves, to name events
	First   binlogstream.Position      // the first file at offset 4
	End     binlogstream.Position      // end of the last event
	Close   func()
}

// demoTable is the table of seed 001 (table id as in the seed).
var demoTable = binlogbuild.Seed001Table

var demoNotes = binlogbuild.Table{ID: 5132, Schema: "app_db", Name: "notes", Columns: []binlogbuild.Column{
	{Name: "id", Type: binlogbuild.BigInt}, {Name: "note", Type: binlogbuild.Varchar(300)},
}}

// demoBinlog is seed 001's layout (a 10-row INSERT split into 5 Write_rows
// after one Table_map) plus updates, deletes, DDL, a rotation and a
// two-table statement, written as MySQL 8 writes them with gtid_mode=ON.
//
// No compressed Transaction_payload: the demo's story finds its
// statements among the binlog's Table_map and Rows events (statements)
// and places its crash and its cut by them, and a payload holds them
// inside one compressed event.
func demoBinlog() *binlogbuild.Binlog {
	row := func(id int64) binlogbuild.Row { return binlogbuild.Row{id, fmt.Sprintf("row-%d", id), int32(id % 7)} }
	b := binlogbuild.NewBuilder(binlogbuild.MySQL, binlogbuild.MaxRowsPerEvent(2))
	b.DDL("app_db", "CREATE TABLE _other_table_gho (id BIGINT PRIMARY KEY, v VARCHAR(64), n INT)")
	b.Txn(func(t *binlogbuild.Txn) { t.Insert(demoTable, row(1)) })
	var rows []binlogbuild.Row
	for id := int64(10); id < 20; id++ {
		rows = append(rows, row(id))
	}
	b.Txn(func(t *binlogbuild.Txn) { t.Insert(demoTable, rows...) }) // the seed's statement
	b.Txn(func(t *binlogbuild.Txn) { t.Insert(demoTable, row(2)) })
	b.Txn(func(t *binlogbuild.Txn) {
		t.Update(demoTable, row(10), binlogbuild.Row{int64(10), "ten", nil}, row(11), binlogbuild.Row{int64(11), "eleven", int32(0)})
	})
	b.Txn(func(t *binlogbuild.Txn) { t.Delete(demoTable, row(12), row(13), row(14)) })
	b.DDL("app_db", "CREATE TABLE notes (id BIGINT PRIMARY KEY, note VARCHAR(300))")
	b.Rotate()
	b.Txn(func(t *binlogbuild.Txn) {
		t.MultiTable(
			binlogbuild.Inserted(demoNotes, binlogbuild.Row{int64(1), "naïve \"quoted\"\n"}, binlogbuild.Row{int64(2), "\xff\xfe not UTF-8"}, binlogbuild.Row{int64(3), nil}),
			binlogbuild.Deleted(demoTable, row(15), row(16), row(17)),
		)
	})
	return b.Build()
}

// newFakeDemoServer starts a fake primary serving demoBinlog. Its Source
// is a binlogstream.SyncerSource configured as runTail configures it.
func newFakeDemoServer() (*demoServer, error) {
	bl := demoBinlog()
	p, err := fakeprimary.Start(bl)
	if err != nil {
		return nil, err
	}
	dsn, err := binlogstream.ParseDSN(p.DSN())
	if err != nil {
		p.Close()
		return nil, err
	}
	src, err := demoSource(dsn)
	if err != nil {
		p.Close()
		return nil, err
	}
	last := bl.Events[len(bl.Events)-1]
	return &demoServer{
		Name:    fmt.Sprintf("a fake MySQL %s primary on %s (internal/fakeprimary, gtid_mode=ON)", binlogbuild.ServerVersion(bl.Flavor), p.Addr()),
		Primary: p,
		DSN:     dsn,
		Source:  func() binlogstream.Source { return src }, // a SyncerSource opens a new connection per dump
		Binlog:  bl,
		First:   binlogstream.Position{File: bl.Files[0].Name, Offset: 4},
		End:     binlogstream.Position{File: last.File, Offset: uint64(last.End)},
		Close:   func() { p.Close() },
	}, nil
}

// demoSource is the Source runTail builds for --dsn (file mode, MySQL).
func demoSource(dsn binlogstream.DSN) (*binlogstream.SyncerSource, error) {
	return binlogstream.NewSyncerSource(binlogstream.SyncerConfig{
		DSN:             dsn,
		ServerID:        defaultServerID,
		Flavor:          mysql.MySQLFlavor,
		HeartbeatPeriod: time.Second,
		ReadTimeout:     10 * time.Second,
		Tune:            func(c *replication.BinlogSyncerConfig) { c.TimestampStringLocation = time.UTC },
	})
}

// crashPoint is where the demo's crashed run dies: before writing row
// crashRow (0-based) of the crashNth Write_rows of the seed's statement.
const (
	crashNth = 4
	crashRow = 1
)

// splitStatement is one statement's events: its Table_maps, then its Rows
// events, the last with STMT_END_F.
type splitStatement struct {
	Maps, Rows []binlogbuild.EventInfo
}

// statements lists the row statements of bl in order.
func statements(bl *binlogbuild.Binlog) []splitStatement {
	var out []splitStatement
	var cur *splitStatement
	for _, e := range bl.Events {
		switch {
		case e.Type == replication.TABLE_MAP_EVENT:
			if cur == nil || len(cur.Rows) > 0 {
				out = append(out, splitStatement{})
				cur = &out[len(out)-1]
			}
			cur.Maps = append(cur.Maps, e)
		case binlogbuild.IsRowsEvent(e.Type) && cur != nil:
			cur.Rows = append(cur.Rows, e)
			if !e.MidStatement {
				cur = nil
			}
		}
	}
	return out
}

// runDemo streams srv to a temporary file, "kills" the run between two
// rows of the seed's split statement, resumes from the file while the
// connection is cut once, and checks the result against an
// uninterrupted run. It prints the story to out.
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
	d := &demo{srv: srv, out: out}
	if d.seed, d.multi, err = demoStatements(srv.Binlog); err != nil {
		return err
	}
	d.printIntro()
	want, err := d.referenceRun(ctx, filepath.Join(dir, "reference.jsonl"))
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "out.jsonl")
	if err := d.crashedRun(ctx, path); err != nil {
		return err
	}
	tok, err := d.resumedRun(ctx, path)
	if err != nil {
		return err
	}
	if err := d.naiveRun(ctx, tok); err != nil {
		return err
	}
	if err := d.compare(path, want); err != nil {
		return err
	}
	d.p("")
	d.p("Done in %s.", time.Since(began).Round(time.Millisecond))
	return nil
}

// demo is one run of the demo: its server, the two statements it acts
// in, and where it prints.
type demo struct {
	srv *demoServer
	out io.Writer
	// seed is the seed's statement, where the run crashes; multi the
	// two-table statement, where the connection is cut.
	seed, multi *splitStatement
}

// p prints one line of the story.
func (d *demo) p(format string, args ...any) { fmt.Fprintf(d.out, format+"\n", args...) }

// cfg is the tailConfig of a run on the fake primary, from its start to
// its end.
func (d *demo) cfg() tailConfig {
	return tailConfig{Source: d.srv.Source(), Start: binlogstream.StartAt(d.srv.First), Target: d.srv.End,
		MaxReconnectAttempts: 10, ReconnectBackoff: 10 * time.Millisecond}
}

// demoStatements finds the seed's statement (the first split into
// crashNth+1 Rows events or more) and the two-table statement.
func demoStatements(bl *binlogbuild.Binlog) (seed, multi *splitStatement, err error) {
	stmts := statements(bl)
	for i := range stmts {
		s := &stmts[i]
		if seed == nil && len(s.Maps) == 1 && len(s.Rows) > crashNth {
			seed = s
		}
		if multi == nil && len(s.Maps) > 1 && len(s.Rows) > 2 {
			multi = s
		}
	}
	if seed == nil || multi == nil {
		return nil, nil, errors.New("demo binlog: no statement split into 5 Rows events, or no two-table statement")
	}
	return seed, multi, nil
}

// printIntro names the server, its binlog and the seed's statement.
func (d *demo) printIntro() {
	d.p("binlog-tail demo: %s,", d.srv.Name)
	d.p("streamed over TCP by go-mysql's BinlogSyncer as with --dsn; %d binlog files, %d events.",
		len(d.srv.Binlog.Files), len(d.srv.Binlog.Events))
	d.p("Seed 001's statement: one Table_map at %s:%d, then %d Write_rows events; only the last has STMT_END_F.",
		d.seed.Maps[0].File, d.seed.Maps[0].Start, len(d.seed.Rows))
	d.p("")
}

// referenceRun is step 1: the command line itself, uninterrupted, to ref;
// it returns what ref holds.
func (d *demo) referenceRun(ctx context.Context, ref string) ([]byte, error) {
	args := []string{"--dsn", d.srv.Primary.DSN(), "--out", ref, "--start", "oldest", "--stop-at-current", "--quiet"}
	var stderr bytes.Buffer
	if code := cli(ctx, args, io.Discard, &stderr); code != 0 {
		return nil, fmt.Errorf("uninterrupted run: exit %d: %s", code, strings.TrimSpace(stderr.String()))
	}
	want, err := os.ReadFile(ref)
	if err != nil {
		return nil, err
	}
	d.p("1. Uninterrupted run, binlog-tail --dsn '%s' --start oldest --stop-at-current:", d.srv.DSN)
	d.p("   %d lines, %d bytes.", bytes.Count(want, []byte("\n")), len(want))
	return want, nil
}

// crashedRun is step 2: a run to path killed while writing the second row
// of the seed statement's 4th Write_rows.
func (d *demo) crashedRun(ctx context.Context, path string) error {
	victim := d.seed.Rows[crashNth-1]
	c := d.cfg()
	var crashed binlogstream.Event
	var crashTotal int
	c.crashBefore = func(ev binlogstream.Event, row int) bool {
		if ev.Start.File == victim.File && ev.Start.Offset == uint64(victim.Start) && row == crashRow {
			crashed, crashTotal = ev, binlogstream.RowChanges(ev.BinlogEvent)
			return true
		}
		return false
	}
	if _, err := tail(ctx, path, c); !errors.Is(err, errCrashed) {
		return fmt.Errorf("crashed run: want the simulated crash, got %v", err)
	}
	d.p("2. Crashed run: killed while writing row %d of %d of Write_rows #%d at %s-%d (mid-statement),",
		crashRow+1, crashTotal, crashNth, crashed.Start, crashed.End.Offset)
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	complete := bytes.LastIndexByte(data, '\n') + 1
	d.p("   like a SIGKILL: the file holds %d complete lines and %d bytes of a cut line.",
		bytes.Count(data, []byte("\n")), len(data)-complete)
	return nil
}

// resumedRun is steps 3 and 4: the resume from the file alone, with the
// connection cut in the middle of the two-table statement: the primary
// sends half of its third Rows event and stalls (a fakeprimary Fault);
// once the listener has the event before it, the relay the run reads the
// primary through cuts the connection. The streamer then meets the error
// with nothing decoded ahead, so the figures printed do not vary from run
// to run. (The relay cuts rather than Primary.CutAll: a stalled dump that
// is cut there may write an error packet into the half-sent event first.)
// It returns the token the run resumed from.
func (d *demo) resumedRun(ctx context.Context, path string) (binlogstream.ResumePosition, error) {
	f, rec, err := openOutput(path)
	if err != nil {
		return binlogstream.ResumePosition{}, err
	}
	f.Close()
	tok := rec.Resume
	cutIn, beforeCut := d.multi.Rows[2], d.multi.Rows[1]
	sent, frame, err := dumpBytes(d.srv.Binlog, tok.Safe, cutIn)
	if err != nil {
		return tok, err
	}
	rl, err := startRelay(d.srv.Primary.Addr())
	if err != nil {
		return tok, err
	}
	defer rl.Close()
	viaRelay := d.srv.DSN
	viaRelay.Port = rl.Port()
	relayed, err := demoSource(viaRelay)
	if err != nil {
		return tok, err
	}
	d.srv.Primary.InjectFaults(fakeprimary.Fault{AfterBytes: sent + frame/2, Stall: true})
	dumpsBefore := len(d.srv.Primary.Dumps())
	c := d.cfg()
	c.Source = relayed
	var logs bytes.Buffer
	c.Logger = demoLogger(&logs)
	cut := false
	c.crashBefore = func(ev binlogstream.Event, _ int) bool {
		if !cut && ev.End.File == beforeCut.File && ev.End.Offset == uint64(beforeCut.End) {
			cut = true
			rl.Cut()
		}
		return false
	}
	res, err := tail(ctx, path, c)
	if err != nil {
		return tok, fmt.Errorf("resumed run: %w", err)
	}
	if !cut {
		return tok, fmt.Errorf("resumed run: never reached %s", beforeCut)
	}
	resumeDrops := countEvents(d.srv.Binlog, tok.Safe, tok.Streamed)
	d.printResume(tok, res, resumeDrops)
	dumps := d.srv.Primary.Dumps()[dumpsBefore:]
	cutDrops, err := d.checkReconnect(res, dumps, beforeCut, resumeDrops)
	if err != nil {
		return tok, err
	}
	d.printCut(res, dumps, cutIn, beforeCut, frame, cutDrops, logs.String())
	return tok, nil
}

// printCut is step 4's story: where the connection was cut and how the
// streamer reconnected, with its log line.
func (d *demo) printCut(res tailResult, dumps []string, cutIn, beforeCut binlogbuild.EventInfo, frame int64, cutDrops uint64, logs string) {
	d.p("4. Meanwhile the resumed run's TCP connection was cut %d bytes into the %d-byte %s at %s:%d",
		frame/2-5, cutIn.End-cutIn.Start, rowsName(cutIn.Type), cutIn.File, cutIn.Start)
	d.p("   (the fake primary stalled there, a fakeprimary.Fault; a relay between the two cut the connection),")
	d.p("   inside the %d-table statement (%s).", len(d.multi.Maps), shape(d.multi))
	d.p("   The streamer reconnected by itself (Stats().Reconnects %d; dumps the primary served: %s, then %s):",
		res.Stats.Reconnects, dumps[0], dumps[1])
	d.p("   it reopened at its own safe point, before the statement's Table_maps, and dropped the %d replayed", cutDrops)
	d.p("   events up to %s it had delivered. Stats(): DroppedAtStart %d, DroppedAfterReconnect %d.",
		binlogstream.Position{File: beforeCut.File, Offset: uint64(beforeCut.End)}, res.Stats.DroppedAtStart, res.Stats.DroppedAfterReconnect)
	if line := reconnectLine(logs); line != "" {
		d.p("   Its log: %s", line)
	}
}

// demoLogger logs the resumed run's warnings (its reconnect) to w.
func demoLogger(w io.Writer) *logrus.Logger {
	log := logrus.New()
	log.SetOutput(w)
	log.SetLevel(logrus.WarnLevel)
	log.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true, DisableQuote: true})
	return log
}

// printResume is step 3's story: what the token said and what the
// resumed dump dropped, trimmed and wrote.
func (d *demo) printResume(tok binlogstream.ResumePosition, res tailResult, resumeDrops uint64) {
	d.p("3. Resume: cut the partial line; the last complete line's token says")
	d.p("     Streamed %s, Rows %d: every event up to there and %d row(s) of the next one are in the file;",
		tok.Streamed, tok.Rows, tok.Rows)
	d.p("     Safe     %s: the statement boundary before the Table_map, where a dump decodes again.", tok.Safe)
	d.p("   The resumed dump started at Safe, dropped %d replayed events (the Table_map and the %d Write_rows",
		resumeDrops, crashNth-1)
	d.p("   before the partial one), trimmed its %d row(s) already written, and wrote %d new lines.", tok.Rows, res.Lines)
}

// checkReconnect checks that the resumed run reconnected once, at the
// two-table statement's boundary, dropping at the start and after the
// reconnect exactly the events it had delivered; it returns how many it
// dropped after the reconnect.
func (d *demo) checkReconnect(res tailResult, dumps []string, beforeCut binlogbuild.EventInfo, resumeDrops uint64) (uint64, error) {
	if res.Stats.Reconnects != 1 || len(dumps) != 2 {
		return 0, fmt.Errorf("resumed run: want 1 reconnect and 2 dumps, got %d and %q", res.Stats.Reconnects, dumps)
	}
	reopened, err := binlogstream.ParsePosition(dumps[1])
	if err != nil {
		return 0, fmt.Errorf("the fake primary's dump %q: %w", dumps[1], err)
	}
	if m := d.multi.Maps[0]; reopened != (binlogstream.Position{File: m.File, Offset: uint64(m.Start)}) {
		return 0, fmt.Errorf("resumed run: reconnected at %s, want the statement boundary %s:%d", reopened, m.File, m.Start)
	}
	atCut := binlogstream.Position{File: beforeCut.File, Offset: uint64(beforeCut.End)}
	cutDrops := countEvents(d.srv.Binlog, reopened, atCut)
	if res.Stats.DroppedAtStart != resumeDrops || res.Stats.DroppedAfterReconnect != cutDrops {
		return 0, fmt.Errorf("resumed run: Stats() DroppedAtStart %d, DroppedAfterReconnect %d, want %d and %d",
			res.Stats.DroppedAtStart, res.Stats.DroppedAfterReconnect, resumeDrops, cutDrops)
	}
	return cutDrops, nil
}

// naiveRun is step 5: what the seeds did, a resume from the last streamed
// position, fails.
func (d *demo) naiveRun(ctx context.Context, tok binlogstream.ResumePosition) error {
	naiveErr := naiveResume(ctx, d.srv.Source(), tok.Streamed)
	if naiveErr == nil {
		return errors.New("the naive resume unexpectedly worked")
	}
	d.p("5. A naive resume from the last streamed position %s (what gh-ost's checkpoint did) fails:", tok.Streamed)
	var ee *replication.EventError
	if errors.As(naiveErr, &ee) {
		d.p("     %T from go-mysql over the wire: %s", ee, ee.Err)
	} else {
		d.p("     %v", naiveErr)
	}
	return nil
}

// compare is step 6: the resumed file at path equals the uninterrupted
// run's, want.
func (d *demo) compare(path string, want []byte) error {
	got, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("the resumed file differs from the uninterrupted run's (%d vs %d bytes)", len(got), len(want))
	}
	d.p("6. The resumed file equals the uninterrupted run's byte for byte (%d lines, file/pos/resume included):",
		bytes.Count(got, []byte("\n")))
	d.p("   nothing lost, nothing repeated, across the crash and the cut.")
	return nil
}

// relay forwards TCP connections to a server; Cut closes them all, as a
// network failure does: nothing the server writes afterwards gets through.
type relay struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn // client side, then server side, of each connection
	closed bool
}

func startRelay(target string) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, target: target}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

// Port is the port the relay listens on.
func (r *relay) Port() uint16 { return uint16(r.ln.Addr().(*net.TCPAddr).Port) }

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		client, err := r.ln.Accept()
		if err != nil {
			return // closed
		}
		server, err := net.Dial("tcp", r.target)
		if err != nil {
			client.Close()
			continue
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			client.Close()
			server.Close()
			return
		}
		r.conns = append(r.conns, client, server)
		r.mu.Unlock()
		r.wg.Add(2)
		pipe := func(dst, src net.Conn) {
			defer r.wg.Done()
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		go pipe(server, client)
		go pipe(client, server)
	}
}

// Cut closes every connection relayed so far, client side first.
func (r *relay) Cut() {
	r.mu.Lock()
	conns := r.conns
	r.conns = nil
	r.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// Close stops the relay and waits for its goroutines.
func (r *relay) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.ln.Close()
	r.Cut()
	r.wg.Wait()
}

// dumpBytes is how many bytes a file dump from pos sends before event e
// (packet headers and OK bytes included, as fakeprimary.Fault.AfterBytes
// counts them) and the size of e's own packet. It replays the dump on a
// FakeSource, which hands out the bytes the fake primary sends.
func dumpBytes(bl *binlogbuild.Binlog, pos binlogstream.Position, e binlogbuild.EventInfo) (before, packet int64, err error) {
	f, ok := bl.File(e.File)
	if !ok {
		return 0, 0, fmt.Errorf("no binlog file %s", e.File)
	}
	want := f.Data[e.Start:e.End]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := binlogbuild.NewFakeSource(bl).OpenRawFile(ctx, mysql.Position{Name: pos.File, Pos: uint32(pos.Offset)})
	if err != nil {
		return 0, 0, err
	}
	defer d.Close()
	for {
		raw, err := d.Next(ctx)
		if err != nil {
			return 0, 0, fmt.Errorf("dump from %s: %w before %s", pos, err, e)
		}
		size := int64(4 + 1 + len(raw)) // packet header, OK byte, event
		if bytes.Equal(raw, want) {
			return before, size, nil
		}
		before += size
	}
}

// countEvents counts the events that start at or after from and end at or
// before to.
func countEvents(bl *binlogbuild.Binlog, from, to binlogstream.Position) uint64 {
	var n uint64
	for _, e := range bl.Events {
		start := binlogstream.Position{File: e.File, Offset: uint64(e.Start)}
		end := binlogstream.Position{File: e.File, Offset: uint64(e.End)}
		if start.Compare(from) >= 0 && end.Compare(to) <= 0 {
			n++
		}
	}
	return n
}

// reconnectLine is the streamer's reconnect warning from log, without
// the level.
func reconnectLine(log string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "reconnecting") {
			return strings.TrimPrefix(l, "level=warning ")
		}
	}
	return ""
}

// rowsName names a Rows event type as the server's docs do.
func rowsName(t replication.EventType) string {
	switch binlogstream.RowKind(t) {
	case "insert":
		return "Write_rows"
	case "update":
		return "Update_rows"
	case "delete":
		return "Delete_rows"
	}
	return t.String()
}

// shape lists a statement's events, runs of one type counted:
// "Table_map x2, Write_rows x2, Delete_rows x2".
func shape(s *splitStatement) string {
	var names []string
	for range s.Maps {
		names = append(names, "Table_map")
	}
	for _, r := range s.Rows {
		names = append(names, rowsName(r.Type))
	}
	var parts []string
	for i := 0; i < len(names); {
		j := i
		for j < len(names) && names[j] == names[i] {
			j++
		}
		if j-i == 1 {
			parts = append(parts, names[i])
		} else {
			parts = append(parts, fmt.Sprintf("%s x%d", names[i], j-i))
		}
		i = j
	}
	return strings.Join(parts, ", ")
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
	s.AddListener(func(context.Context, binlogstream.Event) error { return nil })
	err = s.Run(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}
