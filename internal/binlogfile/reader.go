// Package binlogfile reads binlog files for the root package's directory
// and archive sources: events cut out of a buffered file and checked
// (length, LogPos, checksum) before go-mysql parses them, the head of a
// file (Format_description, starting GTID state), and the artificial
// events a server makes up for a dump. The errors it returns are the root
// package's, made by the Faults it is given.
package binlogfile

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

const (
	// maxEventSize bounds an event's length: MySQL and MariaDB cap events
	// at max_allowed_packet, itself at most 1 GiB.
	maxEventSize = 1<<30 + 1<<16
	binlogMagic  = "\xfebin"
	// LogEventBinlogInUse is LOG_EVENT_BINLOG_IN_USE_F in a
	// Format_description's flags: the file is still being written.
	LogEventBinlogInUse = 0x1
)

// Faults make the errors the reader returns from the root package's
// error values and type, which this package cannot import.
type Faults struct {
	Corrupt  error // matched by errors for bytes that cannot be the event they claim to be
	NotInDir error // matched when a file is missing or has no complete Format_description yet
	// File is the error of a file that cannot be read at an offset.
	File func(path string, off uint64, err error) error
}

// Head is what the first events of a binlog file say.
type Head struct {
	FDE    *replication.FormatDescriptionEvent
	FDERaw []byte
	CRC    bool
	// State is the file's Previous_gtids / Gtid_list: empty when it has
	// none, nil when the file ends before it could be told.
	State mysql.GTIDSet
}

// ErrNotYet: the bytes are not all written yet (a file being written).
var ErrNotYet = errors.New("binlogstream: event not complete yet")

// ReadHead reads a file's magic, Format_description and, when flavor is
// set, its starting GTID state.
func ReadHead(path, flavor string, fs *Faults) (*Head, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		err = fmt.Errorf("%w: %v", fs.NotInDir, err)
	}
	if err != nil {
		return nil, fs.File(path, 0, err)
	}
	defer f.Close()
	r := NewReader(f, path, fs)
	h, err := r.Head()
	if err != nil {
		if errors.Is(err, ErrNotYet) {
			return nil, fs.File(path, 0, fmt.Errorf("%w: the file has no complete Format_description yet", fs.NotInDir))
		}
		return nil, err
	}
	if flavor == "" {
		return h, nil
	}
	if err := r.readState(h, flavor); err != nil {
		return nil, err
	}
	return h, nil
}

// readState reads the GTID state event that follows the Format_description
// into h.State.
func (r *Reader) readState(h *Head, flavor string) error {
	var err error
	h.State, err = mysql.ParseGTIDSet(flavor, "")
	if err != nil {
		return err
	}
	p := replication.NewBinlogParser()
	p.SetFlavor(flavor)
	if _, err := ParseEvent(p, h.FDERaw, r.fs.Corrupt); err != nil {
		return r.fs.File(r.path, 4, err)
	}
	for range 4 { // the state event comes right after the FDE (MariaDB: before Binlog_checkpoint)
		off := r.off
		raw, err := r.Next(h.CRC)
		if err != nil {
			if errors.Is(err, ErrNotYet) || errors.Is(err, io.EOF) {
				// A file just created: its state may not be written yet.
				h.State = nil
				break
			}
			return err
		}
		typ := replication.EventType(raw[4])
		if typ != replication.PREVIOUS_GTIDS_EVENT && typ != replication.MARIADB_GTID_LIST_EVENT {
			continue // none after 4 events: the file has no state event (empty state)
		}
		ev, err := ParseEvent(p, raw, r.fs.Corrupt)
		if err != nil {
			return r.fs.File(r.path, off, err)
		}
		switch e := ev.Event.(type) {
		case *replication.PreviousGTIDsEvent:
			if h.State, err = mysql.ParseGTIDSet(flavor, e.GTIDSets); err != nil {
				return r.fs.File(r.path, off, err)
			}
		case *replication.MariadbGTIDListEvent:
			set := h.State.(*mysql.MariadbGTIDSet)
			for i := range e.GTIDs {
				if err := set.AddSet(&e.GTIDs[i]); err != nil {
					return r.fs.File(r.path, off, err)
				}
			}
		}
		break
	}
	return nil
}

// Reader cuts events out of one file through a bufio.Reader
// (go-mysql's ParseFile makes two syscalls per event).
type Reader struct {
	f    *os.File
	path string
	br   *bufio.Reader
	off  uint64 // where the next event starts
	fs   *Faults
}

// NewReader reads f, the file at path, from where its offset is (an event
// boundary the caller vouches for, as Seek's). It closes f on Close.
func NewReader(f *os.File, path string, fs *Faults) *Reader {
	return &Reader{f: f, path: path, br: bufio.NewReaderSize(f, 256<<10), fs: fs}
}

// Path is the file's path.
func (r *Reader) Path() string { return r.path }

// Off is where the next event starts.
func (r *Reader) Off() uint64 { return r.off }

// Close closes the file.
func (r *Reader) Close() error { return r.f.Close() }

// More reports whether a byte follows the last event read (whatever it
// is), reading it into the buffer.
func (r *Reader) More() bool {
	_, err := r.br.Peek(1)
	return err == nil
}

