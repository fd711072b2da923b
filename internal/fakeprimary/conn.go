package fakeprimary

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/go-mysql-org/go-mysql/server"

	"github.com/binlogstream/binlogstream/internal/binlogbuild"
)

// conn is one client connection and the server.Handler that serves it.
// Only its serve goroutine touches sc and userVars; kill may be called
// from anywhere.
type conn struct {
	p       *Primary
	nc      net.Conn
	refused Refusal
	ctx     context.Context // cancelled when the connection is killed
	cancel  context.CancelFunc
	id      atomic.Uint32 // connection id, 0 until the handshake is done

	sc       *server.Conn
	userVars map[string]string // SET @name = value, name lower case
	dumped   bool              // a dump ran: the connection ends after it
}

var _ server.Handler = (*conn)(nil)

// kill cuts the connection: blocked reads and writes fail, a waiting dump
// wakes up.
func (c *conn) kill() {
	// Close the socket first: a dump woken by the cancel must find it
	// closed, or go-mysql's server writes an error packet into the middle
	// of a half-sent event.
	_ = c.nc.Close()
	c.cancel()
}

func (c *conn) serve() {
	defer c.p.wg.Done()
	defer c.p.untrack(c)
	defer c.kill()
	if c.refused == RefuseClose {
		return
	}
	auth := server.NewInMemoryAuthenticationHandler()
	password := c.p.password
	if c.refused == RefuseAuth {
		// Another password, so the login fails with 1045 as on a real
		// server (an unknown user gets go-mysql's 1449).
		password += "-refused"
	}
	if err := auth.AddUser(c.p.user, password); err != nil {
		return
	}
	sc, err := c.p.srv.NewCustomizedConn(c.nc, auth, c)
	if err != nil {
		return
	}
	c.sc = sc
	c.id.Store(sc.ConnectionID())
	// A server ends the connection after a dump, whatever ended the dump.
	for !c.dumped && !sc.Closed() {
		if err := sc.HandleCommand(); err != nil {
			return
		}
	}
}

// UseDB accepts any schema.
func (c *conn) UseDB(string) error { return nil }

// HandleQuery answers the queries of a replica and of a failover check.
func (c *conn) HandleQuery(query string) (*mysql.Result, error) {
	c.p.logQuery(query)
	return c.query(query)
}

// HandleFieldList is not supported.
func (c *conn) HandleFieldList(string, string) ([]*mysql.Field, error) {
	return nil, mysql.NewError(mysql.ER_UNKNOWN_COM_ERROR, "fakeprimary: COM_FIELD_LIST is not supported")
}

// HandleStmtPrepare is not supported.
func (c *conn) HandleStmtPrepare(string) (int, int, any, error) {
	return 0, 0, nil, mysql.NewError(mysql.ER_UNKNOWN_COM_ERROR, "fakeprimary: prepared statements are not supported")
}

// HandleStmtExecute is not supported.
func (c *conn) HandleStmtExecute(any, string, []any) (*mysql.Result, error) {
	return nil, mysql.NewError(mysql.ER_UNKNOWN_COM_ERROR, "fakeprimary: prepared statements are not supported")
}

// HandleStmtClose has nothing to close.
func (c *conn) HandleStmtClose(any) error { return nil }

// HandleOtherCommand serves the replication commands. It gets them because
// conn does not implement server.ReplicationHandler (see the package doc).
func (c *conn) HandleOtherCommand(cmd byte, data []byte) error {
	switch cmd {
	case mysql.COM_REGISTER_SLAVE:
		if len(data) < 4 {
			return mysql.ErrMalformPacket
		}
		return nil
	case mysql.COM_BINLOG_DUMP:
		return c.binlogDump(data)
	case mysql.COM_BINLOG_DUMP_GTID:
		return c.binlogDumpGTID(data)
	}
	return mysql.NewDefaultError(mysql.ER_UNKNOWN_COM_ERROR)
}

