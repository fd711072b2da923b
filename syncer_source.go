package binlogstream

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/binlogstream/binlogstream/internal/readahead"
	"github.com/binlogstream/binlogstream/internal/rows"
	"github.com/binlogstream/binlogstream/internal/sqlconn"
	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/sirupsen/logrus"
)

// SyncerConfig configures a SyncerSource: a real server over go-mysql's
// BinlogSyncer.
type SyncerConfig struct {
	DSN
	// ServerID is the replica id the dump registers with. It must be
	// non-zero and unique among the server's replicas.
	ServerID uint32
	// Flavor is "mysql" or "mariadb". Empty means detected from the
	// server's version on the first connection (the dump's or a query's),
	// as the commands do.
	Flavor string
	// HeartbeatPeriod asks the server for heartbeats when idle (default 5s).
	HeartbeatPeriod time.Duration
	// ReadTimeout declares the connection dead when nothing, heartbeats
	// included, arrives for that long (default 6 heartbeat periods).
	ReadTimeout time.Duration
	// TLSConfig, when set, is used for every connection (the dump, probes,
	// SHOW MASTER STATUS); otherwise the DSN's tls parameters make it.
	TLSConfig *tls.Config
	// tlsPreferred: the DSN says tls=preferred (plain if the server has
	// no TLS).
	tlsPreferred bool
	// EventCacheCount and EventCacheBytes bound the events go-mysql
	// decodes ahead of the listeners, in events (default 1024) and in
	// binlog bytes (default 32 MiB; an event larger than that still goes
	// through, alone): up to half of each is queued, the rest is the
	// batch being delivered. Decoded rows take a few times their binlog
	// size in memory.
	EventCacheCount int
	EventCacheBytes int64
	// DecodeWorkers is how many goroutines decode rows events, in
	// parallel with go-mysql's reading goroutine and with each other;
	// events still reach the streamer in binlog order. 0 means one per
	// core (GOMAXPROCS); 1 or less decodes on go-mysql's goroutine. Rows
	// are decoded by this package's decoder (DecodeRows) either way. A
	// Tune that sets its own RowsEventDecodeFunc turns both off.
	DecodeWorkers int
	// DecodeTable, when set, says which tables' rows to decode. The rows
	// events of the others are not decoded and not delivered: the
	// position moves past them (the next delivered event's token covers
	// them). Their Table_maps are delivered. A token taken with a filter
	// resumes with the same filter: in GTID mode a transaction's
	// fingerprint counts the row changes delivered.
	DecodeTable func(schema, table string) bool
	// RecycleRows decodes rows into memory that Event.Release hands back
	// for the rows of later events, instead of memory left to the garbage
	// collector. It is for a consumer that calls Release once done with
	// each event's rows (binlog-tail: after writing them): the decoder's
	// allocations, several times the binlog's bytes, and the
	// collector's work and page faults that came with them, mostly go.
	// An event never released costs what it costs without RecycleRows.
	// It applies to the rows this package's decoder decodes (not to those
	// a JSON column or a Tune leaves to go-mysql's, nor to a
	// Transaction_payload's).
	RecycleRows bool
	// Tune, when set, may adjust go-mysql's config (ParseTime, UseDecimal,
	// ...) before each syncer is made. Retry, logging, identity fields and
	// SynchronousEventHandler (the source's event queue) are set again
	// after it. TimestampStringLocation defaults to UTC when Tune leaves it
	// nil; RenderJSONAsMySQLText is on unless Tune turns it off.
	Tune func(*replication.BinlogSyncerConfig)
	// Logger receives go-mysql's log lines (at Debug, Warn for its errors).
	Logger logrus.FieldLogger
}

