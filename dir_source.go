package binlogstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/binlogstream/binlogstream/internal/binlogfile"
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

	mu         sync.Mutex
	base       string // cfg.Base, or the one detected
	flavor     string // read from the first file
	flavorRead bool
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
	// DecodeWorkers is how many goroutines decode rows events, in
	// parallel with the reading goroutine and with each other (events
	// still come in binlog order). 0 means one per core (GOMAXPROCS); 1
	// decodes on the reading goroutine.
	DecodeWorkers int
	// DecodeTable, when set, says which tables' rows to decode, as
	// SyncerConfig.DecodeTable does: the rows events of the others are not
	// decoded nor delivered, and the position moves past them.
	DecodeTable func(schema, table string) bool
	// RecycleRows: as SyncerConfig.RecycleRows (see Event.Release).
	RecycleRows bool
	// Tune, when set, adjusts each stream's go-mysql parser (SetParseTime,
	// SetUseDecimal, SetTimestampStringLocation, ...). Checksums are
	// verified by the source itself, before parsing, and the source sets
	// the rows decode function after Tune (SkipReplayedRows on a resume,
	// and a guard against malformed rows events), replacing one Tune set.
	Tune func(*replication.BinlogParser)
}

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

// fileFaults make the errors of internal/binlogfile this package's.
var fileFaults = &binlogfile.Faults{Corrupt: ErrCorruptEvent, NotInDir: ErrNotInDir,
	File: func(path string, off uint64, err error) error { return &FileError{Path: path, Offset: off, Err: err} }}

// parseEvent is binlogfile.ParseEvent with ErrCorruptEvent.
func parseEvent(p *replication.BinlogParser, raw []byte) (*replication.BinlogEvent, error) {
	return binlogfile.ParseEvent(p, raw, ErrCorruptEvent)
}

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
	if cfg.DecodeWorkers == 0 {
		cfg.DecodeWorkers = runtime.GOMAXPROCS(0)
	}
	return &DirSource{cfg: cfg, base: cfg.Base}, nil
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
	return s.startStream(s.openFile(ctx, pos, nil, false))
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
	return s.startStream(s.openFile(ctx, pos, &streamed, false))
}

// openFile opens a dump at pos; the rows of the events up to streamed (when
// not nil) are left undecoded, and rowless leaves every table's undecoded.
func (s *DirSource) openFile(ctx context.Context, pos mysql.Position, streamed *Position, rowless bool) (*dirStream, error) {
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
	st, err := s.newStream(streamed, rowless)
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
	return s.startStream(s.openGTID(ctx, set, false))
}

func (s *DirSource) openGTID(ctx context.Context, set mysql.GTIDSet, rowless bool) (*dirStream, error) {
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
		if errors.Is(err, ErrNotInDir) {
			continue // not there, or not written yet: not a start
		}
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
	st, err := s.newStream(nil, rowless)
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
	f, known := s.flavor, s.flavorRead
	s.mu.Unlock()
	if known {
		return f, nil
	}
	names, err := s.Files()
	if err != nil {
		return "", err
	}
	var h *binlogfile.Head
	if len(names) > 0 {
		h, err = binlogfile.ReadHead(s.path(names[0]), "", fileFaults)
	}
	if len(names) == 0 || errors.Is(err, ErrNotInDir) { // nothing written yet
		if s.cfg.Flavor != "" {
			return s.cfg.Flavor, nil
		}
		return "", &FileError{Path: s.cfg.Dir, Err: fmt.Errorf("%w: the directory has no binlog files yet (set DirConfig.Flavor to start before the first)", ErrNotInDir)}
	}
	if err != nil {
		return "", err
	}
	f = mysql.MySQLFlavor
	if strings.Contains(strings.ToLower(h.FDE.ServerVersion), "mariadb") {
		f = mysql.MariaDBFlavor
	}
	if s.cfg.Flavor != "" && s.cfg.Flavor != f {
		return "", configError("Flavor is %s, but %s was written by %s (%s)", s.cfg.Flavor, s.path(names[0]), f, h.FDE.ServerVersion)
	}
	s.mu.Lock()
	s.flavor, s.flavorRead = f, true
	s.mu.Unlock()
	return f, nil
}

