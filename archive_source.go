package binlogstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/binlogstream/binlogstream/internal/rows"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// BinlogLister tells what a server's binlog still holds. SyncerSource is
// one.
type BinlogLister interface {
	// BinaryLogs lists the server's binlog files, oldest first (SHOW
	// BINARY LOGS).
	BinaryLogs(ctx context.Context) ([]string, error)
	// PurgedGTIDs is the GTID state the server's oldest binlog file starts
	// with: a GTID dump needs a set that contains it.
	PurgedGTIDs(ctx context.Context) (string, error)
}

// ArchiveConfig configures an ArchiveSource.
type ArchiveConfig struct {
	// Archive holds copies of the server's binlog files, older ones
	// included (a backup of the binlog directory, or mariadb-binlog
	// --read-from-remote-server --raw output).
	Archive *DirSource
	// Live is the server.
	Live Source
	// Lister lists the server's files; nil means Live, which must then
	// implement BinlogLister (SyncerSource does).
	Lister BinlogLister
}

// ArchiveSource streams from a server, and from an archive of its binlog
// files what the server no longer has: a dump whose start file the server
// has purged reads the archive up to the first file the server still has,
// then continues from the server, in one Stream, so the streamer's
// positions and tokens run on across the switch as in one server's dump
// (the server's dump of the next file begins with the same fake Rotate and
// Format_description that a move to the next file sends).
//
// GTID dumps likewise: a set that does not contain the server's purged
// state (PurgedGTIDs) is served from the archive, which hands over at a
// file end, between transactions, with a GTID dump after every
// transaction it delivered.
//
// At each file end in the archive the server is asked for its files (SHOW
// BINARY LOGS): when it has the file the archive's Rotate names, the
// stream switches. An archived file that ends without a Rotate or Stop
// event at that point is an incomplete copy (ErrCorruptEvent), and a file
// neither has is ErrNotInDir; nothing is skipped.
type ArchiveSource struct {
	cfg ArchiveConfig
}

var _ Source = (*ArchiveSource)(nil)
var _ ReplaySkipper = (*ArchiveSource)(nil)

// NewArchiveSource checks cfg.
func NewArchiveSource(cfg ArchiveConfig) (*ArchiveSource, error) {
	if cfg.Archive == nil || cfg.Live == nil {
		return nil, configError("ArchiveConfig needs an Archive and a Live source")
	}
	if cfg.Lister == nil {
		l, ok := cfg.Live.(BinlogLister)
		if !ok {
			return nil, configError("the live source (%T) cannot list its binlog files: set ArchiveConfig.Lister", cfg.Live)
		}
		cfg.Lister = l
	}
	return &ArchiveSource{cfg: cfg}, nil
}

// Probe is the live server's (for StopAtCurrent).
func (a *ArchiveSource) Probe(ctx context.Context) (ServerState, error) {
	p, ok := a.cfg.Live.(Prober)
	if !ok {
		return ServerState{}, fmt.Errorf("binlogstream: the live source (%T) cannot report its position", a.cfg.Live)
	}
	return p.Probe(ctx)
}

var _ SchemaSnapshotter = (*ArchiveSource)(nil)

// SchemaSnapshot is the live server's (for SchemaConfig.Snapshot).
func (a *ArchiveSource) SchemaSnapshot(ctx context.Context, databases []string) (*SchemaSnapshot, error) {
	sn, ok := a.cfg.Live.(SchemaSnapshotter)
	if !ok {
		return nil, fmt.Errorf("binlogstream: the live source (%T) cannot read a schema snapshot", a.cfg.Live)
	}
	return sn.SchemaSnapshot(ctx, databases)
}

