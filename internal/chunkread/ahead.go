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

// Reads sent ahead. A snapshot reads a table's chunks one after another,
// each from the last key of the one before, so one read's commands
// cannot name the next one's range before its rows are in. The server
// can carry the key over itself: a read sent ahead also assigns each
// row's key to session variables (@bls_hi0, @bls_hi1, ...), and the read
// chained after it first copies them (SELECT @bls_lo0 := @bls_hi0, ...)
// and reads the rows after @bls_lo. One connection's commands run in
// order, so the next read's commands can be written before this read's
// rows are read, and the server reads the next chunk while the client
// converts this one.
//
// The copied bound is the chained read's first answer. Receive checks it
// against the last key of the read before, as the client read it, and a
// chained read that started anywhere else fails with ErrChainBroken, as
// does every chained read after it: the caller reads that range again.
// Only keys of integer columns are carried over (Ahead), whose values a
// session variable holds and compares exactly.

// ErrChainBroken is a chained read that did not start right after the
// last key of the read before it (or whose read before failed): its rows
// are not the range the caller asked for. A read sent ahead that the
// server or a proxy refused to prepare fails with it too: Ahead is then
// false, and the range is to be read again one read at a time.
var ErrChainBroken = errors.New("a chained read did not start after the last key of the read before it")

// ahead is a Reader's reads sent and not received.
type ahead struct {
	sent []sentRead
	// last is the table of the last read received, and lastKey the key
	// the read chained after it must start after: the read's last key,
	// or, with no row, its own start; nil when no chained read can
	// follow it (it failed, or it started at the table's first row and
	// found none).
	last    *Table
	lastKey []any
	// chainErr is the error of the last read received, which a read
	// chained after it fails with.
	chainErr error
	// broken is the error that left the connection out of step: every
	// read after it fails with it.
	broken error
	// freed is when the last read's answers were all read: the server
	// starts the next read's transaction at the latest then.
	freed time.Time
	fault chainFault
}

// sentRead is a read whose commands are written.
type sentRead struct {
	t       *Table
	chained bool
	after   []any // an explicit read's start (nil: the table's first row)
	sent    time.Time
	fault   bool // SetChainFault's command goes first
	limit   int
}

// SetChainFault makes every every-th chained read sent clear the bound
// the server carries over before the read copies it, and calls hit for
// each; with noCheck, Receive takes the bound as it comes. Tests only:
// the check refuses those reads, and without it they read nothing.
func (r *Reader) SetChainFault(every int, noCheck bool, hit func()) {
	r.ahead.fault = chainFault{every: every, noCheck: noCheck, hit: hit}
}

type chainFault struct {
	every, n int
	noCheck  bool
	hit      func()
}

// Ahead reports whether reads of t can be sent before the answers of the
// reads sent before them are read (Send): reads in one round trip (see
// pipelined) of a key of integer columns.
func (r *Reader) Ahead(t *Table) bool {
	if _, ok := r.pipelined(); !ok {
		return false
	}
	for _, k := range t.Kinds {
		if k != Int {
			return false
		}
	}
	return true
}

// Sent is the number of reads sent whose answers are not received.
func (r *Reader) Sent() int { return len(r.ahead.sent) }

// Send writes the commands of a read of t, as Read would read it, before
// the answers of the reads sent earlier are received: of rg's rows, or,
// chained, of the rg.Limit rows after the last key of the read sent just
// before it, which must be of t (rg.After is then not used). rg.Through
// must be nil, and Ahead(t) true. Receive returns the reads in the order
// they were sent.
func (r *Reader) Send(t *Table, rg Range, chained bool) error {
	cc, ok := r.pipelined()
	switch {
	case !ok || !r.Ahead(t) || rg.Through != nil:
		return fmt.Errorf("chunkread: reads of %s cannot be sent ahead", t.ID())
	case r.ahead.broken != nil:
		return r.ahead.broken
	case chained && r.before() != t:
		return fmt.Errorf("chunkread: a chained read of %s follows no read of it", t.ID())
	}
	var pre, q string
	var fault [][]byte
	if chained {
		pre, q = t.chainBound(), t.chainQuery(rg.Limit)
		if f := &r.ahead.fault; f.every > 0 {
			if f.n++; f.n%f.every == 0 {
				fault = append(fault, command(mysql.COM_QUERY, "SET "+hiVar(0)+" = NULL"))
				f.hit()
			}
		}
	} else {
		var err error
		if pre, err = t.chainStart(rg.After); err != nil {
			return err
		}
		if q, err = t.query(t.assignList(), rg, 0); err != nil {
			return err
		}
	}
	cmds := r.readCommands(append(fault, command(mysql.COM_QUERY, pre)), q, r.mode == Snapshot)
	if err := writeCommands(cc, cmds); err != nil {
		r.ahead.broken = err
		return err
	}
	r.ahead.sent = append(r.ahead.sent, sentRead{t: t, chained: chained, after: rg.After, sent: time.Now(), fault: len(fault) > 0, limit: rg.Limit})
	return nil
}

// before is the table of the last read sent, or else received.
func (r *Reader) before() *Table {
	if n := len(r.ahead.sent); n > 0 {
		return r.ahead.sent[n-1].t
	}
	return r.ahead.last
}

