// Package chunkread reads a key range of a table in one short
// transaction, with the binlog position the read is placed at: on
// MariaDB the consistent snapshot's own (Binlog_snapshot_file and
// _position), elsewhere a locking read between two watermarks (the
// server's binlog position before and after it). It reads on any
// connection: the source a stream comes from, or a target a copy went
// to. A chunk's SELECT runs as a prepared statement, its rows in the
// binary protocol, on a go-mysql connection, and as a query in the text
// protocol on any other; on MariaDB 10.2 and later a read's commands go
// in one round trip (pipeline.go). Either way values come in the forms
// of the text protocol's, in the types go-mysql's binlog decoder gives a rows
// event's where they differ (integers, floats, BIT), text in its
// column's charset and TIMESTAMP in UTC, so a row reads through the same
// conversions as the stream's row images.
package chunkread

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
)

// Conn is the connection a Reader reads on (a go-mysql *client.Conn).
// The Reader sets its session up and owns it while it reads.
type Conn interface {
	Execute(command string, args ...any) (*mysql.Result, error)
	ExecuteSelectStreaming(command string, result *mysql.Result, perRow client.SelectPerRowCallback, perResult client.SelectPerResultCallback) error
}

var _ Conn = (*client.Conn)(nil)

// Pos is a binlog position.
type Pos struct {
	File   string
	Offset uint64
}

// setStatus takes a row of SHOW STATUS LIKE 'binlog_snapshot_%': the
// consistent snapshot's binlog file or position.
func (p *Pos) setStatus(name, val string) {
	switch strings.ToLower(name) {
	case "binlog_snapshot_file":
		p.File = val
	case "binlog_snapshot_position":
		p.Offset, _ = strconv.ParseUint(val, 10, 64)
	}
}

// Chunk is a key range's rows as read.
type Chunk struct {
	// At is the read's binlog position: its rows hold every transaction
	// logged before it (watermark reads: see Low) and none logged after.
	At Pos
	// Low, for a watermark read, is the position taken before it: the
	// rows hold every transaction logged before Low, none logged after
	// At, and any of those in between, row by row. nil for a MariaDB
	// consistent snapshot, which is exactly at At.
	Low *Pos
	// Rows are the rows in key order, each with Table.Extra Fill values
	// at its end.
	Rows [][]any
	// Age is how long the read's transaction lived.
	Age time.Duration
	// After is the key a read received ahead started after (nil: the
	// table's first row).
	After []any
	// limit is the read's row limit when known (0: not known).
	limit int
}

// Mode is how a Reader places its reads in the binlog.
type Mode uint8

const (
	// Snapshot reads in a consistent snapshot and takes its position
	// from the server's Binlog_snapshot_file/_position (MariaDB).
	Snapshot Mode = iota
	// Watermark reads with LOCK IN SHARE MODE between two reads of the
	// server's binlog position (MySQL, or any server).
	Watermark
	// Plain reads in a consistent snapshot placed nowhere (At is zero):
	// for a server whose position the caller knows otherwise, such as a
	// copy's target that keeps no binlog.
	Plain
)

// Naive is a broken variant of watermark reads, for negative controls.
type Naive uint8

const (
	NaiveNone      Naive = iota
	NaiveLowAfter        // low taken after the SELECT (= high)
	NaiveNoLocking       // a consistent read, no locks
)

// watermarkRetries bounds the reads of one chunk that end as a deadlock
// victim or in a lock wait timeout.
const watermarkRetries = 50

// Reader reads chunks on one connection, one at a time.
type Reader struct {
	conn   Conn
	mode   Mode
	naive  Naive
	status string // the statement that reads the binlog position, once known
	// text reads chunks in the text protocol even on a connection that
	// can prepare statements.
	text bool
	// eofAfterColumns is 2 when the server ends a result's columns with
	// an EOF packet, 1 when it does not (CLIENT_DEPRECATE_EOF), 0 before
	// the first binary read.
	eofAfterColumns uint8
	pkt             []byte // the binary reads' packet buffer
	// pipeline is 1 when reads go in one round trip (see pipelined), -1
	// when they cannot, 0 before the first; steps: never (the tests'
	// comparison).
	pipeline int8
	steps    bool
	// unclosed are the statements reads in one round trip prepared,
	// closed by the next one's commands.
	unclosed []uint32
	// The reads sent ahead (ahead.go).
	ahead
	// raw reads the answers of reads in one round trip (packets.go).
	raw *rawPackets
}