// Oldest is the first file of the archive and the server together.
func (a *ArchiveSource) Oldest(ctx context.Context) (string, error) {
	live, err := a.cfg.Lister.BinaryLogs(ctx)
	if err != nil {
		return "", err
	}
	arch, err := a.cfg.Archive.Files()
	if err != nil {
		return "", err
	}
	all := append(arch, live...)
	if len(all) == 0 {
		return "", errors.New("binlogstream: neither the server nor the archive has a binlog file")
	}
	return slices.MinFunc(all, compareFileNames), nil
}

// OpenFile starts a dump at pos: on the server when it has pos's file,
// else in the archive.
func (a *ArchiveSource) OpenFile(ctx context.Context, pos mysql.Position) (Stream, error) {
	return a.open(ctx, pos, nil, false)
}

var _ rowlessOpener = (*ArchiveSource)(nil)

// openFileRowless and openGTIDRowless decode no rows on either side (on
// the server's when its Source can leave them).
func (a *ArchiveSource) openFileRowless(ctx context.Context, pos mysql.Position) (Stream, error) {
	return a.open(ctx, pos, nil, true)
}

func (a *ArchiveSource) openGTIDRowless(ctx context.Context, set mysql.GTIDSet) (Stream, error) {
	return a.openGTID(ctx, set, true)
}

// OpenFileReplay is OpenFile with the replayed rows left undecoded, on
// either side.
func (a *ArchiveSource) OpenFileReplay(ctx context.Context, pos mysql.Position, streamed Position) (Stream, error) {
	return a.open(ctx, pos, &streamed, false)
}

func (a *ArchiveSource) open(ctx context.Context, pos mysql.Position, streamed *Position, rowless bool) (Stream, error) {
	live, err := a.cfg.Lister.BinaryLogs(ctx)
	if err != nil {
		return nil, err
	}
	if slices.Contains(live, pos.Name) {
		return a.openLive(ctx, pos, streamed, rowless)
	}
	arch, err := a.cfg.Archive.Files()
	if err != nil {
		return nil, err
	}
	if !slices.Contains(arch, pos.Name) {
		return nil, &FileError{Path: a.cfg.Archive.path(pos.Name), Offset: uint64(pos.Pos), Err: fmt.Errorf(
			"%w: neither the server (%s) nor the archive (%s) has it", ErrNotInDir, span(live), span(arch))}
	}
	ds, err := a.cfg.Archive.openFile(ctx, pos, streamed, rowless)
	if err != nil {
		return nil, err
	}
	ds.handOff = a.handOff(ctx)
	ds.start()
	return &archiveStream{src: a, arch: ds, rowless: rowless, closed: make(chan struct{})}, nil
}

// handOff says, at the end of the archived file cur (whose Rotate names
// rotateTo), whether the server has the next file: its name, or "".
func (a *ArchiveSource) handOff(ctx context.Context) func(cur, rotateTo string) (string, error) {
	return func(cur, rotateTo string) (string, error) {
		live, err := a.cfg.Lister.BinaryLogs(ctx)
		if err != nil {
			return "", err
		}
		next := rotateTo
		if next == "" { // ended without a Rotate: the server's next file
			for _, n := range live {
				if compareFileNames(n, cur) > 0 {
					next = n
					break
				}
			}
		}
		switch {
		case next == "":
			return "", nil
		case slices.Contains(live, next):
			return next, nil
		case len(live) > 0 && compareFileNames(live[0], next) > 0:
			// The server is past next: the archive must have it.
			arch, err := a.cfg.Archive.Files()
			if err != nil {
				return "", err
			}
			if !slices.Contains(arch, next) {
				return "", &FileError{Path: a.cfg.Archive.path(next), Offset: 4, Err: fmt.Errorf(
					"%w: %s rotates to it, and neither the server (%s) nor the archive (%s) has it", ErrNotInDir, cur, span(live), span(arch))}
			}
		}
		return "", nil
	}
}

