package binlogstream

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Source opens binlog dumps. Each Open call starts a new dump, as a new
// replica connection would: the server first sends a fake Rotate naming the
// file and position, then the file's Format_description, then the events.
// The streamer closes every Stream it opened before it opens another one.
//
// The production Source wraps go-mysql's BinlogSyncer (see SyncerSource);
// tests use testhelpers.FakeSource, which serves encoded binlog bytes and
// decodes them with go-mysql's own parser.
type Source interface {
	// OpenFile starts a dump at a binlog file and offset (COM_BINLOG_DUMP).
	OpenFile(ctx context.Context, pos mysql.Position) (Stream, error)
	// OpenGTID starts a dump after the given executed GTID set
	// (COM_BINLOG_DUMP_GTID on MySQL, @slave_connect_state on MariaDB).
	// Implementations must not keep or modify set.
	OpenGTID(ctx context.Context, set mysql.GTIDSet) (Stream, error)
}

// Stream is one open dump.
type Stream interface {
	// Next blocks until the next event, an error, or ctx is done. After an
	// error the stream is dead; the streamer closes it and opens another.
	// A dropped connection is reported as an error wrapping
	// mysql.ErrBadConn (as go-mysql's packet layer does) or a net.Error.
	Next(ctx context.Context) (*replication.BinlogEvent, error)
	// Close ends the dump. It is safe to call more than once.
	Close() error
}

// ServerState is what a server reports about itself, read by a Prober.
type ServerState struct {
	Flavor          string
	ReadOnly        bool   // @@read_only
	SuperReadOnly   bool   // @@super_read_only (MySQL)
	GTIDMode        string // @@gtid_mode (MySQL); "" on MariaDB, whose GTIDs are always on
	LogBin          bool   // @@log_bin
	LogSlaveUpdates bool   // @@log_slave_updates / @@log_replica_updates
	// Executed is what the server's binlog holds: @@gtid_executed on MySQL,
	// @@gtid_binlog_pos on MariaDB.
	Executed string
	// Binlog is the server's current binlog position (SHOW MASTER STATUS).
	Binlog Position
	// NextBinlog, when not zero, is where the binlog goes on after Binlog:
	// the file and offset named by the Rotate event that ends at Binlog (a
	// DirSource whose last file ends with one). A stream there has
	// everything up to Binlog, whatever the order of the two names.
	NextBinlog Position
}

// Prober reads a server's state. SyncerSource is one.
type Prober interface {
	Probe(ctx context.Context) (ServerState, error)
}

// ProberFunc adapts a function to Prober.
type ProberFunc func(ctx context.Context) (ServerState, error)

// Probe calls f.
func (f ProberFunc) Probe(ctx context.Context) (ServerState, error) { return f(ctx) }

// StartAtCurrent returns the position where src's binlog ends now (SHOW
// MASTER STATUS on a server): a stream started from it delivers what is
// written after the call, and nothing before. SyncerSource and DirSource
// are Probers.
func StartAtCurrent(ctx context.Context, src Prober) (ResumePosition, error) {
	st, err := src.Probe(ctx)
	if err != nil {
		return ResumePosition{}, fmt.Errorf("binlogstream: read the current position: %w", err)
	}
	if st.Binlog.IsZero() {
		return ResumePosition{}, fmt.Errorf("binlogstream: the server reports no binlog position (log_bin=OFF?)")
	}
	return StartAt(st.Binlog), nil
}

// StartAtCurrentGTID is StartAtCurrent in GTID mode: StartAtGTID of the
// server's executed set (@@gtid_executed on MySQL, @@gtid_binlog_pos on
// MariaDB) in the flavor the server reports.
func StartAtCurrentGTID(ctx context.Context, src Prober) (ResumePosition, error) {
	st, err := src.Probe(ctx)
	if err != nil {
		return ResumePosition{}, fmt.Errorf("binlogstream: read the executed GTID set: %w", err)
	}
	switch {
	case st.Flavor == "":
		return ResumePosition{}, fmt.Errorf("binlogstream: the source (%T) does not report its flavor: use StartAtGTID", src)
	case st.Flavor == mysql.MySQLFlavor && !strings.EqualFold(st.GTIDMode, "ON"):
		return ResumePosition{}, fmt.Errorf("binlogstream: the server has gtid_mode=%s: GTID mode needs gtid_mode=ON, or use StartAtCurrent", st.GTIDMode)
	}
	return StartAtGTID(st.Flavor, st.Executed)
}

// idleStream is a Stream that can also return when wake closes while it
// has nothing queued (idle true): everything the server sent so far was
// taken. The stream stays usable. The streamer uses it to act on a chunk
// read that completed while the binlog is quiet, without waiting for the
// next event or heartbeat.
type idleStream interface {
	nextOrIdle(ctx context.Context, wake <-chan struct{}) (*replication.BinlogEvent, bool, error)
}

var (
	_ idleStream = (*syncerStream)(nil)
	_ idleStream = (*dirStream)(nil)
)
