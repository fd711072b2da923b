package chunkread

import (
	"errors"
	"fmt"
	"net"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
)

// rawPackets reads the answers of a read in one round trip (pipeline.go,
// ahead.go), and a prepared SELECT's rows (selectBinary), straight from
// the connection's socket into one buffer, and hands each row's packet
// out where it lies in it, where go-mysql copies every packet through
// three buffers on its way. It reads only between a read's commands and
// its last answer: go-mysql's own buffer is empty then, since the server
// sends nothing unasked and every answer before was read. It must be
// empty itself when go-mysql reads again (drained).
type rawPackets struct {
	*client.Conn
	nc   net.Conn
	buf  []byte
	r, w int    // buf[r:w] is read from the socket and not handed out
	seq  uint8  // the sequence number of the next packet
	big  []byte // a packet of several (a payload of 16 MiB or more)
}

// rawBuffer is the size of the socket reads.
const rawBuffer = 256 << 10

// rawAnswer is r's raw reader of the answer to a command just written
// on cc, numbered from 1; ok false: cc is not an uncompressed go-mysql
// connection, and go-mysql reads it.
func (r *Reader) rawAnswer(cc binaryConn) (raw *rawPackets, ok bool) {
	c, ok := cc.(*client.Conn)
	if !ok || c.Conn == nil || c.Compression != mysql.MYSQL_COMPRESS_NONE {
		return nil, false
	}
	if r.raw == nil {
		r.raw = &rawPackets{Conn: c, nc: c.Conn.Conn, buf: make([]byte, rawBuffer)}
	}
	r.raw.answer()
	return r.raw, true
}

// answer starts the reading of a command's answer: its packets are
// numbered from 1.
func (p *rawPackets) answer() { p.seq = 1 }

// drained reports whether every byte read from the socket was handed out.
func (p *rawPackets) drained() bool { return p.r == p.w }

// fill makes n bytes from p.r on read from the socket.
func (p *rawPackets) fill(n int) error {
	if p.w-p.r >= n {
		return nil
	}
	if len(p.buf)-p.r < n {
		if n > len(p.buf) {
			nb := make([]byte, max(n, 2*len(p.buf)))
			p.w = copy(nb, p.buf[p.r:p.w])
			p.buf = nb
		} else {
			p.w = copy(p.buf, p.buf[p.r:p.w])
		}
		p.r = 0
	}
	for p.w-p.r < n {
		m, err := p.nc.Read(p.buf[p.w:])
		p.w += m
		if err != nil && p.w-p.r < n {
			return fmt.Errorf("%w: read an answer: %w", mysql.ErrBadConn, err)
		}
	}
	return nil
}

// next is the next packet's payload, valid until the next call.
func (p *rawPackets) next() ([]byte, error) {
	p.big = p.big[:0]
	for {
		if err := p.fill(4); err != nil {
			return nil, err
		}
		h := p.buf[p.r : p.r+4]
		n := int(uint32(h[0]) | uint32(h[1])<<8 | uint32(h[2])<<16)
		if h[3] != p.seq {
			return nil, fmt.Errorf("%w: packet sequence %d, want %d", mysql.ErrBadConn, h[3], p.seq)
		}
		p.seq++
		if err := p.fill(4 + n); err != nil {
			return nil, err
		}
		data := p.buf[p.r+4 : p.r+4+n]
		p.r += 4 + n
		if n < mysql.MaxPayloadLen && len(p.big) == 0 {
			return data, nil
		}
		p.big = append(p.big, data...)
		if n < mysql.MaxPayloadLen {
			return p.big, nil
		}
	}
}

// ReadPacket is the next packet, in memory of its own.
func (p *rawPackets) ReadPacket() ([]byte, error) {
	data, err := p.next()
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), data...), nil
}

// ReadPacketReuseMem is the next packet where it lies, valid until the
// next read (dst is not used).
func (p *rawPackets) ReadPacketReuseMem([]byte) ([]byte, error) { return p.next() }

// ResetSequence numbers the next packet 0.
func (p *rawPackets) ResetSequence() { p.seq = 0 }

var errUndrained = errors.New("chunkread: the server sent more than the read's answers")