// binlogDump is COM_BINLOG_DUMP: pos(4) flags(2) server_id(4) file name.
// On MariaDB a @slave_connect_state set before turns it into a GTID dump.
func (c *conn) binlogDump(data []byte) error {
	c.dumped = true
	if len(data) < 10 {
		return mysql.ErrMalformPacket
	}
	pos := mysql.Position{Pos: binary.LittleEndian.Uint32(data), Name: string(data[10:])}
	flags := binary.LittleEndian.Uint16(data[4:])
	if state, ok := c.userVars["slave_connect_state"]; ok && c.p.Binlog().Flavor == binlogbuild.MariaDB {
		set, err := mysql.ParseMariadbGTIDSet(state)
		if err != nil {
			return fatal(fmt.Sprintf("Error: connecting slave requested to start from GTID %s, which is not in the master's binlog", state))
		}
		return c.dump("gtid "+set.String(), flags, func(src *binlogbuild.FakeSource) (*binlogbuild.RawDump, error) {
			return src.OpenRawGTID(c.ctx, set)
		})
	}
	return c.dump(fmt.Sprintf("%s:%d", pos.Name, pos.Pos), flags, func(src *binlogbuild.FakeSource) (*binlogbuild.RawDump, error) {
		return src.OpenRawFile(c.ctx, pos)
	})
}

// binlogDumpGTID is MySQL's COM_BINLOG_DUMP_GTID: flags(2) server_id(4)
// name_len(4) name pos(8) data_len(4) encoded GTID set.
func (c *conn) binlogDumpGTID(data []byte) error {
	c.dumped = true
	if c.p.Binlog().Flavor != binlogbuild.MySQL {
		return mysql.NewDefaultError(mysql.ER_UNKNOWN_COM_ERROR)
	}
	if len(data) < 10 {
		return mysql.ErrMalformPacket
	}
	flags := binary.LittleEndian.Uint16(data)
	n := int(binary.LittleEndian.Uint32(data[6:]))
	rest := data[10:]
	if len(rest) < n+12 {
		return mysql.ErrMalformPacket
	}
	rest = rest[n+8:]
	size := int(binary.LittleEndian.Uint32(rest))
	if len(rest) < 4+size {
		return mysql.ErrMalformPacket
	}
	set, err := mysql.DecodeMysqlGTIDSet(rest[4 : 4+size])
	if err != nil {
		return mysql.ErrMalformPacket
	}
	return c.dump("gtid "+set.String(), flags, func(src *binlogbuild.FakeSource) (*binlogbuild.RawDump, error) {
		return src.OpenRawGTID(c.ctx, set)
	})
}

// dump sends the events of one dump until the connection dies, a fault
// cuts it, or the server has an error to send (returned, so that
// HandleCommand writes it as an ERR packet).
func (c *conn) dump(desc string, flags uint16, open func(*binlogbuild.FakeSource) (*binlogbuild.RawDump, error)) error {
	src, bl, fault := c.p.startDump(desc)
	if bl.Checksum && c.userVars["master_binlog_checksum"] == "" && c.userVars["source_binlog_checksum"] == "" {
		// A client that did not declare itself checksum-aware.
		return fatal("Slave can not handle replication events with the checksum that master is configured to log")
	}
	d, err := open(src)
	if err != nil {
		return err
	}
	defer d.Close()

	// The client sends nothing during a dump: a read that returns means
	// it went away (or kill closed the socket). The connection ends after
	// the dump, so nothing else reads from it any more.
	c.p.wg.Add(1)
	go func() {
		defer c.p.wg.Done()
		var b [1]byte
		_, _ = c.nc.Read(b[:])
		c.cancel()
	}()

	// Frames are buffered and flushed whenever the dump is about to wait
	// (caught up, stalled, or a fault), as a server's net buffer is: one
	// write per event would make the fake the bottleneck of benchmarks.
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	period := c.heartbeatPeriod()
	skipAnnotate := bl.Flavor == binlogbuild.MariaDB && flags&replication.BINLOG_SEND_ANNOTATE_ROWS_EVENT == 0
	var sent int
	var written int64
	for {
		if fault != nil && fault.AfterBytes <= 0 && sent >= fault.AfterEvents {
			if bw.Flush() != nil {
				return errKilled
			}
			if err := c.fault(fault); err != nil {
				return err
			}
			fault = nil
		}
		raw, ready, err := d.TryNext()
		if err != nil {
			return err
		}
		if !ready {
			if bw.Flush() != nil {
				return errKilled
			}
			if raw, err = c.next(d, period); err != nil {
				return err
			}
		}
		if skipAnnotate && replication.EventType(raw[4]) == replication.MARIADB_ANNOTATE_ROWS_EVENT {
			continue
		}
		if stalled, _ := c.p.stallState(); stalled {
			if bw.Flush() != nil {
				return errKilled
			}
		}
		if err := c.waitUnstalled(); err != nil {
			return err
		}
		if fault == nil || fault.AfterBytes <= 0 {
			n, err := c.writeEvent(bw, raw)
			if err != nil {
				return errKilled
			}
			written += int64(n)
			sent++
			continue
		}
		frame := c.frame(append([]byte{mysql.OK_HEADER}, raw...))
		if written+int64(len(frame)) >= fault.AfterBytes {
			cut := fault.AfterBytes - written
			if _, err := bw.Write(frame[:cut]); err != nil || bw.Flush() != nil {
				return errKilled
			}
			written += cut
			frame = frame[cut:]
			if err := c.fault(fault); err != nil {
				return err
			}
			fault = nil
		}
		if _, err := bw.Write(frame); err != nil {
			return errKilled
		}
		written += int64(len(frame))
		sent++
	}
}