func (c *SyncerConfig) validate() error {
	if c.ServerID == 0 {
		return configError("ServerID must be non-zero (the server identifies replicas by it)")
	}
	if c.Host == "" && c.Socket == "" {
		return configError("Host and Socket are empty")
	}
	if c.Port == 0 && c.Socket == "" {
		c.Port = 3306
	}
	if c.User == "" {
		return configError("User is empty")
	}
	if c.TLSConfig == nil {
		var err error
		if c.TLSConfig, c.tlsPreferred, err = c.DSN.TLSConfig(); err != nil {
			return err
		}
	}
	switch c.Flavor {
	case "", mysql.MySQLFlavor, mysql.MariaDBFlavor:
	default:
		return configError("Flavor %q: want %q or %q", c.Flavor, mysql.MySQLFlavor, mysql.MariaDBFlavor)
	}
	if c.HeartbeatPeriod < 0 || c.ReadTimeout < 0 {
		return configError("negative HeartbeatPeriod or ReadTimeout")
	}
	if c.HeartbeatPeriod == 0 {
		c.HeartbeatPeriod = 5 * time.Second
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = 6 * c.HeartbeatPeriod
	}
	if c.EventCacheCount <= 0 {
		c.EventCacheCount = 1024
	}
	if c.EventCacheBytes <= 0 {
		c.EventCacheBytes = 32 << 20
	}
	if c.DecodeWorkers == 0 {
		c.DecodeWorkers = runtime.GOMAXPROCS(0)
	}
	if c.Logger == nil {
		c.Logger = discardLogger()
	}
	return nil
}

// SyncerSource is the production Source: every Open makes a new go-mysql
// BinlogSyncer with its own retry turned off, because the streamer owns
// reconnects (go-mysql's GTID retry replays events already delivered).
type SyncerSource struct {
	cfg      SyncerConfig
	listPage int // events a SHOW BINLOG EVENTS of listStatements returns; 0: listPage
	// detected is the flavor the first connection read from the server
	// when cfg.Flavor is empty.
	detected atomic.Pointer[string]
}

var _ Source = (*SyncerSource)(nil)

// NewSyncerSource validates cfg; it connects nothing yet.
func NewSyncerSource(cfg SyncerConfig) (*SyncerSource, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &SyncerSource{cfg: cfg}, nil
}

// flavor is SyncerConfig.Flavor, or the one detected from the server ("" if
// no connection was made yet).
func (s *SyncerSource) flavor() string {
	if s.cfg.Flavor != "" {
		return s.cfg.Flavor
	}
	if f := s.detected.Load(); f != nil {
		return *f
	}
	return ""
}

// noteFlavor records the flavor of conn's server when SyncerConfig.Flavor
// is empty.
func (s *SyncerSource) noteFlavor(conn *client.Conn) {
	if s.cfg.Flavor == "" && s.detected.Load() == nil {
		f := flavorOf(conn.GetServerVersion())
		s.detected.Store(&f)
	}
}

// flavorOf is the flavor a server version string names.
func flavorOf(version string) string {
	if strings.Contains(version, "MariaDB") {
		return mysql.MariaDBFlavor
	}
	return mysql.MySQLFlavor
}

// detectFlavor connects once, when the flavor is still unknown, to read it.
func (s *SyncerSource) detectFlavor(ctx context.Context) error {
	if s.flavor() != "" {
		return nil
	}
	_, done, err := s.connect(ctx)
	if err != nil {
		return fmt.Errorf("binlogstream: detect the server's flavor (or set SyncerConfig.Flavor): %w", err)
	}
	done()
	return nil
}

func (s *SyncerSource) syncerConfig() replication.BinlogSyncerConfig {
	// JSON documents as the server prints them (key order, numbers), the
	// form of partial JSON updates' after documents too; Tune may say not.
	c := replication.BinlogSyncerConfig{RenderJSONAsMySQLText: true}
	if s.cfg.Tune != nil {
		s.cfg.Tune(&c)
	}
	if c.TimestampStringLocation == nil {
		// TIMESTAMP text the same wherever the consumer runs (go-mysql's
		// default is the process's local zone).
		c.TimestampStringLocation = time.UTC
	}
	c.ServerID = s.cfg.ServerID
	c.Flavor = s.flavor()
	c.Host, c.Port, c.User, c.Password = s.cfg.Host, s.cfg.Port, s.cfg.User, s.cfg.Password
	if s.cfg.Socket != "" {
		c.Host, c.Port = s.cfg.Socket, 0 // go-mysql dials a Host holding '/' as a unix socket
	}
	c.HeartbeatPeriod = s.cfg.HeartbeatPeriod
	// No go-mysql ReadTimeout: it re-arms a socket deadline on every
	// packet, which slows the parsing of small events
	// (BenchmarkStreamerVsSyncer shows it). The stream's watchdog enforces
	// ReadTimeout instead, and only while the consumer is waiting.
	c.ReadTimeout = 0
	c.TLSConfig = s.cfg.TLSConfig
	if c.Flavor == mysql.MariaDBFlavor {
		// Without this flag MariaDB leaves Annotate_rows out of the dump,
		// and on 11.4+, which may write LogPos 0, positions cannot be
		// counted without them.
		c.DumpCommandFlag |= replication.BINLOG_SEND_ANNOTATE_ROWS_EVENT
	}
	c.DisableRetrySync = true
	c.MaxReconnectAttempts = 1
	c.EventCacheCount = s.cfg.EventCacheCount
	c.Logger = slog.New(&logrusHandler{log: s.cfg.Logger})
	return c
}

