package binlogstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// DirSource reads binlog files from a directory: a server's binlog
// directory, a copy of one, or an archive written by `mariadb-binlog
// --read-from-remote-server --raw` (mysqlbinlog on MySQL). Each Open is a
// dump as a server sends it: a fake Rotate naming the file and offset, the
// file's Format_description (LogPos 0 when the offset is past it), the
// events from the offset on, and at the end of a file that has a successor
// a fake Rotate and the next file's Format_description. So the streamer's
// Event, Resume tokens, resumes, replay drops and row-granular positions
// are the same as from the server that wrote the files.
//
// A caught-up stream waits for the directory to grow (polling), and a
// truncated last event (a file still being written) is "not there yet".
// To stop at the end instead, call BinlogStreamer.StopAtCurrent (DirSource
// is a Prober: its position is the end of the last complete event).
//
// Differences from a server: no fake Gtid_list after a mid-file
// Format_description (MariaDB; the streamer ignores it), and GTID dumps
// leave XIDEvent.GSet and QueryEvent.GSet nil. Relay logs are not
// supported: their events carry the source server's positions.
type DirSource struct {
	cfg DirConfig

	mu     sync.Mutex
	base   string // cfg.Base, or the one detected
	flavor string // cfg.Flavor, or the one detected
}

// DirConfig configures a DirSource.
type DirConfig struct {
	// Dir holds the binlog files.
	Dir string
	// Base is the files' name before the sequence number: "mysql-bin" for
	// mysql-bin.000001. Empty means the base of the only *.index file in
	// Dir, else of the only set of numbered files.
	Base string
	// Flavor is "mysql" or "mariadb"; empty means read from the server
	// version in the first file's Format_description.
	Flavor string
	// PollInterval is how often a caught-up stream looks for new events
	// (default 100ms).
	PollInterval time.Duration
	// HeartbeatPeriod is how often a caught-up stream sends a heartbeat, as
	// an idle server does (default 1s), so a stop target set while idle
	// takes effect.
	HeartbeatPeriod time.Duration
	// Tune, when set, adjusts each stream's go-mysql parser (SetParseTime,
	// SetUseDecimal, SetTimestampStringLocation, ...). Checksums are
	// verified by the source itself, before parsing.
	Tune func(*replication.BinlogParser)
}

// ErrNotInDir is matched by errors for a position the directory does not
// hold: its file is missing (not copied, or purged), or no file starts at
// a GTID state the requested set contains.
var ErrNotInDir = errors.New("binlogstream: position not in the binlog directory")

// ErrCorruptEvent is matched by errors for bytes that cannot be the binlog
// event they claim to be: a bad checksum, an impossible length, a LogPos
// that disagrees with the event's offset, a missing magic number.
var ErrCorruptEvent = errors.New("binlogstream: corrupt binlog event")

// FileError is a binlog file that cannot be read at an offset: corrupt
// (ErrCorruptEvent), missing (ErrNotInDir), truncated before a later file,
// an I/O error, or an event go-mysql cannot decode (a *replication.EventError,
// which the streamer reports as a *DecodeError).
type FileError struct {
	Path   string
	Offset uint64
	Err    error
}