// next returns the next event to send, or a heartbeat after period idle.
func (c *conn) next(d *binlogbuild.RawDump, period time.Duration) ([]byte, error) {
	ctx := c.ctx
	if period > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(c.ctx, period)
		defer cancel()
	}
	raw, err := d.Next(ctx)
	if err == nil {
		return raw, nil
	}
	if c.ctx.Err() != nil {
		return nil, errKilled
	}
	if period > 0 && errors.Is(err, context.DeadlineExceeded) {
		return d.Heartbeat(), nil
	}
	return nil, err
}

// writeEvent writes one event packet (OK byte + raw) to w as frame does,
// without building it first; it returns the bytes written.
func (c *conn) writeEvent(w *bufio.Writer, raw []byte) (int, error) {
	if len(raw)+1 >= mysql.MaxPayloadLen {
		frame := c.frame(append([]byte{mysql.OK_HEADER}, raw...))
		return w.Write(frame)
	}
	n := len(raw) + 1
	hdr := [5]byte{byte(n), byte(n >> 8), byte(n >> 16), c.sc.Sequence, mysql.OK_HEADER}
	c.sc.Sequence++
	if _, err := w.Write(hdr[:]); err != nil {
		return 0, err
	}
	if _, err := w.Write(raw); err != nil {
		return 0, err
	}
	return n + 4, nil
}

// frame cuts a packet payload into protocol frames (3-byte length, 1-byte
// sequence), byte for byte as packet.Conn.WritePacket does, and advances
// the connection's sequence number.
func (c *conn) frame(payload []byte) []byte {
	out := make([]byte, 0, len(payload)+4)
	for {
		n := min(len(payload), mysql.MaxPayloadLen)
		out = append(out, byte(n), byte(n>>8), byte(n>>16), c.sc.Sequence)
		c.sc.Sequence++
		out = append(out, payload[:n]...)
		payload = payload[n:]
		if n < mysql.MaxPayloadLen {
			return out
		}
	}
}

// fault applies f: cut the connection, or stall until Unstall.
func (c *conn) fault(f *Fault) error {
	if !f.Stall {
		c.kill()
		return errKilled
	}
	_, wake := c.p.stallState()
	select {
	case <-wake:
		return nil
	case <-c.ctx.Done():
		return errKilled
	}
}

// waitUnstalled blocks while the primary is stalled.
func (c *conn) waitUnstalled() error {
	for {
		stalled, wake := c.p.stallState()
		if !stalled {
			return nil
		}
		select {
		case <-wake:
		case <-c.ctx.Done():
			return errKilled
		}
	}
}

// heartbeatPeriod is what the replica asked for with SET
// @master_heartbeat_period (nanoseconds, as MySQL reads it).
func (c *conn) heartbeatPeriod() time.Duration {
	for _, name := range []string{"source_heartbeat_period", "master_heartbeat_period"} {
		if v, ok := c.userVars[name]; ok {
			if ns, err := strconv.ParseUint(v, 10, 63); err == nil {
				return time.Duration(ns)
			}
		}
	}
	return 0
}