// OpenFile starts a COM_BINLOG_DUMP at pos.
func (s *SyncerSource) OpenFile(ctx context.Context, pos mysql.Position) (Stream, error) {
	return s.open(ctx, func(b *replication.BinlogSyncer) (*replication.BinlogStreamer, error) {
		return b.StartSync(pos)
	})
}

var _ ReplaySkipper = (*SyncerSource)(nil)

// OpenFileReplay is OpenFile with the rows of events up to streamed left
// undecoded (SkipReplayedRows); a Tune that sets its own
// RowsEventDecodeFunc keeps it, and everything is decoded.
func (s *SyncerSource) OpenFileReplay(ctx context.Context, pos mysql.Position, streamed Position) (Stream, error) {
	return s.openWith(ctx, newReplayWindow(streamed), func(b *replication.BinlogSyncer) (*replication.BinlogStreamer, error) {
		return b.StartSync(pos)
	})
}

// OpenGTID starts a GTID dump after set (a clone is passed to go-mysql,
// which mutates the set it is given).
func (s *SyncerSource) OpenGTID(ctx context.Context, set mysql.GTIDSet) (Stream, error) {
	return s.open(ctx, func(b *replication.BinlogSyncer) (*replication.BinlogStreamer, error) {
		return b.StartSyncGTID(set.Clone())
	})
}

func (s *SyncerSource) open(ctx context.Context, start func(*replication.BinlogSyncer) (*replication.BinlogStreamer, error)) (Stream, error) {
	return s.openWith(ctx, nil, start)
}

var _ rowlessOpener = (*SyncerSource)(nil)

func (s *SyncerSource) openFileRowless(ctx context.Context, pos mysql.Position) (Stream, error) {
	return s.openFiltered(ctx, nil, noTable, func(b *replication.BinlogSyncer) (*replication.BinlogStreamer, error) {
		return b.StartSync(pos)
	})
}

func (s *SyncerSource) openGTIDRowless(ctx context.Context, set mysql.GTIDSet) (Stream, error) {
	return s.openFiltered(ctx, nil, noTable, func(b *replication.BinlogSyncer) (*replication.BinlogStreamer, error) {
		return b.StartSyncGTID(set.Clone())
	})
}

// openWith opens a dump; the rows events in skip (a resume's replayed
// ones, when not nil) are left undecoded.
func (s *SyncerSource) openWith(ctx context.Context, skip *replayWindow,
	start func(*replication.BinlogSyncer) (*replication.BinlogStreamer, error)) (Stream, error) {
	return s.openFiltered(ctx, skip, s.cfg.DecodeTable, start)
}

// openFiltered is openWith with the tables whose rows are decoded (all
// when want is nil).
func (s *SyncerSource) openFiltered(ctx context.Context, skip *replayWindow, want func(schema, table string) bool,
	start func(*replication.BinlogSyncer) (*replication.BinlogStreamer, error)) (Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.detectFlavor(ctx); err != nil {
		return nil, err
	}
	st, err := s.openTLS(ctx, s.cfg.TLSConfig, skip, want, start)
	if err != nil && s.cfg.tlsPreferred && isNoTLS(err) {
		st, err = s.openTLS(ctx, nil, skip, want, start)
	}
	return st, err
}

// isNoTLS reports go-mysql's refusal to go on when the server offers no TLS.
func isNoTLS(err error) bool {
	return strings.Contains(err.Error(), "does not support TLS required by the client")
}