// Receive reads the answers of the oldest read sent: its chunk, with
// After the key it started after. A server's error, or ErrChainBroken,
// leaves the connection in step for the reads after it; a chained read
// after a read that failed fails with the same error. Any other error
// (the connection's) is every later read's too.
func (r *Reader) Receive() (*Chunk, error) {
	if len(r.ahead.sent) == 0 {
		return nil, errors.New("chunkread: no read sent")
	}
	s := r.ahead.sent[0]
	r.ahead.sent = r.ahead.sent[1:]
	if r.ahead.broken != nil {
		return nil, r.ahead.broken
	}
	want := r.ahead.lastKey
	if r.ahead.last != s.t {
		want = nil
	}
	var bound []string
	pre := []func(binaryConn) error{func(cc binaryConn) error {
		if !s.chained {
			return readOK(cc)
		}
		var err error
		bound, err = r.readBound(cc, len(s.t.Key))
		return err
	}}
	if s.fault {
		pre = append([]func(binaryConn) error{readOK}, pre...)
	}
	c, err := r.readAnswers(r.conn.(*client.Conn), s.t, r.mode == Snapshot, s.limit, pre)
	if err == nil && len(r.ahead.sent) == 0 && !r.raw.drained() {
		err = errUndrained
	}
	began := s.sent
	if r.ahead.freed.After(began) {
		began = r.ahead.freed
	}
	r.ahead.freed = time.Now()
	after := s.after
	if err == nil && s.chained {
		// A chained read starts after the key the read before it ended
		// at, or it fails as that read did.
		switch {
		case want == nil && r.ahead.chainErr != nil:
			err = r.ahead.chainErr
		case want == nil || !sameBound(bound, want) && !r.ahead.fault.noCheck:
			err = ErrChainBroken
		}
		after = want
	}
	if cannotPrepare(err) {
		// A server or proxy that refuses prepared statements: its reads
		// go in the text protocol, one at a time, from the boundary.
		r.text, err = true, ErrChainBroken
	}
	if err != nil {
		var me *mysql.MyError
		var re *rowError
		if !errors.Is(err, ErrChainBroken) && !errors.As(err, &me) && !errors.As(err, &re) {
			r.ahead.broken = err
		}
		r.ahead.last, r.ahead.lastKey, r.ahead.chainErr = s.t, nil, err
		return nil, err
	}
	for _, row := range c.Rows {
		s.t.binlogRow(row)
	}
	c.After = after
	c.Age = time.Since(began)
	r.ahead.last, r.ahead.lastKey, r.ahead.chainErr = s.t, after, nil
	if n := len(c.Rows); n > 0 {
		key := make([]any, len(s.t.Key))
		for j, i := range s.t.Key {
			key[j] = c.Rows[n-1][i]
		}
		r.ahead.lastKey = key
	}
	return c, nil
}

// readBound reads the answer of chainBound: the bound's n values as
// text (a NULL as "NULL").
func (r *Reader) readBound(cc binaryConn, n int) ([]string, error) {
	var bound []string
	err := r.readTextRows(cc, "the chained read's bound", func(vals []string) error {
		bound = append(bound, vals...)
		return nil
	})
	if err == nil && len(bound) != n {
		err = fmt.Errorf("the chained read's bound has %d values for a key of %d columns", len(bound), n)
	}
	return bound, err
}

// sameBound reports whether the bound the server copied (readBound) is
// key, whose values are int64 or uint64.
func sameBound(bound []string, key []any) bool {
	if len(bound) != len(key) {
		return false
	}
	for j, v := range key {
		var s string
		switch x := v.(type) {
		case int64:
			s = strconv.FormatInt(x, 10)
		case uint64:
			s = strconv.FormatUint(x, 10)
		default:
			return false
		}
		if bound[j] != s {
			return false
		}
	}
	return true
}

// The session variables a read sent ahead leaves its last key in, and
// the read chained after it starts after.
func hiVar(j int) string { return "@bls_hi" + strconv.Itoa(j) }
func loVar(j int) string { return "@bls_lo" + strconv.Itoa(j) }

// assignList is the select list of a read sent ahead: the columns, then
// each key column assigned to its variable, row by row in key order, so
// that they hold the last row's key once the rows are sent.
func (t *Table) assignList() string {
	var b strings.Builder
	b.WriteString(t.selectList)
	for j, i := range t.Key {
		b.WriteString(", " + hiVar(j) + " := " + QuoteIdent(t.Columns[i].Name))
	}
	return b.String()
}

// chainStart sets the variables to an explicit read's start, so that
// they hold it when the read finds no row (NULL: the first row).
func (t *Table) chainStart(after []any) (string, error) {
	sets := make([]string, len(t.Key))
	for j := range t.Key {
		lit := "NULL"
		if after != nil {
			if len(after) != len(t.Key) {
				return "", fmt.Errorf("boundary of %s has %d values for a key of %d columns", t.ID(), len(after), len(t.Key))
			}
			var err error
			if lit, err = t.Literal(j, after[j]); err != nil {
				return "", err
			}
		}
		sets[j] = hiVar(j) + " = " + lit
	}
	return "SET " + strings.Join(sets, ", "), nil
}

// chainBound copies the last key of the read before into the chained
// read's start, and returns it.
func (t *Table) chainBound() string {
	sel := make([]string, len(t.Key))
	for j := range t.Key {
		sel[j] = loVar(j) + " := " + hiVar(j)
	}
	return "SELECT " + strings.Join(sel, ", ")
}

// chainQuery is the SELECT of the limit rows after the chained start.
func (t *Table) chainQuery(limit int) string {
	lo := make([]string, len(t.Key))
	for j := range t.Key {
		lo[j] = loVar(j)
	}
	return t.selectWhere(t.assignList(), []string{t.compareTo(lo, ">", false)}, limit, 0)
}