// startState is the GTID state a file starts with.
func (s *DirSource) startState(name, flavor string) (mysql.GTIDSet, error) {
	h, err := binlogfile.ReadHead(s.path(name), flavor, fileFaults)
	if err != nil {
		return nil, err
	}
	return h.State, nil
}

// Probe reports the directory as a server would: Binlog is the end of the
// last complete event of the last file, Executed the GTID state there (the
// last file's starting state plus every group complete before that end),
// and NextBinlog what a Rotate event ending there names.
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
		end, next, executed, known, err := s.scanEnd(names[i], flavor)
		if errors.Is(err, binlogfile.ErrNotYet) && i > 0 {
			continue // a file just created: its Format_description is not written yet
		}
		if err != nil {
			return ServerState{}, err
		}
		if st.Binlog.IsZero() {
			st.Binlog, st.NextBinlog = end, next
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
// returns that position, what that event names when it is a Rotate (next)
// and the GTID state there (known false when the file's starting state is
// not written yet).
func (s *DirSource) scanEnd(name, flavor string) (end, next Position, executed string, known bool, err error) {
	path := s.path(name)
	h, err := binlogfile.ReadHead(path, flavor, fileFaults)
	if err != nil {
		var fe *FileError
		if errors.As(err, &fe) && errors.Is(err, ErrNotInDir) {
			return Position{}, Position{}, "", false, binlogfile.ErrNotYet
		}
		return Position{}, Position{}, "", false, err
	}
	f, err := os.Open(path)
	if err != nil {
		return Position{}, Position{}, "", false, &FileError{Path: path, Err: err}
	}
	defer f.Close()
	r := binlogfile.NewReader(f, path, fileFaults)
	if _, err := r.Head(); err != nil {
		return Position{}, Position{}, "", false, err
	}
	p := replication.NewBinlogParser()
	p.SetFlavor(flavor)
	if _, err := parseEvent(p, h.FDERaw); err != nil {
		return Position{}, Position{}, "", false, &FileError{Path: path, Offset: 4, Err: err}
	}
	var g groupTracker
	set := h.State
	if set == nil { // scanned for the end only
		set, _ = mysql.ParseGTIDSet(flavor, "")
	}
	// Every event is checked as the stream checks it (length, LogPos,
	// checksum): a corrupt event must not pass for the end of the files.
	var buf []byte
	for {
		off := r.Off()
		raw, err := r.NextInto(h.CRC, buf)
		if err != nil {
			if errors.Is(err, binlogfile.ErrNotYet) || errors.Is(err, io.EOF) {
				break
			}
			return Position{}, Position{}, "", false, err
		}
		if cap(raw) > cap(buf) && len(raw) <= 1<<20 {
			buf = raw
		}
		typ := replication.EventType(raw[4])
		next = Position{}
		if typ == replication.ROTATE_EVENT {
			next = rotateTarget(raw, h.CRC)
		}
		done := ""
		if g.needs(typ) {
			ev, err := parseEvent(p, bytes.Clone(raw))
			if err != nil {
				return Position{}, Position{}, "", false, &FileError{Path: path, Offset: off, Err: err}
			}
			done = g.observe(ev)
		} else {
			done = g.other(typ)
		}
		if done != "" {
			if err := set.Update(done); err != nil {
				return Position{}, Position{}, "", false, &FileError{Path: path, Offset: off, Err: err}
			}
		}
	}
	return Position{File: name, Offset: r.Off()}, next, set.String(), h.State != nil, nil
}

// rotateTarget is the position a raw Rotate event names, as the stream's
// tracker places the event's end; zero when it does not decode.
func rotateTarget(raw []byte, crc bool) Position {
	body := raw[replication.EventHeaderSize:]
	if crc {
		body = body[:len(body)-replication.BinlogChecksumLength]
	}
	re := &replication.RotateEvent{}
	if err := re.Decode(body); err != nil {
		return Position{}
	}
	return Position{File: string(re.NextLogName), Offset: re.Position}
}