func (s *SyncerSource) openTLS(ctx context.Context, tlsConfig *tls.Config, skip *replayWindow, want func(schema, table string) bool,
	start func(*replication.BinlogSyncer) (*replication.BinlogStreamer, error)) (Stream, error) {
	cfg := s.syncerConfig()
	cfg.TLSConfig = tlsConfig
	var dec *readahead.Decoder
	filter := readahead.NewTableFilter(want)
	switch {
	case cfg.RowsEventDecodeFunc != nil: // the Tune's own: it decodes
	case s.cfg.DecodeWorkers > 1 || s.cfg.RecycleRows:
		dec = readahead.NewDecoder(readahead.Workers(s.cfg.DecodeWorkers), skip.skipFunc(), filter)
		dec.Recycle = s.cfg.RecycleRows
		cfg.RowsEventDecodeFunc = dec.Decode
	default: // decoded in place, on go-mysql's goroutine
		cfg.RowsEventDecodeFunc = readahead.NewDecoder(0, skip.skipFunc(), filter).Decode
	}
	// go-mysql hands each decoded event to q on its reading goroutine; the
	// queue and the stream's current batch hold at most EventCacheCount.
	q := readahead.NewQueue(max(cfg.EventCacheCount/2, 1), max(s.cfg.EventCacheBytes/2, 1))
	cfg.SynchronousEventHandler = q
	b := replication.NewBinlogSyncer(cfg)
	type result struct {
		st  *replication.BinlogStreamer
		err error
	}
	ch := make(chan result, 1)
	go func() {
		st, err := start(b)
		ch <- result{st, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			b.Close()
			if dec != nil {
				dec.Close()
			}
			return nil, fmt.Errorf("binlogstream: connect to %s: %w", s.cfg.DSN, deniedHint(ctx, s.cfg.DSN, r.err, tlsConfig))
		}
		sctx, cancel := context.WithCancel(context.Background())
		st := &syncerStream{syncer: b, ctx: sctx, cancel: cancel, timeout: s.cfg.ReadTimeout}
		st.cur = readahead.Cursor{Q: q, Dec: dec, OnWait: func() { st.calls.Add(1) }, TakeErr: st.takeErr}
		go st.watch()
		go func() {
			// Events go to q, not to GetEvent: it only reports how the
			// dump ended (a lost connection, a server error), after the
			// events that came before.
			var err error
			for err == nil {
				_, err = r.st.GetEvent(sctx)
			}
			q.Fail(err)
		}()
		return st, nil
	case <-ctx.Done():
		go func() {
			<-ch
			b.Close()
			if dec != nil {
				dec.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

type syncerStream struct {
	syncer *replication.BinlogSyncer
	cur    readahead.Cursor // over the queue go-mysql's goroutine fills
	once   sync.Once
	// ctx is cancelled by Close: it ends the watchdog and the goroutine
	// waiting for the dump's ending error.
	ctx     context.Context
	cancel  context.CancelFunc
	timeout time.Duration // SyncerConfig.ReadTimeout

	// calls counts Next's waits for a batch, at the start and the end of
	// each: odd while Next waits.
	calls    atomic.Uint64
	timedOut atomic.Bool // the watchdog closed the stream
}

// errReadTimeout wraps mysql.ErrBadConn: a silent connection is a lost one.
type readTimeoutError struct{ d time.Duration }

func (e *readTimeoutError) Error() string {
	return fmt.Sprintf("binlogstream: nothing (not even a heartbeat) arrived for %s: %v", e.d, mysql.ErrBadConn)
}
func (e *readTimeoutError) Unwrap() error { return mysql.ErrBadConn }
func (e *readTimeoutError) Timeout() bool { return true }

func (s *syncerStream) takeArena() *rows.Arena { return s.cur.TakeArena() }

// Next serves the queue's next event.
func (s *syncerStream) Next(ctx context.Context) (*replication.BinlogEvent, error) {
	return s.cur.Next(ctx)
}

// nextOrIdle is Next that returns idle when wake closes with nothing
// queued (idleStream).
func (s *syncerStream) nextOrIdle(ctx context.Context, wake <-chan struct{}) (*replication.BinlogEvent, bool, error) {
	return s.cur.NextOrIdle(ctx, wake)
}

// takeErr is the error of a queue the watchdog closed: a read timeout.
func (s *syncerStream) takeErr(ctx context.Context, err error) error {
	if s.timedOut.Load() && ctx.Err() == nil {
		return &readTimeoutError{d: s.timeout}
	}
	return err
}

// watch closes the stream when Next has waited for timeout with nothing
// arriving, heartbeats included. A slow listener is not a dead server, so
// only time spent waiting counts.
func (s *syncerStream) watch() {
	timeout := s.timeout
	tick := time.NewTicker(max(timeout/8, time.Millisecond))
	defer tick.Stop()
	last, idleSince := s.calls.Load(), time.Now()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-tick.C:
			// Waiting since the last tick: the same odd count. Any change
			// (an event, or the consumer back from its listener) restarts
			// the idle time.
			c := s.calls.Load()
			if c != last || c%2 == 0 {
				last, idleSince = c, now
				continue
			}
			if now.Sub(idleSince) >= timeout {
				s.timedOut.Store(true)
				_ = s.Close()
				return
			}
		}
	}
}

func (s *syncerStream) Close() error {
	s.once.Do(func() {
		// First, so that Next reports the close, not the cancelled
		// GetEvent below; it also frees go-mysql's goroutine if it waits
		// for room.
		s.cur.Q.Fail(readahead.ErrClosed)
		s.cancel()
		s.syncer.Close()
		if s.cur.Dec != nil {
			s.cur.Dec.Close()
		}
	})
	return nil
}

// logrusHandler routes go-mysql's slog lines to a logrus logger. go-mysql
// logs its whole config at Info and every connection error at Error; the
// streamer decides what is an error, so Info and below go to Debug and
// Warn and Error to Warn (but the expected ones, below). The config
// attribute, which holds the password, is dropped: no line is built from it.
type logrusHandler struct {
	log   logrus.FieldLogger
	attrs []slog.Attr
	group string
}

func (h *logrusHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *logrusHandler) Handle(_ context.Context, r slog.Record) error {
	fields := logrus.Fields{"component": "go-mysql"}
	add := func(a slog.Attr) bool {
		if a.Key == "config" {
			// go-mysql logs its whole BinlogSyncerConfig, the password
			// included: never format it.
			return true
		}
		key := a.Key
		if h.group != "" {
			key = h.group + "." + key
		}
		fields[key] = a.Value.String()
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	e := h.log.WithFields(fields)
	msg := r.Message
	if r.Level >= slog.LevelWarn && !expectedWarning(r) {
		e.Warn(msg)
	} else {
		e.Debug(msg)
	}
	return nil
}

// expectedWarning reports go-mysql's warnings on a path the source itself
// takes on every reconnect: it turned go-mysql's retry off ("retry sync is
// disabled"), and closing a syncer whose connection died KILLs a thread the
// server has already ended ("kill connection", 1094 Unknown thread id).
func expectedWarning(r slog.Record) bool {
	switch r.Message {
	case "retry sync is disabled":
		return true
	case "kill connection":
		unknown := false
		r.Attrs(func(a slog.Attr) bool {
			if err, ok := a.Value.Any().(error); ok {
				unknown = mysql.ErrorCode(err.Error()) == mysql.ER_NO_SUCH_THREAD
				var me *mysql.MyError
				if errors.As(err, &me) {
					unknown = me.Code == mysql.ER_NO_SUCH_THREAD
				}
			}
			return !unknown
		})
		return unknown
	}
	return false
}

func (h *logrusHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return &c
}

func (h *logrusHandler) WithGroup(name string) slog.Handler {
	c := *h
	if c.group != "" {
		name = c.group + "." + name
	}
	c.group = name
	return &c
}

// Connect opens a query connection (not a dump) with the DSN's TLS
// settings, as the SyncerSource's own probes do.
func (d DSN) Connect(ctx context.Context) (*client.Conn, error) {
	tc, preferred, err := d.TLSConfig()
	if err != nil {
		return nil, err
	}
	return connectQuery(ctx, d, tc, preferred)
}

func connectQuery(ctx context.Context, d DSN, tc *tls.Config, preferred bool) (*client.Conn, error) {
	dial := func(tc *tls.Config) (*client.Conn, error) {
		return client.ConnectWithContext(ctx, d.Addr(), d.User, d.Password, "", 10*time.Second, func(c *client.Conn) error {
			c.SetTLSConfig(tc)
			return nil
		})
	}
	conn, err := dial(tc)
	if err != nil && preferred && isNoTLS(err) {
		conn, err = dial(nil)
	}
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", d, deniedHint(ctx, d, err, tc))
	}
	return conn, nil
}

// deniedHint adds to an access denied what may be behind it: no
// password at all; or, over a plain connection, a server that requires
// secure transport (MariaDB with require_secure_transport=ON refuses a
// plain connection as "Access denied", with no word of TLS). The second
// is said only when the same credentials are accepted over TLS (a
// connection that checks no certificate, closed at once), so a wrong
// password gets no hint that misleads.
func deniedHint(ctx context.Context, d DSN, err error, tc *tls.Config) error {
	var me *mysql.MyError
	if !errors.As(err, &me) || me.Code != mysql.ER_ACCESS_DENIED_ERROR {
		return err
	}
	if d.Password == "" {
		return &hintError{err: err, hint: "no password was given: put it in the DSN (the commands also read --password-file FILE and MYSQL_PWD)"}
	}
	if tc != nil {
		return err
	}
	probe := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // a probe whether TLS is accepted; nothing is sent but the login
	conn, perr := client.ConnectWithContext(ctx, d.Addr(), d.User, d.Password, "", 10*time.Second, func(c *client.Conn) error {
		c.SetTLSConfig(probe)
		return nil
	})
	if perr != nil {
		return err
	}
	_ = sqlconn.Close(conn)
	return &hintError{err: err, hint: "the server accepts these credentials over TLS only (require_secure_transport): add tls=true to the DSN"}
}

type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() + "; " + e.hint }
func (e *hintError) Unwrap() error { return e.err }

// connect opens a short-lived query connection (TLS as the DSN says) that
// ctx closes; done releases it.
func (s *SyncerSource) connect(ctx context.Context) (conn *client.Conn, done func(), err error) {
	conn, err = connectQuery(ctx, s.cfg.DSN, s.cfg.TLSConfig, s.cfg.tlsPreferred)
	if err != nil {
		return nil, nil, err
	}
	s.noteFlavor(conn)
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	return conn, func() {
		if stop() {
			_ = sqlconn.Close(conn)
		}
	}, nil
}

// BinaryLogs lists the binlog files the server has (SHOW BINARY LOGS),
// oldest first.
func (s *SyncerSource) BinaryLogs(ctx context.Context) ([]string, error) {
	files, err := s.BinaryLogFiles(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Name
	}
	return names, nil
}

// BinaryLogFile is a row of SHOW BINARY LOGS: a binlog file and its size
// in bytes (the active file's size is where the server writes next).
type BinaryLogFile struct {
	Name string
	Size uint64
}

// BinaryLogFiles lists the binlog files the server has with their sizes
// (SHOW BINARY LOGS), oldest first.
func (s *SyncerSource) BinaryLogFiles(ctx context.Context) ([]BinaryLogFile, error) {
	conn, done, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	r, err := conn.Execute("SHOW BINARY LOGS")
	if err != nil {
		return nil, fmt.Errorf("SHOW BINARY LOGS on %s: %w", s.cfg.DSN, err)
	}
	files := make([]BinaryLogFile, 0, r.RowNumber())
	for i := range r.RowNumber() {
		n, err := r.GetString(i, 0)
		if err != nil {
			return nil, fmt.Errorf("SHOW BINARY LOGS on %s: %w", s.cfg.DSN, err)
		}
		size, err := r.GetUint(i, 1)
		if err != nil {
			return nil, fmt.Errorf("SHOW BINARY LOGS on %s: %w", s.cfg.DSN, err)
		}
		files = append(files, BinaryLogFile{Name: strings.Clone(n), Size: size}) // GetString aliases a pooled buffer
	}
	return files, nil
}

// PurgedGTIDs is the GTID state the server's oldest binlog file starts
// with: @@gtid_purged on MySQL; on MariaDB BINLOG_GTID_POS of the first
// file of SHOW BINARY LOGS at offset 4.
func (s *SyncerSource) PurgedGTIDs(ctx context.Context) (string, error) {
	conn, done, err := s.connect(ctx)
	if err != nil {
		return "", err
	}
	defer done()
	q := "SELECT @@GLOBAL.gtid_purged"
	if s.flavor() == mysql.MariaDBFlavor {
		r, err := conn.Execute("SHOW BINARY LOGS")
		if err != nil {
			return "", fmt.Errorf("SHOW BINARY LOGS on %s: %w", s.cfg.DSN, err)
		}
		if r.RowNumber() == 0 {
			return "", fmt.Errorf("%s has no binlog files", s.cfg.DSN)
		}
		first, err := r.GetString(0, 0)
		if err != nil {
			return "", err
		}
		q = fmt.Sprintf("SELECT BINLOG_GTID_POS('%s', 4)", strings.ReplaceAll(first, "'", "''"))
	}
	r, err := conn.Execute(q)
	if err != nil {
		return "", fmt.Errorf("%s on %s: %w", q, s.cfg.DSN, err)
	}
	v, err := r.GetString(0, 0)
	if err != nil {
		return "", fmt.Errorf("%s on %s: %w", q, s.cfg.DSN, err)
	}
	return strings.ReplaceAll(strings.Clone(v), "\n", ""), nil
}

// Probe reads the server's state over a short-lived connection.
func (s *SyncerSource) Probe(ctx context.Context) (ServerState, error) {
	conn, done, err := s.connect(ctx)
	if err != nil {
		return ServerState{Flavor: s.flavor()}, err
	}
	defer done()
	st := ServerState{Flavor: s.flavor()}

	get := func(v string) (string, error) {
		r, err := conn.Execute("SELECT @@GLOBAL." + v)
		if err != nil {
			return "", err
		}
		x, err := r.GetString(0, 0)
		return strings.Clone(x), err // GetString aliases a pooled buffer
	}
	flag := func(v string) (bool, error) {
		x, err := get(v)
		return x == "1" || strings.EqualFold(x, "ON"), err
	}
	if st.ReadOnly, err = flag("read_only"); err != nil {
		return st, fmt.Errorf("read @@read_only: %w", err)
	}
	if st.LogBin, err = flag("log_bin"); err != nil {
		return st, fmt.Errorf("read @@log_bin: %w", err)
	}
	st.LogSlaveUpdates, _ = flag("log_slave_updates")
	if st.Flavor == mysql.MariaDBFlavor {
		if st.Executed, err = get("gtid_binlog_pos"); err != nil {
			return st, fmt.Errorf("read @@gtid_binlog_pos: %w", err)
		}
	} else {
		if st.SuperReadOnly, err = flag("super_read_only"); err != nil {
			return st, fmt.Errorf("read @@super_read_only: %w", err)
		}
		if st.GTIDMode, err = get("gtid_mode"); err != nil {
			return st, fmt.Errorf("read @@gtid_mode: %w", err)
		}
		if st.Executed, err = get("gtid_executed"); err != nil {
			return st, fmt.Errorf("read @@gtid_executed: %w", err)
		}
		if !st.LogSlaveUpdates {
			st.LogSlaveUpdates, _ = flag("log_replica_updates")
		}
	}
	st.Executed = strings.ReplaceAll(st.Executed, "\n", "")
	r, err := conn.Execute("SHOW MASTER STATUS")
	if err != nil {
		r, err = conn.Execute("SHOW BINARY LOG STATUS") // MySQL 8.4
	}
	if err == nil && r.RowNumber() > 0 {
		file, _ := r.GetString(0, 0)
		file = strings.Clone(file)
		pos, _ := r.GetUint(0, 1)
		st.Binlog = Position{File: file, Offset: pos}
	}
	return st, nil
}

// BinlogSettings reads the server's binlog_format and binlog_row_image
// over a short-lived connection.
func (s *SyncerSource) BinlogSettings(ctx context.Context) (BinlogSettings, error) {
	st := BinlogSettings{Server: s.cfg.DSN.Addr()}
	conn, done, err := s.connect(ctx)
	if err != nil {
		return st, err
	}
	defer done()
	r, err := conn.Execute("SELECT @@GLOBAL.binlog_format, @@GLOBAL.binlog_row_image")
	if err != nil {
		return st, fmt.Errorf("binlogstream: read binlog_format and binlog_row_image on %s: %w", st.Server, err)
	}
	f, err1 := r.GetString(0, 0)
	img, err2 := r.GetString(0, 1)
	if err1 != nil || err2 != nil {
		return st, fmt.Errorf("binlogstream: read binlog_format and binlog_row_image on %s: %v %v", st.Server, err1, err2)
	}
	st.Format, st.RowImage = strings.Clone(f), strings.Clone(img) // GetString aliases a pooled buffer
	return st, nil
}
