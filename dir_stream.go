package binlogstream

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/binlogstream/binlogstream/internal/binlogfile"
	"github.com/binlogstream/binlogstream/internal/readahead"
	"github.com/binlogstream/binlogstream/internal/rows"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// newStream makes a stream; streamed, when set, is a resume's streamed
// position: rows events up to it stay undecoded (SkipReplayedRows).
func (s *DirSource) newStream(streamed *Position, rowless bool) (*dirStream, error) {
	flavor, err := s.Flavor()
	if err != nil {
		return nil, err
	}
	p := replication.NewBinlogParser()
	p.SetFlavor(flavor)
	p.SetVerifyChecksum(false) // checked by binlogfile.Reader, with file and offset
	if s.cfg.Tune != nil {
		s.cfg.Tune(p)
	}
	var skip *replayWindow
	if streamed != nil {
		skip = newReplayWindow(*streamed)
	}
	want := s.cfg.DecodeTable
	if rowless {
		want = noTable
	}
	dec := readahead.NewDecoder(readahead.Workers(s.cfg.DecodeWorkers), skip.skipFunc(), readahead.NewTableFilter(want))
	dec.Recycle = s.cfg.RecycleRows
	p.SetRowsEventDecodeFunc(dec.Decode)
	ctx, cancel := context.WithCancel(context.Background())
	return &dirStream{src: s, flavor: flavor, parser: p, closed: make(chan struct{}), ctx: ctx, cancel: cancel,
		cur: readahead.Cursor{Q: readahead.NewQueue(dirQueueEvents, dirQueueBytes), Dec: dec}}, nil
}

// A stream reads and decodes ahead on its own goroutine, as go-mysql's
// syncer does for a server, so decoding overlaps the listeners' work: at
// most this many events and bytes of binlog (twice that with the batch
// being delivered; a larger event is let in alone). Decoded rows take
// several times their binlog bytes, so a small byte bound keeps the heap
// and its page faults small (BenchmarkRealMariaDB's
// offline-binlog-tail-vs-mariadb-binlog reports RSS and CPU). Small events
// are bound by the event count.
const (
	dirQueueEvents = 512
	dirQueueBytes  = 1 << 20
)

// dirStream is one dump of a DirSource. A goroutine started by start
// reads and decodes (next) into q; Next serves q's batches on the
// consumer's goroutine; Close may come from any.
type dirStream struct {
	cur    readahead.Cursor // over the queue the reader fills; Dec nil: rows decoded on the reader
	ctx    context.Context  // the reader's; cancelled by Close
	cancel context.CancelFunc

	src    *DirSource
	flavor string
	parser *replication.BinlogParser

	name     string // current file
	r        *binlogfile.Reader
	crc      bool     // the current file's events carry a checksum
	headPos  uint64   // with needHead: the offset the dump starts at in name
	headCRC  bool     // with needHead: whether the fake Rotate carries a checksum
	needHead bool     // the file's preamble is still to read
	queue    [][]byte // preamble events to parse and return before file events
	err      error    // sticky

	have     mysql.GTIDSet // GTID dump: the client's set and every group delivered since; nil in file mode
	skipping bool          // GTID dump: inside a group the client has
	groups   groupTracker  // GTID dump: the group being delivered

	lastType replication.EventType // of the current file's last event read
	rotateTo string                // the file its Rotate event names, "" before one

	// handOff, when set (ArchiveSource), is asked at the clean end of
	// each file for a live file to continue with; a non-empty answer ends
	// the stream with a *handOffError.
	handOff func(cur, rotateTo string) (string, error)

	idleSince time.Time // zero while events flow

	mu        sync.Mutex // the open file, against Close
	closed    chan struct{}
	closeOnce sync.Once
}

// begin makes the stream start at name:off with a fake Rotate (with a
// checksum when crc) and the file's Format_description.
func (st *dirStream) begin(name string, off uint64, crc bool) {
	st.name, st.headPos, st.headCRC, st.needHead = name, off, crc, true
}

