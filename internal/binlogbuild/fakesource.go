package binlogbuild

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// ErrStreamClosed is what Next returns once its stream was closed.
var ErrStreamClosed = errors.New("fake source: stream closed")

// FakeSource serves a Binlog the way a server serves a dump, and decodes
// every event with go-mysql's own parser, so a wrong start position fails
// exactly as it would against a real server. It also injects faults. Its
// streams have binlogstream.Stream's methods; testhelpers.FakeSource makes
// it a binlogstream.Source (this package does not import binlogstream).
//
// A dump from file:pos yields: a fake Rotate (artificial, log_pos 0, no
// CRC) naming file and pos; the file's Format_description (the real bytes
// when pos is 4, else with log_pos 0 and the CRC recomputed); on MariaDB
// when pos > 4, a fake Gtid_list (artificial, log_pos 0) holding the GTID
// state at pos; then the file's events from pos. After the last event of a
// file that has a successor it sends a fake Rotate (next file, 4, with the
// binlog's CRC) and the next file's Format_description, as MySQL's and
// MariaDB's dump threads do, then that file's events.
//
// A GTID dump starts at offset 4 of the newest file whose start state
// (Previous_gtids / Gtid_list) the client set contains, and the server
// filters: every event group whose GTID the set contains is left out,
// everything else (group or not) is sent. The in-flight transaction is
// thus sent again from its GTID event. In GTID mode the stream also fills
// XIDEvent.GSet and QueryEvent.GSet as go-mysql's BinlogSyncer does.
//
// All methods are safe for concurrent use; a Stream's Next must be called
// from one goroutine at a time, its Close from any.
type FakeSource struct {
	mu       sync.Mutex
	bl       *Binlog
	gtidAt   map[mysql.Position]string
	wake     chan struct{} // closed and replaced when the binlog grows
	purged   int
	opens    []string
	failures map[int]int
	refuse   int
	opt      sourceOptions
}

type sourceOptions struct {
	heartbeatEvery int
	idleHeartbeat  time.Duration
	skipAnnotate   bool
	noReplaySkip   bool
	newDecode      func() func(*replication.RowsEvent, []byte) error
}

// Stream is one dump of a FakeSource, decoded: the methods of
// binlogstream.Stream.
type Stream interface {
	Next(ctx context.Context) (*replication.BinlogEvent, error)
	Close() error
}

// SourceOption configures a FakeSource.
type SourceOption func(*sourceOptions)

// HeartbeatEvery sends a heartbeat (artificial, log_pos = current offset)
// after every n binlog events.
func HeartbeatEvery(n int) SourceOption { return func(o *sourceOptions) { o.heartbeatEvery = n } }

// HeartbeatWhenIdle sends a heartbeat every d while the stream is caught up.
func HeartbeatWhenIdle(d time.Duration) SourceOption {
	return func(o *sourceOptions) { o.idleHeartbeat = d }
}

// SkipReplayedRowsOff makes OpenFileReplay decode every event, as a source
// without the optimisation would.
func SkipReplayedRowsOff() SourceOption { return func(o *sourceOptions) { o.noReplaySkip = true } }

// SkipAnnotateRows leaves MariaDB Annotate_rows events out of the dump, as
// MariaDB does for a client that does not ask for them (go-mysql asks only
// with FillZeroLogPos): the stream then has holes between positions.
func SkipAnnotateRows() SourceOption { return func(o *sourceOptions) { o.skipAnnotate = true } }

// DecodeRowsWith makes each stream decode rows events with a decoder from
// newDecode, as a real source configured with it does; without it go-mysql
// decodes them.
func DecodeRowsWith(newDecode func() func(*replication.RowsEvent, []byte) error) SourceOption {
	return func(o *sourceOptions) { o.newDecode = newDecode }
}

// NewFakeSource serves bl.
func NewFakeSource(bl *Binlog, opts ...SourceOption) *FakeSource {
	s := &FakeSource{failures: map[int]int{}, wake: make(chan struct{})}
	for _, o := range opts {
		o(&s.opt)
	}
	s.setBinlog(bl)
	return s
}

func (s *FakeSource) setBinlog(bl *Binlog) {
	s.bl = bl
	s.gtidAt = make(map[mysql.Position]string, len(bl.Events))
	for _, e := range bl.Events {
		if e.GTID != "" {
			s.gtidAt[e.StartPos()] = e.GTID
		}
	}
}

