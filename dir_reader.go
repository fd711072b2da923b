package binlogstream

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Reading binlog files: events cut out of a buffered file, checked
// (length, LogPos, checksum) before go-mysql parses them; the head of a
// file; the events a server makes up for a dump; where event groups end.

const (
	// maxEventSize bounds an event's length: MySQL and MariaDB cap events
	// at max_allowed_packet, itself at most 1 GiB.
	maxEventSize = 1<<30 + 1<<16
	binlogMagic  = "\xfebin"
	// logEventBinlogInUse is LOG_EVENT_BINLOG_IN_USE_F in a
	// Format_description's flags: the file is still being written.
	logEventBinlogInUse = 0x1
)

// fileHead is what the first events of a binlog file say.
type fileHead struct {
	fde    *replication.FormatDescriptionEvent
	fdeRaw []byte
	crc    bool
	// state is the file's Previous_gtids / Gtid_list: empty when it has
	// none, nil when the file ends before it could be told.
	state mysql.GTIDSet
}

// errNotYet: the bytes are not all written yet (a file being written).
var errNotYet = errors.New("binlogstream: event not complete yet")

// readHead reads a file's magic, Format_description and, when flavor is
// set, its starting GTID state.
func readHead(path, flavor string) (*fileHead, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		err = fmt.Errorf("%w: %v", ErrNotInDir, err)
	}
	if err != nil {
		return nil, &FileError{Path: path, Err: err}
	}
	defer f.Close()
	r := newEventReader(f, path)
	h, err := r.head()
	if err != nil {
		if errors.Is(err, errNotYet) {
			return nil, &FileError{Path: path, Err: fmt.Errorf("%w: the file has no complete Format_description yet", ErrNotInDir)}
		}
		return nil, err
	}
	if flavor == "" {
		return h, nil
	}
	h.state, err = mysql.ParseGTIDSet(flavor, "")
	if err != nil {
		return nil, err
	}
	p := replication.NewBinlogParser()
	p.SetFlavor(flavor)
	if _, err := parseEvent(p, h.fdeRaw); err != nil {
		return nil, &FileError{Path: path, Offset: 4, Err: err}
	}
	for range 4 { // the state event comes right after the FDE (MariaDB: before Binlog_checkpoint)
		off := r.off
		raw, err := r.next(h.crc)
		if err != nil {
			if errors.Is(err, errNotYet) || errors.Is(err, io.EOF) {
				// A file just created: its state may not be written yet.
				h.state = nil
				break
			}
			return nil, err
		}
		typ := replication.EventType(raw[4])
		if typ != replication.PREVIOUS_GTIDS_EVENT && typ != replication.MARIADB_GTID_LIST_EVENT {
			continue // none after 4 events: the file has no state event (empty state)
		}
		ev, err := parseEvent(p, raw)
		if err != nil {
			return nil, &FileError{Path: path, Offset: off, Err: err}
		}
		switch e := ev.Event.(type) {
		case *replication.PreviousGTIDsEvent:
			if h.state, err = mysql.ParseGTIDSet(flavor, e.GTIDSets); err != nil {
				return nil, &FileError{Path: path, Offset: off, Err: err}
			}
		case *replication.MariadbGTIDListEvent:
			set := h.state.(*mysql.MariadbGTIDSet)
			for i := range e.GTIDs {
				if err := set.AddSet(&e.GTIDs[i]); err != nil {
					return nil, &FileError{Path: path, Offset: off, Err: err}
				}
			}
		}
		break
	}
	return h, nil
}

// eventReader cuts events out of one file through a bufio.Reader
// (go-mysql's ParseFile makes two syscalls per event).
type eventReader struct {
	f    *os.File
	path string
	br   *bufio.Reader
	off  uint64 // where the next event starts
}

func newEventReader(f *os.File, path string) *eventReader {
	return &eventReader{f: f, path: path, br: bufio.NewReaderSize(f, 256<<10)}
}

func (r *eventReader) corrupt(off uint64, format string, args ...any) error {
	return &FileError{Path: r.path, Offset: off, Err: fmt.Errorf("%w: %s", ErrCorruptEvent, fmt.Sprintf(format, args...))}
}

