package chunkread

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
)

// A chunk's transaction in one round trip. On MariaDB 10.2 and later a
// COM_STMT_EXECUTE of statement id -1 runs the statement the connection
// prepared last, so every command of a read can be written before the
// first answer comes back: START TRANSACTION WITH CONSISTENT SNAPSHOT,
// the status query (Snapshot reads), COM_STMT_PREPARE of the SELECT, its
// COM_STMT_EXECUTE and COMMIT. The server runs them in order, as it
// would one by one, and the answers are read in the same order. A
// server error in one answer does not stop the ones after it: each is
// read, so the connection stays in step, and the first error is the
// read's.

// lastPrepared is the statement id that names the statement prepared
// last on the connection (MariaDB 10.2 and later).
const lastPrepared = 0xFFFFFFFF

// pipelined reports whether r's reads go in one round trip, and its
// connection when they do: an uncompressed go-mysql connection (the
// answers' sequence numbers are set here, and a compressed protocol
// numbers its frames apart) to MariaDB 10.2 or later, in the binary
// protocol, in Snapshot or Plain mode.
func (r *Reader) pipelined() (*client.Conn, bool) {
	if r.text || r.steps || r.mode == Watermark {
		return nil, false
	}
	cc, ok := r.conn.(*client.Conn)
	if !ok || cc.Compression != mysql.MYSQL_COMPRESS_NONE {
		return nil, false
	}
	if r.pipeline == 0 {
		r.pipeline = -1
		if mariaDBSince(cc.GetServerVersion(), "10.2.0") {
			r.pipeline = 1
		}
	}
	return cc, r.pipeline == 1
}

// mariaDBSince reports whether version (a server's greeting, which
// MariaDB 10 and later may prefix with "5.5.5-") is MariaDB's, at least
// least.
func mariaDBSince(version, least string) bool {
	if !strings.Contains(strings.ToLower(version), "mariadb") {
		return false
	}
	version = strings.TrimPrefix(version, "5.5.5-")
	c, err := mysql.CompareServerVersions(version, least)
	return err == nil && c >= 0
}

// pipelineRead reads the SELECT q of t in one consistent-snapshot
// transaction, in one round trip; status: place it by the snapshot's
// binlog position.
func (r *Reader) pipelineRead(cc *client.Conn, t *Table, q string, status bool) (*Chunk, error) {
	began := time.Now()
	if err := writeCommands(cc, r.readCommands(nil, q, status)); err != nil {
		return nil, err
	}
	c, err := r.readAnswers(cc, t, status, 0, nil)
	if err == nil && !r.raw.drained() {
		err = errUndrained
	}
	if err != nil {
		return nil, err
	}
	c.Age = time.Since(began)
	return c, nil
}

// readCommands are the commands of a read of the SELECT q in one
// transaction, after the commands pre: the closing of the statements
// earlier reads prepared, pre, the transaction's start, the status query
// (status), the SELECT prepared and executed, and COMMIT.
func (r *Reader) readCommands(pre [][]byte, q string, status bool) [][]byte {
	var cmds [][]byte
	for _, id := range r.unclosed { // no answer
		cmds = append(cmds, closePacket(id))
	}
	r.unclosed = r.unclosed[:0]
	cmds = append(cmds, pre...)
	cmds = append(cmds, command(mysql.COM_QUERY, "START TRANSACTION WITH CONSISTENT SNAPSHOT"))
	if status {
		cmds = append(cmds, command(mysql.COM_QUERY, "SHOW STATUS LIKE 'binlog_snapshot_%'"))
	}
	return append(cmds, command(mysql.COM_STMT_PREPARE, q), executePacket(lastPrepared), command(mysql.COM_QUERY, "COMMIT"))
}

// readAnswers reads the answers of readCommands' commands in order:
// first pre's, each by its reader, then the read's. The first error is
// the read's. A server's error, or a row the reader could not convert,
// leaves the connection in step and the answers after it are read; any
// other (the connection's) ends the read at once, the connection out of
// step.
func (r *Reader) readAnswers(conn *client.Conn, t *Table, status bool, limit int, pre []func(binaryConn) error) (*Chunk, error) {
	cc, _ := r.rawAnswer(conn) // pipelined: uncompressed
	// The rows' packets are views of the raw buffer: none is kept.
	defer func() { r.pkt = nil }()
	var first error
	answer := func(read func() error) bool {
		cc.answer() // each command's answer is numbered from 1
		err := read()
		var me *mysql.MyError
		var re *rowError
		if err != nil && !errors.As(err, &me) && !errors.As(err, &re) {
			first = err
			return false
		}
		if first == nil {
			first = err
		}
		return true
	}
	for _, p := range pre {
		if !answer(func() error { return p(cc) }) {
			return nil, first
		}
	}
	c := &Chunk{limit: limit}
	if !answer(func() error { return readOK(cc) }) {
		return nil, first
	}
	if status && !answer(func() error { return r.readStatus(cc, &c.At) }) {
		return nil, first
	}
	var id uint32
	prepared := false
	if !answer(func() error {
		var err error
		id, err = r.readPrepared(cc)
		prepared = err == nil
		return err
	}) {
		return nil, first
	}
	if !answer(func() error { return r.readBinaryResult(cc, t, c) }) {
		return nil, first
	}
	if !answer(func() error { return readOK(cc) }) {
		return nil, first
	}
	if prepared {
		r.unclosed = append(r.unclosed, id) // closed by the next read's commands
	}
	if first != nil {
		return nil, first
	}
	if status && c.At.File == "" {
		return nil, errNoSnapshotFile
	}
	return c, nil
}

var errNoSnapshotFile = errors.New("the server reports no Binlog_snapshot_file (not MariaDB, or log_bin=OFF)")