// New sets conn's session up for reads in mode and returns a reader on
// it.
func New(conn Conn, mode Mode) (*Reader, error) {
	// Values as the binlog holds them: text in its column's charset,
	// TIMESTAMP in UTC (the source's TimestampStringLocation by default).
	setup := []string{"SET SESSION character_set_results = binary, SESSION time_zone = '+00:00'"}
	if mode == Watermark {
		// A read waiting for a lock keeps the shared locks it took on
		// the rows before: it gives up after 5 s and reads the chunk
		// again.
		setup = append(setup, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", "SET SESSION innodb_lock_wait_timeout = 5")
	}
	for _, q := range setup {
		if _, err := conn.Execute(q); err != nil {
			return nil, fmt.Errorf("set up the reader's session: %w", err)
		}
	}
	return &Reader{conn: conn, mode: mode}, nil
}

// SetNaive makes the reader's watermark reads naive (negative controls).
func (r *Reader) SetNaive(n Naive) { r.naive = n }

// Conn is the reader's connection.
func (r *Reader) Conn() Conn { return r.conn }

// Read reads rg's rows of t in one short transaction, with no read sent
// ahead (Send) waiting.
func (r *Reader) Read(t *Table, rg Range) (*Chunk, error) {
	if len(r.ahead.sent) > 0 {
		return nil, errors.New("chunkread: Read with reads sent ahead not received")
	}
	if r.raw != nil && !r.raw.drained() {
		return nil, errUndrained
	}
	r.ahead.last, r.ahead.lastKey = nil, nil // no chained read can follow it
	q, err := t.Query(rg)
	if err != nil {
		return nil, err
	}
	var c *Chunk
	switch r.mode {
	case Watermark:
		c, err = r.watermarkRead(t, q)
	case Plain:
		c, err = r.plainRead(t, q)
	default:
		c, err = r.snapshotRead(t, q)
	}
	if err != nil {
		return nil, err
	}
	for _, row := range c.Rows {
		t.binlogRow(row)
	}
	return c, nil
}

func (r *Reader) plainRead(t *Table, q string) (*Chunk, error) {
	if c, ok, err := r.tryPipeline(t, q, false); ok {
		return c, err
	}
	return r.consistent(func() (*Chunk, error) {
		c := &Chunk{}
		return c, r.selectRows(t, q, c)
	})
}

func (r *Reader) snapshotRead(t *Table, q string) (*Chunk, error) {
	if c, ok, err := r.tryPipeline(t, q, true); ok {
		return c, err
	}
	return r.consistent(func() (*Chunk, error) { return r.snapshotRows(t, q) })
}

// tryPipeline reads in one round trip where the connection can (see
// pipelined); ok false: read it command by command, as on a server that
// refused to prepare the SELECT, which is read in the text protocol from
// then on.
func (r *Reader) tryPipeline(t *Table, q string, status bool) (c *Chunk, ok bool, err error) {
	cc, ok := r.pipelined()
	if !ok {
		return nil, false, nil
	}
	c, err = r.pipelineRead(cc, t, q, status)
	if cannotPrepare(err) {
		r.text = true
		return nil, false, nil
	}
	return c, true, err
}

// consistent runs read in one consistent-snapshot transaction and
// records how long the transaction lived.
func (r *Reader) consistent(read func() (*Chunk, error)) (*Chunk, error) {
	began := time.Now()
	if _, err := r.conn.Execute("START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
		return nil, err
	}
	c, err := read()
	if _, cerr := r.conn.Execute("COMMIT"); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	c.Age = time.Since(began)
	return c, nil
}

// snapshotRows runs the status query and the SELECT inside the
// transaction.
func (r *Reader) snapshotRows(t *Table, q string) (*Chunk, error) {
	st, err := r.conn.Execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
	if err != nil {
		return nil, err
	}
	c := &Chunk{}
	for i := range st.RowNumber() {
		name, _ := st.GetString(i, 0)
		val, _ := st.GetString(i, 1)
		c.At.setStatus(name, strings.Clone(val))
	}
	if c.At.File == "" {
		return nil, errNoSnapshotFile
	}
	return c, r.selectRows(t, q, c)
}

func (r *Reader) watermarkRead(t *Table, q string) (*Chunk, error) {
	if r.naive != NaiveNoLocking {
		q += " LOCK IN SHARE MODE"
	}
	for attempt := 1; ; attempt++ {
		c, err := r.once(t, q)
		if err == nil {
			return c, nil
		}
		var me *mysql.MyError
		if errors.As(err, &me) && (me.Code == mysql.ER_LOCK_DEADLOCK || me.Code == mysql.ER_LOCK_WAIT_TIMEOUT) && attempt < watermarkRetries {
			continue
		}
		if attempt > 1 {
			return nil, fmt.Errorf("read %d times: %w", attempt, err)
		}
		return nil, err
	}
}

// once reads one chunk between its watermarks.
func (r *Reader) once(t *Table, q string) (*Chunk, error) {
	low, err := r.Position()
	if err != nil {
		return nil, err
	}
	c := &Chunk{}
	began := time.Now()
	if _, err := r.conn.Execute("START TRANSACTION"); err != nil {
		return nil, err
	}
	if err := r.selectRows(t, q, c); err != nil {
		_, _ = r.conn.Execute("ROLLBACK")
		return nil, err
	}
	if _, err := r.conn.Execute("COMMIT"); err != nil {
		return nil, err
	}
	c.Age = time.Since(began)
	if c.At, err = r.Position(); err != nil {
		return nil, err
	}
	if r.naive == NaiveLowAfter {
		low = c.At
	}
	c.Low = &low
	return c, nil
}

// Position reads the server's binlog position: SHOW MASTER STATUS, or
// SHOW BINARY LOG STATUS on MySQL 8.4, which has only that.
func (r *Reader) Position() (Pos, error) {
	var p Pos
	stmts := []string{r.status}
	if r.status == "" {
		stmts = []string{"SHOW MASTER STATUS", "SHOW BINARY LOG STATUS"}
	}
	var err error
	for _, stmt := range stmts {
		var rs *mysql.Result
		if rs, err = r.conn.Execute(stmt); err != nil {
			var me *mysql.MyError
			if errors.As(err, &me) && me.Code == mysql.ER_PARSE_ERROR {
				continue
			}
			return p, fmt.Errorf("read the binlog position: %w", err)
		}
		r.status = stmt
		if rs.RowNumber() == 0 {
			return p, errors.New("the server reports no binlog position (log_bin=OFF?): chunks cannot be placed in the stream")
		}
		file, _ := rs.GetString(0, 0)
		pos, perr := rs.GetUint(0, 1)
		if perr != nil || file == "" {
			return p, fmt.Errorf("read the binlog position: %s answered no file and position", stmt)
		}
		p.Offset = pos
		p.File = strings.Clone(file)
		return p, nil
	}
	return p, fmt.Errorf("read the binlog position: %w", err)
}

// KeyAfter reads, outside any transaction, the key of the row offset
// places after the key after (nil: from the first; offset 0: the first
// row after it), in the key's order: the key columns' values as Read
// gives them, or nil when the table has no such row. It scans the key's
// index only, to find where a range of rows ends before it is read.
func (r *Reader) KeyAfter(t *Table, after []any, offset int) ([]any, error) {
	q, err := t.KeyQuery(after, offset)
	if err != nil {
		return nil, err
	}
	var sl slab
	var result mysql.Result
	var key []any
	err = r.conn.ExecuteSelectStreaming(q, &result, func(row []mysql.FieldValue) error {
		key = sl.row(row, result.Fields, 0, nil)
		return nil
	}, nil)
	return key, err
}

// selectRows streams the SELECT q into c.Rows: in the binary protocol
// when the connection can prepare statements (its integers, floats and
// temporal values come as numbers, not text to parse), otherwise in
// the text protocol. Both give the same values.
func (r *Reader) selectRows(t *Table, q string, c *Chunk) error {
	if bc, ok := r.conn.(binaryConn); ok && !r.text {
		return r.selectBinary(bc, t, q, c)
	}
	var sl slab
	var result mysql.Result
	return r.conn.ExecuteSelectStreaming(q, &result, func(row []mysql.FieldValue) error {
		r := sl.row(row, result.Fields, t.Extra, t.Fill)
		for _, j := range t.floats {
			if f, ok := r[j].(float64); ok {
				r[j] = sl.float32(float32(f))
			}
		}
		c.Rows = append(c.Rows, r)
		return nil
	}, nil)
}