// head reads the magic number and the Format_description.
func (r *eventReader) head() (*fileHead, error) {
	magic, err := r.br.Peek(4)
	if len(magic) == 4 && string(magic) != binlogMagic {
		return nil, r.corrupt(0, "no binlog magic number (the file starts with %x)", magic)
	}
	if err != nil {
		return nil, r.retry(0, err)
	}
	_, _ = r.br.Discard(4)
	r.off = 4
	raw, err := r.next(false)
	if err != nil {
		return nil, err
	}
	if replication.EventType(raw[4]) != replication.FORMAT_DESCRIPTION_EVENT {
		return nil, r.corrupt(4, "the first event is %s, not a Format_description", replication.EventType(raw[4]))
	}
	fde := &replication.FormatDescriptionEvent{}
	if err := fde.Decode(raw[replication.EventHeaderSize:]); err != nil {
		return nil, r.corrupt(4, "undecodable Format_description: %v", err)
	}
	h := &fileHead{fde: fde, fdeRaw: raw, crc: fde.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32}
	if h.crc {
		if err := checkCRC(raw); err != nil {
			return nil, r.corrupt(4, "%v", err)
		}
	}
	return h, nil
}

func checkCRC(raw []byte) error {
	n := len(raw) - replication.BinlogChecksumLength
	if n < replication.EventHeaderSize {
		return fmt.Errorf("%d bytes: too short for a header and a checksum", len(raw))
	}
	got := crc32.ChecksumIEEE(raw[:n])
	if replication.EventType(raw[4]) == replication.FORMAT_DESCRIPTION_EVENT && raw[17]&logEventBinlogInUse != 0 {
		// The server sets this flag while the file is open and clears it
		// in place at close; the checksum is of the event without it.
		c := bytes.Clone(raw[:n])
		c[17] &^= logEventBinlogInUse
		got = crc32.ChecksumIEEE(c)
	}
	if want := binary.LittleEndian.Uint32(raw[n:]); got != want {
		return fmt.Errorf("checksum mismatch (%s event: stored %08x, computed %08x)", replication.EventType(raw[4]), want, got)
	}
	return nil
}

// retry turns a short read at off into errNotYet (rewinding so that the
// event is read again from its start) and other read errors into a
// FileError.
func (r *eventReader) retry(off uint64, err error) error {
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return &FileError{Path: r.path, Offset: off, Err: err}
	}
	if _, serr := r.f.Seek(int64(off), io.SeekStart); serr != nil {
		return &FileError{Path: r.path, Offset: off, Err: serr}
	}
	r.br.Reset(r.f)
	r.off = off
	return errNotYet
}

// seek moves to off (an event boundary the caller vouches for).
func (r *eventReader) seek(off uint64) error {
	if _, err := r.f.Seek(int64(off), io.SeekStart); err != nil {
		return &FileError{Path: r.path, Offset: off, Err: err}
	}
	r.br.Reset(r.f)
	r.off = off
	return nil
}

// next returns the next event's bytes (its own buffer), io.EOF at a clean
// end of the file, errNotYet for an event not completely written, or a
// FileError. crc says whether the file's events carry a checksum; it is
// checked here, so that corruption is reported with file and offset.
func (r *eventReader) next(crc bool) ([]byte, error) { return r.nextInto(crc, nil) }

// nextInto is next reading into buf when it is large enough (the result
// then aliases buf).
func (r *eventReader) nextInto(crc bool, buf []byte) ([]byte, error) {
	off := r.off
	h, err := r.br.Peek(replication.EventHeaderSize)
	if err != nil {
		if len(h) == 0 && errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, r.retry(off, err)
	}
	size := binary.LittleEndian.Uint32(h[9:])
	logPos := binary.LittleEndian.Uint32(h[13:])
	typ := replication.EventType(h[4])
	minSize := uint32(replication.EventHeaderSize)
	if crc && typ != replication.FORMAT_DESCRIPTION_EVENT {
		minSize += replication.BinlogChecksumLength
	}
	switch {
	case size < minSize || size > maxEventSize:
		return nil, r.corrupt(off, "impossible event length %d (%s event): not an event boundary, or a corrupt file", size, typ)
	case binary.LittleEndian.Uint16(h[17:])&replication.LOG_EVENT_ARTIFICIAL_F != 0,
		typ == replication.HEARTBEAT_EVENT, typ == replication.HEARTBEAT_LOG_EVENT_V2:
		// Only a dump sends these; the streamer would pass over one.
		return nil, r.corrupt(off, "%s event flagged artificial or a heartbeat: a server never writes one to a file", typ)
	case logPos != 0 && logPos != uint32(off+uint64(size)):
		return nil, r.corrupt(off, "%s event of %d bytes says it ends at %d: not an event boundary, a corrupt file, "+
			"or a copy that leaves events out (a relay log, a filtered archive)", typ, size, logPos)
	}
	if r.br.Buffered() < int(size) {
		// Not all read yet: when the file is shorter than the event, it
		// is still being written; say so without reading (and later
		// reading again) what a large event has so far.
		if fi, err := r.f.Stat(); err == nil && uint64(fi.Size()) < off+uint64(size) {
			return nil, r.retry(off, io.ErrUnexpectedEOF)
		}
	}
	var raw []byte
	if cap(buf) >= int(size) {
		raw = buf[:size]
	} else {
		raw = make([]byte, size)
	}
	if _, err := io.ReadFull(r.br, raw); err != nil {
		return nil, r.retry(off, err)
	}
	if crc && typ != replication.FORMAT_DESCRIPTION_EVENT {
		if err := checkCRC(raw); err != nil {
			return nil, r.corrupt(off, "%v", err)
		}
	}
	r.off = off + uint64(size)
	return raw, nil
}