// writeCommands writes the command packets cmds, each with its header's
// room, in one write to the connection when each fits one packet.
func writeCommands(cc *client.Conn, cmds [][]byte) error {
	n := 0
	for _, p := range cmds {
		if len(p)-4 >= mysql.MaxPayloadLen {
			n = -1
			break
		}
		n += len(p)
	}
	if n < 0 {
		for _, p := range cmds {
			cc.ResetSequence()
			if err := cc.WritePacket(p); err != nil {
				return err
			}
		}
		return nil
	}
	buf := make([]byte, 0, n)
	for _, p := range cmds {
		size := len(p) - 4
		buf = append(buf, byte(size), byte(size>>8), byte(size>>16), 0) // sequence 0: a command's first packet
		buf = append(buf, p[4:]...)
	}
	_, err := cc.Write(buf)
	return err
}

// closePacket is COM_STMT_CLOSE of statement id, with its header's room.
func closePacket(id uint32) []byte {
	p := make([]byte, 4, 9)
	p = append(p, mysql.COM_STMT_CLOSE)
	return binary.LittleEndian.AppendUint32(p, id)
}

// command is a command packet of text arg, with its header's room.
func command(cmd byte, arg string) []byte {
	p := make([]byte, 4, 5+len(arg))
	p = append(p, cmd)
	return append(p, arg...)
}

// readOK reads an answer that holds no result set: an OK or an error.
func readOK(cc binaryConn) error {
	data, err := cc.ReadPacket()
	if err != nil {
		return err
	}
	switch data[0] {
	case mysql.OK_HEADER:
		return nil
	case mysql.ERR_HEADER:
		return errPacket(data)
	}
	return mysql.ErrMalformPacket
}

// readResultHead reads the start of a result set, its column count and
// definitions (parsed when parse), and fails on an error or an answer
// with no result set; what names the statement.
func (r *Reader) readResultHead(cc binaryConn, what string, parse bool) ([]*mysql.Field, error) {
	data, err := cc.ReadPacket()
	if err != nil {
		return nil, err
	}
	switch data[0] {
	case mysql.ERR_HEADER:
		return nil, errPacket(data)
	case mysql.OK_HEADER:
		return nil, fmt.Errorf("%s returned no result set", what)
	}
	n, _, _ := mysql.LengthEncodedInt(data)
	var fields []*mysql.Field
	if parse {
		fields = make([]*mysql.Field, n)
	}
	return fields, r.readColumns(cc, int(n), fields)
}

// readColumns reads n column definitions and the EOF after them when
// the server sends one.
func (r *Reader) readColumns(cc binaryConn, n int, fields []*mysql.Field) error {
	for i := range n {
		data, err := cc.ReadPacket()
		if err != nil {
			return err
		}
		if fields != nil {
			fields[i] = &mysql.Field{}
			if err := fields[i].Parse(data); err != nil {
				return err
			}
		}
	}
	if n > 0 && r.eofAfter(cc) {
		_, err := cc.ReadPacket()
		return err
	}
	return nil
}

// eofAfter reports whether the server ends a list of columns with an
// EOF packet (no CLIENT_DEPRECATE_EOF).
func (r *Reader) eofAfter(cc binaryConn) bool {
	if r.eofAfterColumns == 0 {
		r.eofAfterColumns = 1
		if !strings.Contains(cc.CapabilityString(), "CLIENT_DEPRECATE_EOF") {
			r.eofAfterColumns = 2
		}
	}
	return r.eofAfterColumns == 2
}

// readStatus reads the text result set of SHOW STATUS LIKE
// 'binlog_snapshot_%' into at.
func (r *Reader) readStatus(cc binaryConn, at *Pos) error {
	return r.readTextRows(cc, "the status query", func(vals []string) error {
		if len(vals) != 2 {
			return mysql.ErrMalformPacket
		}
		at.setStatus(vals[0], vals[1])
		return nil
	})
}

// readTextRows reads a text result set and hands row each row's values
// (a NULL as "NULL"); what names the statement.
func (r *Reader) readTextRows(cc binaryConn, what string, row func(vals []string) error) error {
	if _, err := r.readResultHead(cc, what, false); err != nil {
		return err
	}
	var vals []string
	for {
		data, err := cc.ReadPacket()
		if err != nil {
			return err
		}
		switch data[0] {
		case mysql.EOF_HEADER:
			return nil
		case mysql.ERR_HEADER:
			return errPacket(data)
		}
		vals = vals[:0]
		for p := 0; p < len(data); {
			v, null, m, err := mysql.LengthEncodedString(data[p:])
			if err != nil {
				return err
			}
			p += m
			if null {
				vals = append(vals, "NULL")
			} else {
				vals = append(vals, string(v))
			}
		}
		if err := row(vals); err != nil {
			return err
		}
	}
}

// readPrepared reads a COM_STMT_PREPARE's answer and returns the
// statement's id.
func (r *Reader) readPrepared(cc binaryConn) (uint32, error) {
	data, err := cc.ReadPacket()
	if err != nil {
		return 0, err
	}
	switch {
	case data[0] == mysql.ERR_HEADER:
		return 0, errPacket(data)
	case data[0] != mysql.OK_HEADER || len(data) < 9:
		return 0, mysql.ErrMalformPacket
	}
	id := binary.LittleEndian.Uint32(data[1:])
	cols := int(binary.LittleEndian.Uint16(data[5:]))
	params := int(binary.LittleEndian.Uint16(data[7:]))
	if err := r.readColumns(cc, params, nil); err != nil {
		return 0, err
	}
	return id, r.readColumns(cc, cols, nil)
}