// Append replaces the served binlog with a later Build of the same Builder
// (it must extend the current one); blocked streams go on with the new
// events, as a live server's dump does.
func (s *FakeSource) Append(bl *Binlog) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.bl
	if bl.Flavor != old.Flavor || len(bl.Files) < len(old.Files) {
		return errors.New("fake source: appended binlog does not extend the served one")
	}
	for i, f := range old.Files {
		n := bl.Files[i]
		if n.Name != f.Name || !bytes.HasPrefix(n.Data, f.Data) || (i < len(old.Files)-1 && len(n.Data) != len(f.Data)) {
			return fmt.Errorf("fake source: appended binlog changes file %s", f.Name)
		}
	}
	s.setBinlog(bl)
	close(s.wake)
	s.wake = make(chan struct{})
	return nil
}

// FailStream makes the stream of the open-th Open call (0-based, refused
// calls included) fail after it has returned n events (fake Rotate, FDE
// and heartbeats included), with an error wrapping mysql.ErrBadConn.
func (s *FakeSource) FailStream(open, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[open] = n
}

// RefuseOpens makes the next k Open calls fail with an error wrapping
// mysql.ErrBadConn, as when the server is unreachable.
func (s *FakeSource) RefuseOpens(k int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = k
}

// Purge removes the first n files (never the last), as PURGE BINARY LOGS:
// dumps that need them fail with error 1236.
func (s *FakeSource) Purge(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.purged = min(n, len(s.bl.Files)-1)
}

// Opens lists every Open call in order: "file:pos" or "gtid <set>", with
// " (refused)" appended when RefuseOpens turned it down.
func (s *FakeSource) Opens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.opens...)
}

// open records an Open call and returns a new stream or the refusal.
func (s *FakeSource) open(ctx context.Context, desc string) (*fakeStream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	idx := len(s.opens)
	if s.refuse > 0 {
		s.refuse--
		s.opens = append(s.opens, desc+" (refused)")
		return nil, fmt.Errorf("fake source: connection refused: %w", mysql.ErrBadConn)
	}
	s.opens = append(s.opens, desc)
	st := &fakeStream{src: s, bl: s.bl, parser: replication.NewBinlogParser(), failAt: -1, closed: make(chan struct{})}
	if s.opt.newDecode != nil {
		st.parser.SetRowsEventDecodeFunc(s.opt.newDecode())
	}
	st.parser.SetFlavor(string(s.bl.Flavor))
	st.parser.SetVerifyChecksum(true)
	if n, ok := s.failures[idx]; ok {
		st.failAt = n
	}
	return st, nil
}

func fatal(msg string) error {
	return mysql.NewError(mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, msg)
}

// OpenFile starts a dump at pos (COM_BINLOG_DUMP). An empty file name means
// the first file. Server errors (unknown file, pos past the end) come back
// as the first Next error, as go-mysql's syncer delivers them.
func (s *FakeSource) OpenFile(ctx context.Context, pos mysql.Position) (Stream, error) {
	return s.openFile(ctx, pos, nil)
}

// OpenFileReplay is OpenFile with rows events decoded by skip, the
// decoder that leaves the rows of events up to a resume's streamed
// position undecoded (binlogstream.SkipReplayedRows), as a SyncerSource
// does on a resume; SkipReplayedRowsOff turns it off so tests can compare
// both.
func (s *FakeSource) OpenFileReplay(ctx context.Context, pos mysql.Position, skip func(*replication.RowsEvent, []byte) error) (Stream, error) {
	s.mu.Lock()
	off := s.opt.noReplaySkip
	s.mu.Unlock()
	if off {
		return s.OpenFile(ctx, pos)
	}
	return s.openFile(ctx, pos, skip)
}

func (s *FakeSource) openFile(ctx context.Context, pos mysql.Position, decode func(*replication.RowsEvent, []byte) error) (Stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.open(ctx, fmt.Sprintf("%s:%d", pos.Name, pos.Pos))
	if err != nil {
		return nil, err
	}
	file := -1
	for i := s.purged; i < len(s.bl.Files); i++ {
		if s.bl.Files[i].Name == pos.Name || (pos.Name == "" && i == s.purged) {
			file = i
		}
	}
	switch {
	case file < 0:
		st.err = fatal("Could not find first log file name in binary log index file")
	case int(pos.Pos) > len(s.bl.Files[file].Data):
		st.err = fatal("Client requested master to start replication from position > file size")
	default:
		st.start(file, max(pos.Pos, 4), true)
	}
	if decode != nil {
		st.parser.SetRowsEventDecodeFunc(decode)
	}
	return st, nil
}