// openHead opens st.name and queues the preamble.
func (st *dirStream) openHead() error {
	path := st.src.path(st.name)
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			names, _ := st.src.Files()
			return st.src.notInDir(st.name, st.headPos, names)
		}
		return &FileError{Path: path, Err: err}
	}
	r := binlogfile.NewReader(f, path, fileFaults)
	h, err := r.Head()
	if err != nil {
		f.Close()
		return err
	}
	if st.headPos > 4 && st.headPos < r.Off() {
		f.Close()
		return r.Corrupt(st.headPos, "the position is inside the Format_description (it ends at %d)", r.Off())
	}
	if st.headPos > r.Off() {
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return &FileError{Path: path, Err: err}
		}
		if uint64(fi.Size()) < st.headPos {
			f.Close()
			return &FileError{Path: path, Offset: st.headPos, Err: fmt.Errorf("%w: the position is past the end of the file (%d bytes)", ErrNotInDir, fi.Size())}
		}
		if err := r.Seek(st.headPos); err != nil {
			f.Close()
			return err
		}
	}
	fde := h.FDERaw
	if fde[17]&binlogfile.LogEventBinlogInUse != 0 {
		// A server sends it without the flag (the checksum is of the
		// event without it).
		fde = bytes.Clone(fde)
		fde[17] &^= binlogfile.LogEventBinlogInUse
	}
	if st.headPos > 4 { // as a server resends it: LogPos 0, checksum recomputed
		fde = bytes.Clone(fde)
		binary.LittleEndian.PutUint32(fde[13:], 0)
		if h.CRC {
			n := len(fde) - replication.BinlogChecksumLength
			binary.LittleEndian.PutUint32(fde[n:], crc32.ChecksumIEEE(fde[:n]))
		}
	}
	st.queue = append(st.queue, binlogfile.EncodeFakeRotate(st.name, st.headPos, st.headCRC), fde)
	st.mu.Lock()
	if st.r != nil {
		st.r.Close()
	}
	st.r, st.crc, st.needHead = r, h.CRC, false
	st.mu.Unlock()
	st.lastType, st.rotateTo = replication.FORMAT_DESCRIPTION_EVENT, ""
	select {
	case <-st.closed: // closed meanwhile: Close may have missed the new file
		st.closeFile()
	default:
	}
	return nil
}

func (st *dirStream) fail(err error) (*replication.BinlogEvent, error) {
	st.err = err
	return nil, err
}

// start runs the reader goroutine.
func (st *dirStream) start() {
	go func() {
		for {
			ev, err := st.next(st.ctx)
			if err != nil {
				st.cur.Q.Fail(err)
				return
			}
			if st.cur.Q.HandleEvent(ev) != nil {
				return
			}
		}
	}()
}

func (st *dirStream) takeArena() *rows.Arena { return st.cur.TakeArena() }

// Next returns the next event the reader decoded, once the workers have
// decoded its rows.
func (st *dirStream) Next(ctx context.Context) (*replication.BinlogEvent, error) {
	return st.cur.Next(ctx)
}

// nextOrIdle is Next that returns idle when wake closes with nothing
// queued (idleStream).
func (st *dirStream) nextOrIdle(ctx context.Context, wake <-chan struct{}) (*replication.BinlogEvent, bool, error) {
	return st.cur.NextOrIdle(ctx, wake)
}