func (e *FileError) Error() string {
	return fmt.Sprintf("binlogstream: binlog file %s at offset %d: %v", e.Path, e.Offset, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

const (
	// maxEventSize bounds an event's length: MySQL and MariaDB cap events
	// at max_allowed_packet, itself at most 1 GiB.
	maxEventSize = 1<<30 + 1<<16
	binlogMagic  = "\xfebin"
	// logEventBinlogInUse is LOG_EVENT_BINLOG_IN_USE_F in a
	// Format_description's flags: the file is still being written.
	logEventBinlogInUse = 0x1
)

var _ Source = (*DirSource)(nil)
var _ ReplaySkipper = (*DirSource)(nil)
var _ Prober = (*DirSource)(nil)

// NewDirSource validates cfg; it reads nothing yet (the directory may
// still be empty).
func NewDirSource(cfg DirConfig) (*DirSource, error) {
	if cfg.Dir == "" {
		return nil, configError("DirConfig.Dir is empty")
	}
	st, err := os.Stat(cfg.Dir)
	if err != nil {
		return nil, configError("binlog directory: %v", err)
	}
	if !st.IsDir() {
		return nil, configError("binlog directory %s is not a directory", cfg.Dir)
	}
	switch cfg.Flavor {
	case "", mysql.MySQLFlavor, mysql.MariaDBFlavor:
	default:
		return nil, configError("Flavor %q: want %q or %q", cfg.Flavor, mysql.MySQLFlavor, mysql.MariaDBFlavor)
	}
	if strings.ContainsAny(cfg.Base, `/\`) {
		return nil, configError("Base %q is a path; want a file name prefix such as mysql-bin", cfg.Base)
	}
	if cfg.PollInterval < 0 || cfg.HeartbeatPeriod < 0 {
		return nil, configError("negative PollInterval or HeartbeatPeriod")
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	if cfg.HeartbeatPeriod == 0 {
		cfg.HeartbeatPeriod = time.Second
	}
	return &DirSource{cfg: cfg, base: cfg.Base, flavor: cfg.Flavor}, nil
}

// Dir returns the directory the source reads.
func (s *DirSource) Dir() string { return s.cfg.Dir }

// Files lists the directory's binlog files in the server's order: the
// lines of BASE.index when it exists, else the numbered BASE.NNNNNN files
// by number. An empty directory gives an empty list.
func (s *DirSource) Files() ([]string, error) {
	base, err := s.detectBase()
	if err != nil || base == "" {
		return nil, err
	}
	idx, err := os.ReadFile(filepath.Join(s.cfg.Dir, base+".index"))
	switch {
	case err == nil:
		var names []string
		for len(idx) > 0 {
			line, rest, found := bytes.Cut(idx, []byte("\n"))
			idx = rest
			name := filepath.Base(strings.TrimSpace(string(line)))
			if name == "." || name == "" {
				continue
			}
			if !found { // the server may be writing this line: only a file that exists
				if _, err := os.Stat(filepath.Join(s.cfg.Dir, name)); err != nil {
					continue
				}
			}
			names = append(names, name)
		}
		return names, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("binlogstream: read the binlog index: %w", err)
	}
	ents, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("binlogstream: list the binlog directory: %w", err)
	}
	var names []string
	for _, e := range ents {
		if b, _, ok := splitFileName(e.Name()); ok && b == base && e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	slices.SortFunc(names, compareFileNames)
	return names, nil
}

// detectBase returns cfg.Base, or the base of the only index file, or of
// the only set of numbered files; "" while the directory has none.
func (s *DirSource) detectBase() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.base != "" {
		return s.base, nil
	}
	ents, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return "", fmt.Errorf("binlogstream: list the binlog directory: %w", err)
	}
	var index []string
	numbered := map[string]bool{}
	for _, e := range ents {
		n := e.Name()
		if strings.HasSuffix(n, ".index") {
			index = append(index, strings.TrimSuffix(n, ".index"))
		} else if b, _, ok := splitFileName(n); ok && len(n)-len(b) >= 7 && e.Type().IsRegular() {
			numbered[b] = true
		}
	}
	switch {
	case len(index) == 1:
		s.base = index[0]
	case len(index) > 1:
		return "", configError("binlog directory %s has several index files (%s): set DirConfig.Base", s.cfg.Dir, strings.Join(index, ".index, ")+".index")
	case len(numbered) == 1:
		for b := range numbered {
			s.base = b
		}
	case len(numbered) > 1:
		var bases []string
		for b := range numbered {
			bases = append(bases, b)
		}
		slices.Sort(bases)
		return "", configError("binlog directory %s has files of several binlogs (%s): set DirConfig.Base", s.cfg.Dir, strings.Join(bases, ", "))
	}
	return s.base, nil
}

func (s *DirSource) path(name string) string { return filepath.Join(s.cfg.Dir, name) }

// OpenFile starts a dump at pos. An empty file name means the first file.
func (s *DirSource) OpenFile(ctx context.Context, pos mysql.Position) (Stream, error) {
	return s.startStream(s.openFile(ctx, pos, nil))
}

func (s *DirSource) startStream(st *dirStream, err error) (Stream, error) {
	if err != nil {
		return nil, err
	}
	st.start()
	return st, nil
}

// OpenFileReplay is OpenFile with the rows of events up to streamed left
// undecoded (SkipReplayedRows), as SyncerSource does.
func (s *DirSource) OpenFileReplay(ctx context.Context, pos mysql.Position, streamed Position) (Stream, error) {
	return s.startStream(s.openFile(ctx, pos, SkipReplayedRows(streamed)))
}

func (s *DirSource) openFile(ctx context.Context, pos mysql.Position, decode func(*replication.RowsEvent, []byte) error) (*dirStream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	names, err := s.Files()
	if err != nil {
		return nil, err
	}
	name := pos.Name
	if name == "" {
		if len(names) == 0 {
			return nil, &FileError{Path: s.cfg.Dir, Err: fmt.Errorf("%w: the directory has no binlog files", ErrNotInDir)}
		}
		name = names[0]
	}
	if !slices.Contains(names, name) {
		return nil, s.notInDir(name, uint64(pos.Pos), names)
	}
	st, err := s.newStream(decode)
	if err != nil {
		return nil, err
	}
	st.begin(name, uint64(max(pos.Pos, 4)), false)
	return st, nil // started by the caller, once configured
}

func (s *DirSource) notInDir(name string, off uint64, names []string) error {
	holds := "no binlog files"
	if len(names) > 0 {
		holds = names[0] + " to " + names[len(names)-1]
	}
	return &FileError{Path: s.path(name), Offset: off, Err: fmt.Errorf("%w: the directory holds %s", ErrNotInDir, holds)}
}

// OpenGTID starts a dump after set, as a server does: at the newest file
// whose starting GTID state (Previous_gtids, Gtid_list) set contains,
// leaving out every event group whose GTID set contains.
func (s *DirSource) OpenGTID(ctx context.Context, set mysql.GTIDSet) (Stream, error) {
	return s.startStream(s.openGTID(ctx, set))
}

func (s *DirSource) openGTID(ctx context.Context, set mysql.GTIDSet) (*dirStream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if set == nil {
		return nil, configError("nil GTID set")
	}
	names, err := s.Files()
	if err != nil {
		return nil, err
	}
	flavor, err := s.Flavor()
	if err != nil {
		return nil, err
	}
	if !gtidSetOfFlavor(set, flavor) {
		return nil, fmt.Errorf("binlogstream: the binlog in %s is %s; the GTID set %q is not", s.cfg.Dir, flavor, set)
	}
	start := ""
	for i := len(names) - 1; i >= 0 && start == ""; i-- {
		state, err := s.startState(names[i], flavor)
		if err != nil {
			return nil, err
		}
		if state != nil && set.Contain(state) {
			start = names[i]
		}
	}
	if start == "" {
		first := "no binlog files"
		if len(names) > 0 {
			first = names[0]
		}
		return nil, &FileError{Path: s.path(first), Offset: 4, Err: fmt.Errorf(
			"%w: no file starts at a GTID state that %q contains (the transactions after it are not in the directory)", ErrNotInDir, set)}
	}
	st, err := s.newStream(nil)
	if err != nil {
		return nil, err
	}
	st.have = set.Clone()
	st.begin(start, 4, false)
	return st, nil
}

func gtidSetOfFlavor(set mysql.GTIDSet, flavor string) bool {
	switch set.(type) {
	case *mysql.MysqlGTIDSet:
		return flavor == mysql.MySQLFlavor
	case *mysql.MariadbGTIDSet:
		return flavor == mysql.MariaDBFlavor
	}
	return false
}

// Flavor returns DirConfig.Flavor, or the flavor the first file's
// Format_description names.
func (s *DirSource) Flavor() (string, error) {
	s.mu.Lock()
	f := s.flavor
	s.mu.Unlock()
	if f != "" {
		return f, nil
	}
	names, err := s.Files()
	if err != nil {
		return "", err
	}
	if len(names) == 0 {
		return "", &FileError{Path: s.cfg.Dir, Err: fmt.Errorf("%w: the directory has no binlog files yet (set DirConfig.Flavor to start before the first)", ErrNotInDir)}
	}
	h, err := readHead(s.path(names[0]), "")
	if err != nil {
		return "", err
	}
	f = mysql.MySQLFlavor
	if strings.Contains(strings.ToLower(h.fde.ServerVersion), "mariadb") {
		f = mysql.MariaDBFlavor
	}
	s.mu.Lock()
	s.flavor = f
	s.mu.Unlock()
	return f, nil
}

// startState is the GTID state a file starts with.
func (s *DirSource) startState(name, flavor string) (mysql.GTIDSet, error) {
	h, err := readHead(s.path(name), flavor)
	if err != nil {
		return nil, err
	}
	return h.state, nil
}

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
	if _, err := p.Parse(h.fdeRaw); err != nil {
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
		ev, err := p.Parse(raw)
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
func (r *eventReader) next(crc bool) ([]byte, error) {
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
	case logPos != 0 && logPos != uint32(off+uint64(size)):
		return nil, r.corrupt(off, "%s event of %d bytes says it ends at %d: not an event boundary, or a corrupt file", typ, size, logPos)
	}
	raw := make([]byte, size)
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

func (s *DirSource) newStream(decode func(*replication.RowsEvent, []byte) error) (*dirStream, error) {
	flavor, err := s.Flavor()
	if err != nil {
		return nil, err
	}
	p := replication.NewBinlogParser()
	p.SetFlavor(flavor)
	p.SetVerifyChecksum(false) // checked by eventReader, with file and offset
	if s.cfg.Tune != nil {
		s.cfg.Tune(p)
	}
	if decode != nil {
		p.SetRowsEventDecodeFunc(decode)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &dirStream{src: s, parser: p, closed: make(chan struct{}), ctx: ctx, cancel: cancel,
		q: newEventQueue(dirQueueEvents, dirQueueBytes)}, nil
}

// A stream reads and decodes ahead on its own goroutine, as go-mysql's
// syncer does for a server, so decoding overlaps the listeners' work: at
// most this many events and bytes of binlog (twice that with the batch
// being delivered).
const (
	dirQueueEvents = 512
	dirQueueBytes  = 16 << 20
)

// dirStream is one dump of a DirSource. A goroutine started by start
// reads and decodes (next) into q; Next serves q's batches on the
// consumer's goroutine; Close may come from any.
type dirStream struct {
	q      *eventQueue
	ctx    context.Context // the reader's; cancelled by Close
	cancel context.CancelFunc
	batch  []*replication.BinlogEvent
	pos    int

	src    *DirSource
	parser *replication.BinlogParser

	name     string // current file
	r        *eventReader
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
	r := newEventReader(f, path)
	h, err := r.head()
	if err != nil {
		f.Close()
		return err
	}
	if st.headPos > 4 && st.headPos < r.off {
		f.Close()
		return r.corrupt(st.headPos, "the position is inside the Format_description (it ends at %d)", r.off)
	}
	if st.headPos > r.off {
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return &FileError{Path: path, Err: err}
		}
		if uint64(fi.Size()) < st.headPos {
			f.Close()
			return &FileError{Path: path, Offset: st.headPos, Err: fmt.Errorf("%w: the position is past the end of the file (%d bytes)", ErrNotInDir, fi.Size())}
		}
		if err := r.seek(st.headPos); err != nil {
			f.Close()
			return err
		}
	}
	fde := h.fdeRaw
	if fde[17]&logEventBinlogInUse != 0 {
		// A server sends it without the flag (the checksum is of the
		// event without it).
		fde = bytes.Clone(fde)
		fde[17] &^= logEventBinlogInUse
	}
	if st.headPos > 4 { // as a server resends it: LogPos 0, checksum recomputed
		fde = bytes.Clone(fde)
		binary.LittleEndian.PutUint32(fde[13:], 0)
		if h.crc {
			n := len(fde) - replication.BinlogChecksumLength
			binary.LittleEndian.PutUint32(fde[n:], crc32.ChecksumIEEE(fde[:n]))
		}
	}
	st.queue = append(st.queue, encodeFakeRotate(st.name, st.headPos, st.headCRC), fde)
	st.mu.Lock()
	if st.r != nil {
		st.r.f.Close()
	}
	st.r, st.crc, st.needHead = r, h.crc, false
	st.mu.Unlock()
	st.lastType, st.rotateTo = replication.FORMAT_DESCRIPTION_EVENT, ""
	select {
	case <-st.closed: // closed meanwhile: Close may have missed the new file
		st.closeFile()
	default:
	}
	return nil
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
				st.q.fail(err)
				return
			}
			if st.q.HandleEvent(ev) != nil {
				return
			}
		}
	}()
}

// Next returns the next event the reader decoded.
func (st *dirStream) Next(ctx context.Context) (*replication.BinlogEvent, error) {
	if st.pos < len(st.batch) {
		ev := st.batch[st.pos]
		st.batch[st.pos] = nil
		st.pos++
		return ev, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	batch, err := st.q.take(st.batch, ctx.Done())
	if err == nil && batch == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	st.batch, st.pos = batch, 1
	ev := batch[0]
	batch[0] = nil
	return ev, nil
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
			ev, err := st.parser.Parse(raw)
			if err != nil {
				return st.fail(&FileError{Path: st.src.path(st.name), Err: err})
			}
			st.idleSince = time.Time{}
			return ev, nil
		}
		if st.needHead {
			if err := st.openHead(); err != nil {
				if errors.Is(err, errNotYet) {
					if ev, err := st.wait(ctx); ev != nil || err != nil {
						return ev, err
					}
					continue
				}
				return st.fail(err)
			}
			continue
		}
		off := st.r.off
		raw, err := st.r.next(st.crc)
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
		if !errors.Is(err, io.EOF) && !errors.Is(err, errNotYet) {
			return st.fail(err)
		}
		moved, err := st.advance(errors.Is(err, errNotYet))
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
		re := &replication.RotateEvent{}
		body := raw[replication.EventHeaderSize:]
		if st.crc {
			body = body[:len(body)-replication.BinlogChecksumLength]
		}
		if err := re.Decode(body); err == nil {
			st.rotateTo = string(re.NextLogName)
		}
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
	ev, err := st.parser.Parse(raw)
	if err != nil {
		return nil, &FileError{Path: st.r.path, Offset: off, Err: err}
	}
	if typ == replication.FORMAT_DESCRIPTION_EVENT {
		st.crc = ev.Event.(*replication.FormatDescriptionEvent).ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32
	}
	if st.have != nil {
		if g := eventGTID(ev); g != "" {
			one, err := mysql.ParseGTIDSet(st.src.flavorOrEmpty(), g)
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
				return nil, &FileError{Path: st.r.path, Offset: off, Err: err}
			}
		}
	}
	return ev, nil
}

func (s *DirSource) flavorOrEmpty() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flavor
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
				return false, &FileError{Path: st.r.path, Offset: st.r.off, Err: fmt.Errorf(
					"%w: the copy ends without a Rotate or Stop event, and the server has moved on to %s: the copy is incomplete (made while the server wrote the file?)", ErrCorruptEvent, next)}
			}
			h := &handOffError{next: next}
			if st.have != nil {
				if st.groups.gtid != "" {
					return false, &FileError{Path: st.r.path, Offset: st.r.off, Err: fmt.Errorf(
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
	off := st.r.off
	if _, err := st.r.br.Peek(1); err == nil {
		return true, nil
	}
	if partial {
		return false, &FileError{Path: st.r.path, Offset: off, Err: fmt.Errorf(
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
		hb := encodeArtificial(replication.HEARTBEAT_EVENT, uint32(st.r.off), nil, st.name, st.crc)
		ev, err := st.parser.Parse(hb)
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
		st.r.f.Close()
	}
}

// Close ends the stream; a waiting Next returns.
func (st *dirStream) Close() error {
	st.closeOnce.Do(func() {
		st.q.fail(errStreamClosed) // first: Next reports the close
		close(st.closed)
		st.cancel()
		st.closeFile()
	})
	return nil
}

// Probe reports the directory as a server would: Binlog is the end of the
// last complete event of the last file, Executed the GTID state there (the
// last file's starting state plus every group complete before that end).
// BinlogStreamer.StopAtCurrent uses it to stop at the end of the files.
func (s *DirSource) Probe(ctx context.Context) (ServerState, error) {
	if err := ctx.Err(); err != nil {
		return ServerState{}, err
	}
	flavor, err := s.Flavor()
	if err != nil {
		return ServerState{}, err
	}
	names, err := s.Files()
	if err != nil {
		return ServerState{}, err
	}
	st := ServerState{Flavor: flavor, LogBin: true}
	for i := len(names) - 1; i >= 0; i-- {
		end, executed, known, err := s.scanEnd(names[i], flavor)
		if errors.Is(err, errNotYet) && i > 0 {
			continue // a file just created: its Format_description is not written yet
		}
		if err != nil {
			return ServerState{}, err
		}
		if st.Binlog.IsZero() {
			st.Binlog = end
		}
		if known || i == 0 {
			// A file whose GTID state is not written yet starts with the
			// state at the end of the one before.
			st.Executed = executed
			return st, nil
		}
	}
	return ServerState{}, &FileError{Path: s.cfg.Dir, Err: fmt.Errorf("%w: the directory has no binlog files", ErrNotInDir)}
}

// scanEnd walks a file's events to the end of the last complete one and
// returns that position and the GTID state there (known false when the
// file's starting state is not written yet).
func (s *DirSource) scanEnd(name, flavor string) (end Position, executed string, known bool, err error) {
	path := s.path(name)
	h, err := readHead(path, flavor)
	if err != nil {
		var fe *FileError
		if errors.As(err, &fe) && errors.Is(err, ErrNotInDir) {
			return Position{}, "", false, errNotYet
		}
		return Position{}, "", false, err
	}
	f, err := os.Open(path)
	if err != nil {
		return Position{}, "", false, &FileError{Path: path, Err: err}
	}
	defer f.Close()
	r := newEventReader(f, path)
	if _, err := r.head(); err != nil {
		return Position{}, "", false, err
	}
	p := replication.NewBinlogParser()
	p.SetFlavor(flavor)
	if _, err := p.Parse(h.fdeRaw); err != nil {
		return Position{}, "", false, &FileError{Path: path, Offset: 4, Err: err}
	}
	var g groupTracker
	set := h.state
	if set == nil { // scanned for the end only
		set, _ = mysql.ParseGTIDSet(flavor, "")
	}
	for {
		off := r.off
		hdr, err := r.br.Peek(replication.EventHeaderSize)
		if err != nil {
			break // the end, or an event not complete yet
		}
		typ := replication.EventType(hdr[4])
		size := binary.LittleEndian.Uint32(hdr[9:])
		if size < replication.EventHeaderSize || size > maxEventSize {
			return Position{}, "", false, r.corrupt(off, "impossible event length %d (%s event)", size, typ)
		}
		if !g.needs(typ) {
			if n, err := r.br.Discard(int(size)); err != nil || n != int(size) {
				break
			}
			r.off += uint64(size)
			if done := g.other(typ); done != "" {
				if err := set.Update(done); err != nil {
					return Position{}, "", false, &FileError{Path: path, Offset: off, Err: err}
				}
			}
			continue
		}
		raw, err := r.next(h.crc)
		if err != nil {
			if errors.Is(err, errNotYet) || errors.Is(err, io.EOF) {
				break
			}
			return Position{}, "", false, err
		}
		ev, err := p.Parse(raw)
		if err != nil {
			return Position{}, "", false, &FileError{Path: path, Offset: off, Err: err}
		}
		if done := g.observe(ev); done != "" {
			if err := set.Update(done); err != nil {
				return Position{}, "", false, &FileError{Path: path, Offset: off, Err: err}
			}
		}
	}
	return Position{File: name, Offset: r.off}, set.String(), h.state != nil, nil
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