func (a *ArchiveSource) openLive(ctx context.Context, pos mysql.Position, streamed *Position, rowless bool) (Stream, error) {
	if ro, ok := a.cfg.Live.(rowlessOpener); ok && rowless {
		return ro.openFileRowless(ctx, pos)
	}
	if rs, ok := a.cfg.Live.(ReplaySkipper); ok && streamed != nil {
		return rs.OpenFileReplay(ctx, pos, *streamed)
	}
	return a.cfg.Live.OpenFile(ctx, pos)
}

// OpenGTID starts a GTID dump on the server when it still has every
// transaction after set, else in the archive.
func (a *ArchiveSource) OpenGTID(ctx context.Context, set mysql.GTIDSet) (Stream, error) {
	return a.openGTID(ctx, set, false)
}

func (a *ArchiveSource) openGTID(ctx context.Context, set mysql.GTIDSet, rowless bool) (Stream, error) {
	purged, err := a.cfg.Lister.PurgedGTIDs(ctx)
	if err != nil {
		return nil, err
	}
	flavor := mysql.MySQLFlavor // the set's, not the archive's: it may be empty yet
	if _, ok := set.(*mysql.MariadbGTIDSet); ok {
		flavor = mysql.MariaDBFlavor
	}
	p, err := mysql.ParseGTIDSet(flavor, purged)
	if err != nil {
		return nil, fmt.Errorf("binlogstream: the server's purged GTID state %q: %w", purged, err)
	}
	if set.Contain(p) {
		return a.openLiveGTID(ctx, set, rowless)
	}
	ds, err := a.cfg.Archive.openGTID(ctx, set, rowless)
	if err != nil {
		return nil, err
	}
	ds.handOff = a.handOff(ctx)
	ds.start()
	return &archiveStream{src: a, arch: ds, rowless: rowless, closed: make(chan struct{})}, nil
}

func (a *ArchiveSource) openLiveGTID(ctx context.Context, set mysql.GTIDSet, rowless bool) (Stream, error) {
	if ro, ok := a.cfg.Live.(rowlessOpener); ok && rowless {
		return ro.openGTIDRowless(ctx, set)
	}
	return a.cfg.Live.OpenGTID(ctx, set)
}

func span(names []string) string {
	if len(names) == 0 {
		return "no binlog files"
	}
	return names[0] + " to " + names[len(names)-1]
}

// archiveStream reads the archive, then the server from the file the
// archive handed over at.
type archiveStream struct {
	src     *ArchiveSource
	arch    *dirStream
	rowless bool // the server's side decodes no rows either

	mu     sync.Mutex
	live   Stream
	closed chan struct{}
	once   sync.Once
}

// takeArena is the arena of the last event's rows, from the stream that
// read it.
func (s *archiveStream) takeArena() *rows.Arena {
	s.mu.Lock()
	live := s.live
	s.mu.Unlock()
	if live != nil {
		return takeArena(live)
	}
	return s.arch.takeArena()
}

func (s *archiveStream) Next(ctx context.Context) (*replication.BinlogEvent, error) {
	s.mu.Lock()
	live := s.live
	s.mu.Unlock()
	if live != nil {
		return live.Next(ctx)
	}
	ev, err := s.arch.Next(ctx)
	var h *handOffError
	if !errors.As(err, &h) {
		return ev, err
	}
	_ = s.arch.Close()
	if h.executed != nil {
		live, err = s.src.openLiveGTID(ctx, h.executed, s.rowless)
	} else {
		live, err = s.src.openLive(ctx, mysql.Position{Name: h.next, Pos: 4}, nil, s.rowless)
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	select {
	case <-s.closed:
		s.mu.Unlock()
		_ = live.Close()
		return nil, errStreamClosed
	default:
	}
	s.live = live
	s.mu.Unlock()
	return live.Next(ctx)
}

func (s *archiveStream) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		close(s.closed)
		live := s.live
		s.mu.Unlock()
		_ = s.arch.Close()
		if live != nil {
			_ = live.Close()
		}
	})
	return nil
}