// next reads the next event: the preamble, then the file's events,
// waiting (and making heartbeats) while the directory has nothing new.
func (st *dirStream) next(ctx context.Context) (*replication.BinlogEvent, error) {
	for {
		if st.err != nil {
			return nil, st.err
		}
		select {
		case <-st.closed:
			return nil, errStreamClosed
		default:
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(st.queue) > 0 {
			raw := st.queue[0]
			st.queue = st.queue[1:]
			ev, err := parseEvent(st.parser, raw)
			if err != nil {
				return st.fail(&FileError{Path: st.src.path(st.name), Err: err})
			}
			st.idleSince = time.Time{}
			return ev, nil
		}
		if st.needHead {
			if err := st.openHead(); err != nil {
				if errors.Is(err, binlogfile.ErrNotYet) {
					if ev, err := st.wait(ctx); ev != nil || err != nil {
						return ev, err
					}
					continue
				}
				return st.fail(err)
			}
			continue
		}
		off := st.r.Off()
		raw, err := st.r.Next(st.crc)
		if err == nil {
			ev, err := st.event(raw, off)
			if err != nil {
				return st.fail(err)
			}
			if ev != nil {
				st.idleSince = time.Time{}
				return ev, nil
			}
			continue
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, binlogfile.ErrNotYet) {
			return st.fail(err)
		}
		moved, err := st.advance(errors.Is(err, binlogfile.ErrNotYet))
		if err != nil {
			return st.fail(err)
		}
		if moved {
			continue
		}
		if ev, err := st.wait(ctx); ev != nil || err != nil {
			return ev, err
		}
	}
}

var errStreamClosed = errors.New("binlogstream: binlog file stream closed")

// handOffError ends an archive stream where the live server takes over:
// at next:4, or in a GTID dump after executed.
type handOffError struct {
	next     string
	executed mysql.GTIDSet
}

func (e *handOffError) Error() string {
	return "binlogstream: the archive hands over to the server at " + e.next
}

// event parses one file event, or returns nil for one a GTID dump leaves
// out.
func (st *dirStream) event(raw []byte, off uint64) (*replication.BinlogEvent, error) {
	typ := replication.EventType(raw[4])
	st.lastType = typ
	if typ == replication.ROTATE_EVENT {
		st.rotateTo = rotateTarget(raw, st.crc).File
	}
	if st.have != nil {
		switch typ {
		case replication.GTID_EVENT, replication.GTID_TAGGED_LOG_EVENT, replication.MARIADB_GTID_EVENT,
			replication.ANONYMOUS_GTID_EVENT:
			st.skipping = false
		case replication.FORMAT_DESCRIPTION_EVENT, replication.ROTATE_EVENT, replication.STOP_EVENT,
			replication.PREVIOUS_GTIDS_EVENT, replication.MARIADB_GTID_LIST_EVENT, replication.MARIADB_BINLOG_CHECKPOINT_EVENT:
			st.skipping = false // not part of a group
		}
		if st.skipping {
			return nil, nil
		}
	}
	ev, err := parseEvent(st.parser, raw)
	if err != nil {
		return nil, &FileError{Path: st.r.Path(), Offset: off, Err: err}
	}
	if typ == replication.FORMAT_DESCRIPTION_EVENT {
		st.crc = ev.Event.(*replication.FormatDescriptionEvent).ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32
	}
	if st.have != nil {
		if g := eventGTID(ev); g != "" {
			one, err := mysql.ParseGTIDSet(st.flavor, g)
			if err == nil && st.have.Contain(one) {
				st.skipping = true
				return nil, nil
			}
		}
		done := ""
		if st.groups.needs(typ) {
			done = st.groups.observe(ev)
		} else {
			done = st.groups.other(typ)
		}
		if done != "" {
			if err := st.have.Update(done); err != nil {
				return nil, &FileError{Path: st.r.Path(), Offset: off, Err: err}
			}
		}
	}
	return ev, nil
}

// advance is called at the end of what the current file holds (partial:
// an event is only partly written). It moves to the next file when there
// is one and the current file is complete.
func (st *dirStream) advance(partial bool) (bool, error) {
	if st.handOff != nil && !partial {
		next, err := st.handOff(st.name, st.rotateTo)
		if err != nil {
			return false, err
		}
		if next != "" {
			if st.rotateTo == "" && st.lastType != replication.STOP_EVENT {
				return false, &FileError{Path: st.r.Path(), Offset: st.r.Off(), Err: fmt.Errorf(
					"%w: the copy ends without a Rotate or Stop event, and the server has moved on to %s: the copy is incomplete (made while the server wrote the file?)", ErrCorruptEvent, next)}
			}
			h := &handOffError{next: next}
			if st.have != nil {
				if st.groups.gtid != "" {
					return false, &FileError{Path: st.r.Path(), Offset: st.r.Off(), Err: fmt.Errorf(
						"%w: the file ends inside the transaction %s", ErrCorruptEvent, st.groups.gtid)}
				}
				h.executed = st.have.Clone()
			}
			return false, h
		}
	}
	names, err := st.src.Files()
	if err != nil {
		return false, err
	}
	next := ""
	if i := slices.Index(names, st.name); i >= 0 && i+1 < len(names) {
		next = names[i+1]
	} else if i < 0 {
		for _, n := range names {
			if compareFileNames(n, st.name) > 0 {
				next = n
				break
			}
		}
	}
	if next == "" {
		return false, nil
	}
	if st.rotateTo != "" && next != st.rotateTo && !partial {
		return false, &FileError{Path: st.src.path(st.rotateTo), Offset: 4, Err: fmt.Errorf(
			"%w: the Rotate event at the end of %s names it, and the directory goes on with %s", ErrNotInDir, st.name, next)}
	}
	// A later file exists, so the writer has finished this one; what it
	// wrote just before starting the next one may be new to us.
	off := st.r.Off()
	if st.r.More() {
		return true, nil
	}
	if partial {
		return false, &FileError{Path: st.r.Path(), Offset: off, Err: fmt.Errorf(
			"%w: the file ends inside an event, and the later file %s exists (a crash while writing?)", ErrCorruptEvent, next)}
	}
	st.begin(next, 4, st.crc)
	return true, nil
}

// wait sleeps one poll interval; it returns a heartbeat when one is due.
func (st *dirStream) wait(ctx context.Context) (*replication.BinlogEvent, error) {
	now := time.Now()
	if st.idleSince.IsZero() {
		st.idleSince = now
	} else if now.Sub(st.idleSince) >= st.src.cfg.HeartbeatPeriod && !st.needHead && len(st.queue) == 0 {
		st.idleSince = now
		hb := binlogfile.EncodeArtificial(replication.HEARTBEAT_EVENT, uint32(st.r.Off()), nil, st.name, st.crc)
		ev, err := parseEvent(st.parser, hb)
		if err != nil {
			return st.fail(err)
		}
		return ev, nil
	}
	t := time.NewTimer(st.src.cfg.PollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-st.closed:
		return nil, errStreamClosed
	case <-t.C:
	}
	return nil, nil
}

func (st *dirStream) closeFile() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.r != nil {
		st.r.Close()
	}
}

// Close ends the stream; a waiting Next returns.
func (st *dirStream) Close() error {
	st.closeOnce.Do(func() {
		st.cur.Q.Fail(errStreamClosed) // first: Next reports the close
		close(st.closed)
		st.cancel()
		st.closeFile()
		if st.cur.Dec != nil {
			st.cur.Dec.Close()
		}
	})
	return nil
}