// OpenGTID starts a dump after set (COM_BINLOG_DUMP_GTID /
// @slave_connect_state). set is cloned, never kept or changed.
func (s *FakeSource) OpenGTID(ctx context.Context, set mysql.GTIDSet) (Stream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	desc := "gtid <nil>"
	if set != nil {
		desc = "gtid " + set.String()
	}
	st, err := s.open(ctx, desc)
	if err != nil {
		return nil, err
	}
	if bad := wrongSetType(s.bl.Flavor, set); bad != nil {
		return nil, bad
	}
	have := set.Clone()
	file, err := s.gtidStartFile(have)
	if err != nil {
		st.err = err
		return st, nil
	}
	st.have, st.prev = have, have.Clone()
	st.skip = map[string]bool{}
	st.start(file, 4, false)
	return st, nil
}

func wrongSetType(f Flavor, set mysql.GTIDSet) error {
	var ok bool
	switch set.(type) {
	case *mysql.MysqlGTIDSet:
		ok = f == MySQL
	case *mysql.MariadbGTIDSet:
		ok = f == MariaDB
	}
	if !ok {
		return fmt.Errorf("fake source: %s binlog cannot be served from GTID set %T", f, set)
	}
	return nil
}

// gtidStartFile finds where a server starts a GTID dump, or its error.
func (s *FakeSource) gtidStartFile(have mysql.GTIDSet) (int, error) {
	bl := s.bl
	if bl.Anonymous {
		return 0, fatal("The replication sender thread cannot start in AUTO_POSITION mode: this server has GTID_MODE = OFF instead of ON.")
	}
	all := bl.ExecutedBefore(len(bl.Events))
	if !all.Contain(ownPart(bl, have)) {
		if bl.Flavor == MariaDB {
			return 0, fatal(fmt.Sprintf("Error: connecting slave requested to start from GTID %s, which is not in the master's binlog", have))
		}
		return 0, fatal("Slave has more GTIDs than the master has, using the master's SERVER_UUID. This may indicate that the end of the binary log was truncated or that the last binary log file was lost, e.g., after a power or disk failure when sync_binlog != 1. The master may or may not have rolled back transactions that were already replicated to the slave. Suggest to replicate any transactions that master has rolled back from slave to master, and/or commit empty transactions on master to account for transactions that have been committed on master but are not included in GTID_EXECUTED.")
	}
	file := -1
	for i := s.purged; i < len(bl.Files); i++ {
		start, err := bl.ParseGTIDSet(bl.Files[i].StartGTIDs)
		if err != nil {
			return 0, err
		}
		if have.Contain(start) {
			file = i
		}
	}
	if file < 0 {
		if bl.Flavor == MariaDB {
			return 0, fatal("Could not find GTID state requested by slave in any binlog files. Probably the slave state is too old and required binlog files have been purged.")
		}
		return 0, fatal(fmt.Sprintf("Cannot replicate because the master purged required binary logs. Replicate the missing transactions from elsewhere, or provision a new slave from backup. Consider increasing the master's binary log expiration period. The GTID set sent by the slave is '%s', and the missing transactions are not in the binary log.", have))
	}
	return file, nil
}

// ownPart is the part of have this server's GTIDs live in: the binlog's
// server uuid (MySQL) or the domains it writes (MariaDB).
func ownPart(bl *Binlog, have mysql.GTIDSet) mysql.GTIDSet {
	all := bl.ExecutedBefore(len(bl.Events))
	switch h := have.(type) {
	case *mysql.MysqlGTIDSet:
		a := all.(*mysql.MysqlGTIDSet)
		own := make(mysql.MysqlGTIDSet)
		for k, v := range *h {
			if _, ok := (*a)[k]; ok {
				own[k] = v
			}
		}
		return &own
	case *mysql.MariadbGTIDSet:
		a := all.(*mysql.MariadbGTIDSet)
		own := &mysql.MariadbGTIDSet{Sets: map[uint32]*mysql.MariadbGTID{}}
		for d, g := range h.Sets {
			if _, ok := a.Sets[d]; ok {
				own.Sets[d] = g
			}
		}
		return own
	}
	return have
}

