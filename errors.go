package binlogstream

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

var (
	// ErrClosed is returned by Run after Close.
	ErrClosed = errors.New("binlogstream: streamer closed")
	// ErrNotRunning is returned by FlushAndStop when no Run is in progress.
	ErrNotRunning = errors.New("binlogstream: streamer is not running")
	// ErrAlreadyRunning is returned by a second concurrent Run.
	ErrAlreadyRunning = errors.New("binlogstream: streamer is already running")
	// ErrReconnectExhausted is matched by the error Run returns when the
	// connection kept dropping and the reconnect attempts ran out.
	ErrReconnectExhausted = errors.New("binlogstream: reconnect attempts exhausted")
	// ErrInvalidConfig is matched by every configuration error.
	ErrInvalidConfig = errors.New("binlogstream: invalid config")
	// ErrOffsetTooLarge is matched when a dump would have to start past
	// 4 GiB in one file: COM_BINLOG_DUMP carries a 32-bit offset.
	ErrOffsetTooLarge = errors.New("binlogstream: binlog offset past 4 GiB cannot be requested in file mode")
)

func configError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
}

// ReconnectError is returned when the streamer gave up reconnecting.
type ReconnectError struct {
	Attempts int
	Last     error // the error of the last attempt
}

func (e *ReconnectError) Error() string {
	return fmt.Sprintf("binlogstream: gave up after %d reconnect attempts: %v", e.Attempts, e.Last)
}

// Unwrap returns ErrReconnectExhausted and the last error, so both
// errors.Is(err, ErrReconnectExhausted) and a check for the cause work.
func (e *ReconnectError) Unwrap() []error { return []error{ErrReconnectExhausted, e.Last} }

// ListenerError wraps an error returned by a listener. The event it
// failed on does not count as streamed.
type ListenerError struct {
	Position Position // end of the event the listener failed on
	Err      error
}

func (e *ListenerError) Error() string {
	return fmt.Sprintf("binlogstream: listener failed on the event ending at %s: %v", e.Position, e.Err)
}

func (e *ListenerError) Unwrap() error { return e.Err }

// DecodeError wraps an event that go-mysql could not decode. It usually
// means the dump started inside a statement (after its Table_map), which a
// ResumePosition from this package never does, or a corrupt binlog. Its
// message is go-mysql's reason; the event's bytes are in Data, not in the
// message.
type DecodeError struct {
	Start  Position       // the dump's start (file mode)
	From   ResumePosition // the position the dump was opened for
	Header replication.EventHeader
	Data   []byte // the event's body as go-mysql read it
	Reason string // go-mysql's reason, e.g. "invalid table id 5, no corresponding table map event"
	Err    error  // go-mysql's error (a *replication.EventError inside)
}

func newDecodeError(from ResumePosition, err error) *DecodeError {
	e := &DecodeError{Start: from.Safe, From: from, Err: err, Reason: err.Error()}
	var ee *replication.EventError
	if errors.As(err, &ee) {
		e.Reason, e.Data = ee.Err, ee.Data
		if ee.Header != nil {
			e.Header = *ee.Header
		}
	}
	return e
}