// Corrupt is the error of the bytes at off that cannot be an event: the
// Faults' Corrupt, the reason, the file and the offset.
func (r *Reader) Corrupt(off uint64, format string, args ...any) error {
	return r.fs.File(r.path, off, fmt.Errorf("%w: %s", r.fs.Corrupt, fmt.Sprintf(format, args...)))
}

// Head reads the magic number and the Format_description.
func (r *Reader) Head() (*Head, error) {
	magic, err := r.br.Peek(4)
	if len(magic) == 4 && string(magic) != binlogMagic {
		return nil, r.Corrupt(0, "no binlog magic number (the file starts with %x)", magic)
	}
	if err != nil {
		return nil, r.retry(0, err)
	}
	_, _ = r.br.Discard(4)
	r.off = 4
	raw, err := r.Next(false)
	if err != nil {
		return nil, err
	}
	if replication.EventType(raw[4]) != replication.FORMAT_DESCRIPTION_EVENT {
		return nil, r.Corrupt(4, "the first event is %s, not a Format_description", replication.EventType(raw[4]))
	}
	fde := &replication.FormatDescriptionEvent{}
	if err := fde.Decode(raw[replication.EventHeaderSize:]); err != nil {
		return nil, r.Corrupt(4, "undecodable Format_description: %v", err)
	}
	h := &Head{FDE: fde, FDERaw: raw, CRC: fde.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32}
	if h.CRC {
		if err := checkCRC(raw); err != nil {
			return nil, r.Corrupt(4, "%v", err)
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
	if replication.EventType(raw[4]) == replication.FORMAT_DESCRIPTION_EVENT && raw[17]&LogEventBinlogInUse != 0 {
		// The server sets this flag while the file is open and clears it
		// in place at close; the checksum is of the event without it.
		c := bytes.Clone(raw[:n])
		c[17] &^= LogEventBinlogInUse
		got = crc32.ChecksumIEEE(c)
	}
	if want := binary.LittleEndian.Uint32(raw[n:]); got != want {
		return fmt.Errorf("checksum mismatch (%s event: stored %08x, computed %08x)", replication.EventType(raw[4]), want, got)
	}
	return nil
}

// retry turns a short read at off into ErrNotYet (rewinding so that the
// event is read again from its start) and other read errors into a
// file error (Faults.File).
func (r *Reader) retry(off uint64, err error) error {
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return r.fs.File(r.path, off, err)
	}
	if err := r.Seek(off); err != nil {
		return err
	}
	return ErrNotYet
}

// Seek moves to off (an event boundary the caller vouches for).
func (r *Reader) Seek(off uint64) error {
	if _, err := r.f.Seek(int64(off), io.SeekStart); err != nil {
		return r.fs.File(r.path, off, err)
	}
	r.br.Reset(r.f)
	r.off = off
	return nil
}

// Next returns the next event's bytes (its own buffer), io.EOF at a clean
// end of the file, ErrNotYet for an event not completely written, or a
// file error (Faults.File). crc says whether the file's events carry a
// checksum; it is checked here, so that corruption is reported with file
// and offset.
func (r *Reader) Next(crc bool) ([]byte, error) { return r.NextInto(crc, nil) }

// NextInto is Next reading into buf when it is large enough (the result
// then aliases buf).
func (r *Reader) NextInto(crc bool, buf []byte) ([]byte, error) {
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
		return nil, r.Corrupt(off, "impossible event length %d (%s event): not an event boundary, or a corrupt file", size, typ)
	case binary.LittleEndian.Uint16(h[17:])&replication.LOG_EVENT_ARTIFICIAL_F != 0,
		typ == replication.HEARTBEAT_EVENT, typ == replication.HEARTBEAT_LOG_EVENT_V2:
		// Only a dump sends these; the streamer would pass over one.
		return nil, r.Corrupt(off, "%s event flagged artificial or a heartbeat: a server never writes one to a file", typ)
	case logPos != 0 && logPos != uint32(off+uint64(size)):
		return nil, r.Corrupt(off, "%s event of %d bytes says it ends at %d: not an event boundary, a corrupt file, "+
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
			return nil, r.Corrupt(off, "%v", err)
		}
	}
	r.off = off + uint64(size)
	return raw, nil
}

// EncodeFakeRotate is the Rotate a server sends first in a dump (and when
// it moves to the next file): artificial, timestamp and LogPos 0.
func EncodeFakeRotate(name string, pos uint64, crc bool) []byte {
	return EncodeArtificial(replication.ROTATE_EVENT, 0, binary.LittleEndian.AppendUint64(nil, pos), name, crc)
}

// EncodeArtificial is an event of type typ flagged artificial, as a
// server makes up for a dump: LogPos logPos, the body head then tail,
// and a checksum when crc is set.
func EncodeArtificial(typ replication.EventType, logPos uint32, head []byte, tail string, crc bool) []byte {
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

// ParseEvent is p.Parse with go-mysql's panics on malformed events (a
// Table_map whose lengths point past its end, for one) turned into an
// error matching corrupt (the root package's ErrCorruptEvent): in a file
// without checksums nothing else catches such damage, and a panic on the
// reading goroutine would end the process.
func ParseEvent(p *replication.BinlogParser, raw []byte, corrupt error) (ev *replication.BinlogEvent, err error) {
	defer func() {
		if r := recover(); r != nil {
			ev, err = nil, fmt.Errorf("%w: go-mysql cannot decode this %s event: %v", corrupt, replication.EventType(raw[4]), r)
		}
	}()
	return p.Parse(raw)
}