// fakeStream is one dump. Only Next's goroutine touches its fields; Close
// only closes the closed channel.
type fakeStream struct {
	src    *FakeSource
	bl     *Binlog // snapshot, refreshed from src when caught up
	parser *replication.BinlogParser
	queue  [][]byte // server-made events to send before the next file event
	file   int
	off    uint32
	served int
	failAt int
	err    error // sticky: the stream is dead
	sinceH int   // binlog events since the last heartbeat
	idle   bool  // the idle heartbeat is due

	have, prev, curr mysql.GTIDSet // GTID mode only
	skip             map[string]bool

	closed    chan struct{}
	closeOnce sync.Once
}

// start queues the dump preamble for file at off. Called with src.mu held.
func (st *fakeStream) start(file int, off uint32, fileMode bool) {
	bl := st.bl
	f := bl.Files[file]
	fdeEnd := 4 + binary.LittleEndian.Uint32(f.Data[4+9:])
	fde := f.Data[4:fdeEnd]
	st.file = file
	st.queue = append(st.queue, FakeRotate(bl.ServerID, f.Name, uint64(off), false))
	if off == 4 {
		st.queue = append(st.queue, bytes.Clone(fde))
		st.off = fdeEnd
		return
	}
	st.queue = append(st.queue, PatchLogPos(fde, 0, true))
	st.off = off
	if fileMode && bl.Flavor == MariaDB {
		i := sort.Search(len(bl.Events), func(i int) bool {
			e := bl.Events[i]
			return e.File > f.Name || (e.File == f.Name && e.Start >= off)
		})
		state := bl.ExecutedBefore(i).(*mysql.MariadbGTIDSet)
		var list []mysql.MariadbGTID
		for _, g := range state.Sets {
			list = append(list, *g)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].DomainID < list[j].DomainID })
		st.queue = append(st.queue, EncodeEvent(EventHeader{Type: replication.MARIADB_GTID_LIST_EVENT,
			ServerID: bl.ServerID, Flags: FlagArtificial}, GTIDListBody(list), bl.Checksum))
	}
}