func (e *DecodeError) Error() string {
	what := "an event"
	if e.Header.EventType != 0 {
		what = fmt.Sprintf("the %s event ending at offset %d", e.Header.EventType, e.Header.LogPos)
	}
	if strings.Contains(e.Reason, "unsupport type") {
		// A type go-mysql's decoder does not know (MariaDB's COMPRESSED
		// columns, 140 and 141), when this package's decoder does not
		// apply: a start inside a statement is not the cause.
		return fmt.Sprintf("binlogstream: cannot decode %s: a column type go-mysql's decoder does not know "+
			"(this package's decoder reads MariaDB's COMPRESSED columns, unless Tune sets go-mysql's ParseTime or UseDecimal): %s", what, e.Reason)
	}
	if e.From.IsGTID() {
		return fmt.Sprintf("binlogstream: cannot decode %s (dump from %s): %s", what, e.From.describe(), e.Reason)
	}
	return fmt.Sprintf("binlogstream: cannot decode %s (dump started at %s; a start inside a statement, after its Table_map, fails like this): %s",
		what, e.Start, e.Reason)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// ServerError wraps an error the server sent, such as 1236 for a binlog
// that was purged or a position past the end of a file.
type ServerError struct {
	Start Position       // the dump's start (file mode)
	From  ResumePosition // the position the dump was opened for
	Err   *mysql.MyError
	hint  string // what the user may do about it, when known
}

func (e *ServerError) Error() string {
	hint := ""
	if e.hint != "" {
		hint = "; " + e.hint
	}
	if e.From.IsGTID() {
		return fmt.Sprintf("binlogstream: server refused the dump from %s: %v%s", e.From.describe(), e.Err, hint)
	}
	return fmt.Sprintf("binlogstream: server refused the dump at %s: %v%s", e.Start, e.Err, hint)
}

func (e *ServerError) Unwrap() error { return e.Err }

// Server error codes on which a reconnect can succeed: the server is
// shutting down or killed our dump thread.
var transientServerCodes = map[uint16]bool{
	mysql.ER_SERVER_SHUTDOWN:       true, // 1053
	1927:                           true, // ER_CONNECTION_KILLED (MariaDB)
	mysql.ER_NET_READ_ERROR:        true,
	mysql.ER_NET_READ_INTERRUPTED:  true,
	mysql.ER_NET_ERROR_ON_WRITE:    true,
	mysql.ER_NET_WRITE_INTERRUPTED: true,
	mysql.ER_QUERY_INTERRUPTED:     true,
	mysql.ER_CON_COUNT_ERROR:       true,
}

// IsRetryable reports whether err is a dropped or refused connection that a
// reconnect may cure. Server refusals such as a purged binlog (1236),
// decode errors and listener errors are not retryable.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var me *mysql.MyError
	if errors.As(err, &me) {
		return transientServerCodes[me.Code]
	}
	var ee *replication.EventError
	if errors.As(err, &ee) {
		return false
	}
	if errors.Is(err, mysql.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// ErrRowsNotLogged is matched by the errors that stop a stream because
// the binlog would not hold a change's rows: a server not logging ROW
// (*BinlogSettingsError) and a row change logged as a statement
// (*StatementDMLError). Config.AllowStatementDML lets both pass.
var ErrRowsNotLogged = errors.New("binlogstream: row changes not logged as rows")

// BinlogSettingsError refuses a server whose binlog would not hold every
// change as rows (binlog_format other than ROW), or, where a full copy
// of each row is needed (Config.RequireFullRowImage, a snapshot), one
// that leaves columns out (binlog_row_image other than FULL). It is
// checked before every dump: at the start, at each reconnect and on a
// failover candidate.
type BinlogSettingsError struct {
	Server   string // the server, as its Source names it
	Variable string // binlog_format or binlog_row_image
	Value    string // what the server has
	Want     string // ROW or FULL
	cost     string // what the value would lose
	override string // how to accept the value anyway, "" when nothing does
}

func (e *BinlogSettingsError) Error() string {
	s := fmt.Sprintf("binlogstream: %s has %s=%s: %s; set it to %s on the server (SET GLOBAL %s=%s, and %s=%s under [mysqld] in its configuration; sessions already open keep their own value until they reconnect)",
		e.Server, e.Variable, e.Value, e.cost, e.Want, e.Variable, e.Want, strings.ReplaceAll(e.Variable, "_", "-"), e.Want)
	if e.override != "" {
		s += "; " + e.override
	}
	return s
}

// Unwrap returns ErrRowsNotLogged.
func (e *BinlogSettingsError) Unwrap() error { return ErrRowsNotLogged }

// StatementDMLError stops a stream at a Query event that changes rows of
// a selected table (or of tables it cannot tell apart): a row change
// logged as a statement, under binlog_format STATEMENT or MIXED on the
// server or in the session that wrote it. Its rows are not in the
// binlog, so delivering what follows would hide a hole. The event is not
// delivered and the resume position stays before it: a resume reaches it
// again and stops again.
type StatementDMLError struct {
	Start, End Position // the event's start and end
	GTID       string   // its transaction's GTID, "" in file mode without one
	// Statement is the statement, its secrets masked, cut to 200 bytes.
	Statement string
	// Tables are the selected tables it changes as `db`.`table`; empty
	// when the statement could not be read, so any table may be changed.
	Tables []string
}

func (e *StatementDMLError) Error() string {
	at := e.Start.String()
	if e.GTID != "" {
		at += " (GTID " + e.GTID + ")"
	}
	what := "tables the stream cannot tell apart (the statement could not be read)"
	if len(e.Tables) > 0 {
		what = strings.Join(e.Tables, ", ")
	}
	return fmt.Sprintf("binlogstream: a row change logged as a statement at %s changes %s: %q; its rows are not in the binlog, so the stream stops before it "+
		"(set binlog_format=ROW on the server and in every session that writes, "+
		"or leave such tables out of the selection: --tables, or SyncerConfig.DecodeTable; Config.AllowStatementDML passes the statement on unapplied)",
		at, what, e.Statement)
}

// Unwrap returns ErrRowsNotLogged.
func (e *StatementDMLError) Unwrap() error { return ErrRowsNotLogged }

// ErrResumeMismatch is matched by errors that say the binlog replayed from
// the safe point is not the one the resume position was taken from (a
// server reset, a restored backup, or a position from another server).
var ErrResumeMismatch = errors.New("binlogstream: replayed binlog does not match the resume position")

// ErrPosition is matched by errors about event positions the tracker
// cannot follow exactly (an event before the dump's Rotate, a LogPos that
// disagrees with the event sizes). Positions are never guessed.
var ErrPosition = errors.New("binlogstream: inconsistent binlog position")

// ErrInvalidToken is matched (errors.Is) by every error that comes from
// parsing a corrupt, truncated or foreign resume token.
var ErrInvalidToken = errors.New("binlogstream: invalid resume token")

// ErrFailoverExhausted is matched by the error Run returns when no
// candidate passed validation within the failover attempts.
var ErrFailoverExhausted = errors.New("binlogstream: failover found no valid writer")

// ErrCandidateRefused is matched by every reason a candidate was refused.
var ErrCandidateRefused = errors.New("binlogstream: failover candidate refused")

// ErrNotInDir is matched by errors for a position the directory does not
// hold: its file is missing (not copied, or purged), or no file starts at
// a GTID state the requested set contains.
var ErrNotInDir = errors.New("binlogstream: position not in the binlog directory")
