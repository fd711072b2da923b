package binlogstream

import (
	"io"
	"time"

	"github.com/sirupsen/logrus"
)

// DefaultReconnectAttempts is Config.MaxReconnectAttempts when it is 0
// and there is no failover: with the default backoff (100 ms doubling to
// 5 s) the streamer waits 56 s in all before it gives up, which outlasts an
// ordinary server restart with crash recovery.
const DefaultReconnectAttempts = 16

// Config configures a BinlogStreamer.
type Config struct {
	// Source opens dumps. Use NewSyncerSource for a real server.
	Source Source
	// Start is where streaming begins or resumes: a token read back with
	// ParseResumePosition, or StartAt(position) for a fresh start.
	Start ResumePosition

	// MaxReconnectAttempts bounds consecutive failed reconnects after a
	// dropped connection. 0 means the default, DefaultReconnectAttempts
	// (about a minute with the default backoff); negative means no
	// reconnects at all.
	MaxReconnectAttempts int
	// ReconnectBackoff is the first wait between reconnects; it doubles up
	// to MaxReconnectBackoff. Defaults: 100ms and 5s.
	ReconnectBackoff    time.Duration
	MaxReconnectBackoff time.Duration

	// Failover, when set, moves a GTID-mode stream to a validated writer
	// once MaxReconnectAttempts reconnects to the current server failed
	// (the default bound is then 3). See FailoverConfig.
	Failover *FailoverConfig

	// StopGrace is how long a listener may still take over the event it
	// is handling once Run's context is done, before the listener's context
	// is cancelled too (see Listener). 0 means 30 s; negative means none.
	StopGrace time.Duration

	// Schema configures the schema history behind Event.Table. Nil keeps
	// the history in memory: names come from FULL row metadata and from
	// the CREATE statements the stream itself reads. See SchemaConfig.
	Schema *SchemaConfig

	// Logger receives the streamer's log lines. Nil means silent.
	Logger logrus.FieldLogger

	// ProgressInterval, when positive, makes the streamer deliver an Event
	// whose body is a *Progress, carrying Resume, when the position moved
	// without a delivery (rows of tables SyncerConfig.DecodeTable leaves
	// out, replayed events dropped at a resume) or the stream was idle,
	// and the first such move or heartbeat is at least that long ago. It
	// comes at such a move or at a heartbeat (SyncerConfig.HeartbeatPeriod),
	// never between a delivered event and its acknowledgement. 0 delivers
	// none. See Progress.
	ProgressInterval time.Duration

	// AllowStatementDML lets a run stream a server whose binlog_format is
	// not ROW, and pass a row change logged as a statement as its Query
	// event. By default the streamer refuses such a server before every
	// dump (*BinlogSettingsError) and stops before such a statement when it
	// changes a selected table (*StatementDMLError), because the binlog
	// holds no rows of that change. The cost of setting it: the rows of
	// every change logged as a statement are in no event, so a listener
	// that applies or ships rows misses them without a word; only a
	// listener that reads and applies the statements themselves should.
	AllowStatementDML bool

	// RequireFullRowImage refuses a server whose binlog_row_image is not
	// FULL (MINIMAL and NOBLOB leave columns out of rows events), before
	// every dump: for a listener that copies whole rows. A snapshot
	// (Snapshot, SnapshotTable) requires it by itself.
	RequireFullRowImage bool

	// Snapshot, when set, reads the tables it selects while streaming, in
	// key chunks delivered as SnapshotRead events in stream order. See
	// SnapshotConfig.
	Snapshot *SnapshotConfig
}

func (c *Config) validate() error {
	if c.Source == nil {
		return configError("Source is nil (use NewSyncerSource for a server)")
	}
	if c.Start.IsZero() {
		return configError("Start is empty: use StartAt(Position{File: ..., Offset: 4}) or a parsed resume token")
	}
	if err := c.Start.validate(); err != nil {
		return configError("Start: %v", err)
	}
	if c.Failover != nil {
		if err := c.Failover.validate(c.Start); err != nil {
			return err
		}
	}
	switch {
	case c.MaxReconnectAttempts == 0 && c.Failover != nil:
		c.MaxReconnectAttempts = 3
	case c.MaxReconnectAttempts == 0:
		c.MaxReconnectAttempts = DefaultReconnectAttempts
	case c.MaxReconnectAttempts < 0:
		c.MaxReconnectAttempts = 0
	}
	if c.ReconnectBackoff < 0 || c.MaxReconnectBackoff < 0 {
		return configError("negative reconnect backoff")
	}
	if c.ReconnectBackoff == 0 {
		c.ReconnectBackoff = 100 * time.Millisecond
	}
	if c.MaxReconnectBackoff == 0 {
		c.MaxReconnectBackoff = 5 * time.Second
	}
	if c.MaxReconnectBackoff < c.ReconnectBackoff {
		c.MaxReconnectBackoff = c.ReconnectBackoff
	}
	if c.StopGrace == 0 {
		c.StopGrace = 30 * time.Second
	}
	if c.ProgressInterval < 0 {
		return configError("negative ProgressInterval")
	}
	if c.Logger == nil {
		c.Logger = discardLogger()
	}
	if c.Schema == nil {
		c.Schema = &SchemaConfig{}
	}
	if c.Snapshot != nil {
		return c.Snapshot.validate()
	}
	return nil
}

func discardLogger() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}