// Next returns the next event, decoded by go-mysql.
func (st *fakeStream) Next(ctx context.Context) (*replication.BinlogEvent, error) {
	if st.err != nil {
		return nil, st.err
	}
	select {
	case <-st.closed:
		return nil, ErrStreamClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if st.failAt >= 0 && st.served >= st.failAt {
		st.err = fmt.Errorf("fake source: connection dropped after %d events: %w", st.served, mysql.ErrBadConn)
		return nil, st.err
	}
	raw, err := st.nextRaw(ctx)
	if err != nil {
		return nil, err
	}
	// go-mysql's decoded event aliases the bytes it parsed (RawData):
	// give it its own copy, not the binlog's.
	ev, err := st.parser.Parse(bytes.Clone(raw))
	if err != nil {
		st.err = err
		return nil, err
	}
	st.trackGTID(ev)
	st.served++
	return ev, nil
}

// nextRaw returns the bytes of the next event to send, blocking while the
// stream is caught up.
func (st *fakeStream) nextRaw(ctx context.Context) ([]byte, error) {
	for {
		if len(st.queue) > 0 {
			raw := st.queue[0]
			st.queue = st.queue[1:]
			return raw, nil
		}
		st.src.mu.Lock()
		st.bl = st.src.bl
		wake, opt := st.src.wake, st.src.opt
		gtidAt := st.src.gtidAt
		st.src.mu.Unlock()
		bl := st.bl
		f := bl.Files[st.file]

		if opt.heartbeatEvery > 0 && st.sinceH >= opt.heartbeatEvery {
			st.sinceH = 0
			return st.heartbeat(), nil
		}
		if int(st.off) < len(f.Data) {
			raw, err := st.readEvent(f)
			if err != nil {
				st.err = err
				return nil, err
			}
			gtid := ""
			if st.have != nil { // a GTID dump: the transactions the client has are skipped
				gtid = gtidAt[mysql.Position{Name: f.Name, Pos: st.off - uint32(len(raw))}]
			}
			if st.skipped(raw, gtid, opt) {
				continue
			}
			st.sinceH++
			return raw, nil
		}
		if st.file+1 < len(bl.Files) {
			next := bl.Files[st.file+1]
			st.file++
			st.queue = append(st.queue, FakeRotate(bl.ServerID, next.Name, 4, bl.Checksum))
			fdeEnd := 4 + binary.LittleEndian.Uint32(next.Data[4+9:])
			st.queue = append(st.queue, bytes.Clone(next.Data[4:fdeEnd]))
			st.off = fdeEnd
			continue
		}

		if err := st.wait(ctx, wake, opt.idleHeartbeat); err != nil {
			return nil, err
		}
		if st.idle {
			st.idle = false
			return st.heartbeat(), nil
		}
	}
}

// wait blocks until the binlog grows (nil), the idle heartbeat is due (nil,
// st.idle set), or ctx or the stream is done.
func (st *fakeStream) wait(ctx context.Context, wake <-chan struct{}, idle time.Duration) error {
	var tick <-chan time.Time
	if idle > 0 {
		t := time.NewTimer(idle)
		defer t.Stop()
		tick = t.C
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-st.closed:
		return ErrStreamClosed
	case <-tick:
		st.idle = true
	case <-wake:
	}
	return nil
}

// readEvent cuts the event at st.off out of f (the binlog's own bytes:
// not to be modified), or fails as a server does
// when a position is not an event boundary.
func (st *fakeStream) readEvent(f File) ([]byte, error) {
	rest := f.Data[st.off:]
	if len(rest) < headerSize {
		return nil, fatal(fmt.Sprintf("bogus data in log event; the first event '%s' at %d", f.Name, st.off))
	}
	size := binary.LittleEndian.Uint32(rest[9:])
	if size < headerSize || int(size) > len(rest) {
		return nil, fatal(fmt.Sprintf("bogus data in log event; the first event '%s' at %d", f.Name, st.off))
	}
	st.off += size
	return rest[:size:size], nil
}

// skipped says whether the server would leave this event out.
func (st *fakeStream) skipped(raw []byte, gtid string, opt sourceOptions) bool {
	if opt.skipAnnotate && replication.EventType(raw[4]) == replication.MARIADB_ANNOTATE_ROWS_EVENT {
		return true
	}
	if st.have == nil || gtid == "" {
		return false
	}
	skip, ok := st.skip[gtid]
	if !ok {
		one, err := st.bl.ParseGTIDSet(gtid)
		skip = err == nil && st.have.Contain(one)
		st.skip[gtid] = skip
	}
	return skip
}

func (st *fakeStream) heartbeat() []byte {
	bl := st.bl
	return EncodeEvent(EventHeader{Type: replication.HEARTBEAT_EVENT, ServerID: bl.ServerID, LogPos: st.off,
		Flags: FlagArtificial}, HeartbeatBody(bl.Files[st.file].Name), bl.Checksum)
}

// trackGTID fills GSet on Xid and Query events in GTID mode, as go-mysql's
// BinlogSyncer does: the requested set plus every GTID seen since.
func (st *fakeStream) trackGTID(ev *replication.BinlogEvent) {
	if st.prev == nil {
		return
	}
	switch e := ev.Event.(type) {
	case *replication.GTIDEvent:
		next, err := e.GTIDNext()
		if err != nil {
			return
		}
		if st.curr == nil {
			st.curr = st.prev.Clone()
		}
		_ = st.curr.Update(next.String())
	case *replication.MariadbGTIDEvent:
		if st.curr == nil {
			st.curr = st.prev.Clone()
		}
		_ = st.curr.(*mysql.MariadbGTIDSet).AddSet(&e.GTID)
	case *replication.XIDEvent:
		if st.curr != nil {
			e.GSet = st.curr.Clone()
		}
	case *replication.QueryEvent:
		if st.curr != nil {
			e.GSet = st.curr.Clone()
		}
	}
}

// Close ends the dump; a blocked Next returns ErrStreamClosed.
func (st *fakeStream) Close() error {
	st.closeOnce.Do(func() { close(st.closed) })
	return nil
}

// Binlog returns the binlog the source serves now.
func (s *FakeSource) Binlog() *Binlog {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bl
}