// encodeFakeRotate is the Rotate a server sends first in a dump (and when
// it moves to the next file): artificial, timestamp and LogPos 0.
func encodeFakeRotate(name string, pos uint64, crc bool) []byte {
	return encodeArtificial(replication.ROTATE_EVENT, 0, binary.LittleEndian.AppendUint64(nil, pos), name, crc)
}

func encodeArtificial(typ replication.EventType, logPos uint32, head []byte, tail string, crc bool) []byte {
	size := replication.EventHeaderSize + len(head) + len(tail)
	if crc {
		size += replication.BinlogChecksumLength
	}
	b := make([]byte, replication.EventHeaderSize, size)
	b[4] = byte(typ)
	binary.LittleEndian.PutUint32(b[9:], uint32(size))
	binary.LittleEndian.PutUint32(b[13:], logPos)
	binary.LittleEndian.PutUint16(b[17:], replication.LOG_EVENT_ARTIFICIAL_F)
	b = append(append(b, head...), tail...)
	if crc {
		b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	}
	return b
}

// eventGTID is the GTID a group's first event names, "" for others.
func eventGTID(ev *replication.BinlogEvent) string {
	switch e := ev.Event.(type) {
	case *replication.GTIDEvent:
		if ev.Header.EventType == replication.GTID_EVENT {
			return mysqlGTIDString(e)
		}
	case *replication.GtidTaggedLogEvent:
		return mysqlTaggedGTIDString(e)
	case *replication.MariadbGTIDEvent:
		return e.GTID.String()
	}
	return ""
}

// groupTracker finds where event groups end, for the executed set at the
// end of a file.
type groupTracker struct {
	gtid  string // the open group's GTID, "" outside one
	inTxn bool   // BEGIN seen, or a MariaDB group that is not standalone
}

// needs reports whether the event's body matters (else only its type).
func (g *groupTracker) needs(typ replication.EventType) bool {
	switch typ {
	case replication.GTID_EVENT, replication.GTID_TAGGED_LOG_EVENT, replication.MARIADB_GTID_EVENT,
		replication.ANONYMOUS_GTID_EVENT, replication.QUERY_EVENT, replication.MARIADB_QUERY_COMPRESSED_EVENT:
		return true
	}
	return false
}

// other follows an event whose body was not read and returns the GTID of
// the group it completes, "" when none.
func (g *groupTracker) other(typ replication.EventType) string {
	if typ == replication.XID_EVENT || typ == replication.TRANSACTION_PAYLOAD_EVENT {
		return g.end()
	}
	return ""
}

// observe returns the GTID of the group ev completes, "" when none.
func (g *groupTracker) observe(ev *replication.BinlogEvent) string {
	switch e := ev.Event.(type) {
	case *replication.GTIDEvent, *replication.GtidTaggedLogEvent:
		g.gtid, g.inTxn = eventGTID(ev), false
	case *replication.MariadbGTIDEvent:
		g.gtid, g.inTxn = eventGTID(ev), e.Flags&replication.BINLOG_MARIADB_FL_STANDALONE == 0
	case *replication.QueryEvent:
		switch queryKind(e.Query) {
		case queryBegin:
			g.inTxn = true
		case queryEnd:
			return g.end()
		default:
			if !g.inTxn {
				return g.end()
			}
		}
	}
	return ""
}

func (g *groupTracker) end() string {
	done := g.gtid
	g.gtid, g.inTxn = "", false
	return done
}

// parseEvent is p.Parse with go-mysql's panics on malformed events (a
// Table_map whose lengths point past its end, for one) turned into an
// ErrCorruptEvent error: in a file without checksums nothing else catches
// such damage, and a panic on the reading goroutine would end the
// process.
func parseEvent(p *replication.BinlogParser, raw []byte) (ev *replication.BinlogEvent, err error) {
	defer func() {
		if r := recover(); r != nil {
			ev, err = nil, fmt.Errorf("%w: go-mysql cannot decode this %s event: %v", ErrCorruptEvent, replication.EventType(raw[4]), r)
		}
	}()
	return p.Parse(raw)
}
