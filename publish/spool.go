package publish

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/nats-io/nats.go"
)

// DefaultSpoolBytes is Config.SpoolBytes when 0.
const DefaultSpoolBytes = 64 << 20

// spool holds the open transaction's messages: in memory while their
// subjects and lines take up to limit bytes, then all of them in a file
// in dir. The file is unlinked as soon as it is created, so that nothing
// outlives the process; only its descriptor is kept.
type spool struct {
	dir   string
	limit int64

	msgs []message // in memory, until the spool spills
	size int64     // bytes of msgs' subjects and lines
	n    int       // messages in all
	// first and last are the first and last messages' tokens.
	first, last []byte

	f       *os.File // the messages once spilled, else nil
	w       *bufio.Writer
	written int64
	rec     []byte
}

func newSpool(dir string, limit int64) *spool {
	if dir == "" {
		dir = os.TempDir()
	}
	if limit <= 0 {
		limit = DefaultSpoolBytes
	}
	return &spool{dir: dir, limit: limit}
}

// spoolBuffer is the size of a spool file's write and read buffers.
const spoolBuffer = 256 << 10

// add appends m, spilling the messages to the file once the ones in
// memory take more than limit bytes.
func (s *spool) add(m message) error {
	if s.n == 0 {
		s.first = m.token
	}
	s.n++
	s.last = m.token
	if s.f != nil {
		return s.write(m)
	}
	s.msgs = append(s.msgs, m)
	s.size += int64(len(m.subject) + len(m.data) + len(m.key))
	if s.size <= s.limit {
		return nil
	}
	return s.spill()
}

// spill creates the file and moves the messages in memory into it.
func (s *spool) spill() error {
	f, err := os.CreateTemp(s.dir, "binlog-publish-spool-*")
	if err != nil {
		return fmt.Errorf("spool directory %s: %w", s.dir, err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return fmt.Errorf("spool directory %s: unlinking %s: %w", s.dir, f.Name(), err)
	}
	s.f, s.w, s.written = f, bufio.NewWriterSize(f, spoolBuffer), 0
	for _, m := range s.msgs {
		if err := s.write(m); err != nil {
			return err
		}
	}
	s.msgs, s.size = nil, 0
	s.first = bytes.Clone(s.first) // not holding on to its line's buffer
	return nil
}

// write appends m to the file: its subject, line and token, each after
// its length as a uvarint, then its flags (flagsOf) and, for a record,
// its index and key (after its length).
func (s *spool) write(m message) error {
	b := binary.AppendUvarint(s.rec[:0], uint64(len(m.subject)))
	b = append(b, m.subject...)
	b = binary.AppendUvarint(b, uint64(len(m.data)))
	b = append(b, m.data...)
	b = binary.AppendUvarint(b, uint64(len(m.token)))
	b = append(b, m.token...)
	b = binary.AppendUvarint(b, flagsOf(m))
	if m.dbz {
		b = binary.AppendUvarint(b, uint64(m.index))
		b = binary.AppendUvarint(b, uint64(len(m.key)))
		b = append(b, m.key...)
	}
	s.rec = b
	if _, err := s.w.Write(b); err != nil {
		return fmt.Errorf("spool file in %s: %w", s.dir, err)
	}
	s.written += int64(len(b))
	return nil
}

// txn is the ended transaction of the spool's messages, right after the
// token from, cut for batches of max, its first skip stored already. A
// spilled transaction of more than max messages is read back one unit at
// a time while it is published (txn.file); a smaller one is read back
// here. The spool keeps its messages until taken hands them over, so
// that a txn that was not queued can be made again.
func (s *spool) txn(ctx context.Context, from []byte, skip, max int) (txn, error) {
	if s.f == nil {
		return newTxn(ctx, s.msgs, from, skip, max), nil
	}
	if err := s.w.Flush(); err != nil {
		return txn{}, fmt.Errorf("spool file in %s: %w", s.dir, err)
	}
	file := &spoolFile{f: s.f, dir: s.dir, size: s.written, n: s.n}
	if s.n <= max {
		msgs, err := file.reader().read(nil, s.n)
		if err != nil {
			return txn{}, err
		}
		return newTxn(ctx, msgs, from, skip, max), nil
	}
	return txn{ctx: ctx, n: s.n, skip: skip, first: s.first, last: bytes.Clone(s.last), from: bytes.Clone(from), file: file}, nil
}

// taken empties the spool once t, which txn made, is queued: t owns the
// file when it reads its units from it, else the file is closed.
func (s *spool) taken(t txn) {
	if s.f != nil && t.file == nil {
		s.f.Close()
	}
	*s = spool{dir: s.dir, limit: s.limit, rec: s.rec[:0]}
}

// discard drops the spool's messages and closes its file.
func (s *spool) discard() { s.taken(txn{}) }

// spoolFile is an ended transaction's n messages in an unlinked file.
type spoolFile struct {
	f    *os.File
	dir  string
	size int64
	n    int
}

// close closes the file, which frees its space.
func (f *spoolFile) close() {
	if f != nil {
		f.f.Close()
	}
}

// reader reads the file from its start.
func (f *spoolFile) reader() *spoolReader {
	return &spoolReader{file: f, r: bufio.NewReaderSize(io.NewSectionReader(f.f, 0, f.size), spoolBuffer)}
}

// eachUnit reads the messages back a unit at a time and hands each
// unit's messages, made only then, to send (cutUnits).
func (f *spoolFile) eachUnit(first, from []byte, size, skip int, send func([]*nats.Msg) error) error {
	return cutUnits(f.n, f.reader().read, first, from, size, skip, send)
}

// cutUnits hands send, one after the other, the units of a transaction
// of n messages that next reads in order (k at a time, appended to dst),
// each unit's messages made only when it is its turn: the units, ids and
// headers that units makes from the same messages (first is the first
// message's token, from the token before the transaction), the first
// skip messages left out. Only one unit's messages exist at a time.
func cutUnits(n int, next func(dst []message, k int) ([]message, error), first, from []byte, size, skip int,
	send func([]*nats.Msg) error) error {
	size = max(size, 1)
	mk := marker{n: n, from: string(from)}
	if n > size {
		mk.id = MsgID(first)
	}
	var buf []message
	for start := 0; start < n; start += size {
		end := min(start+size, n)
		var err error
		if buf, err = next(buf[:0], end-start); err != nil {
			return err
		}
		if end <= skip {
			continue // a stored unit
		}
		u := make([]*nats.Msg, 0, end-start)
		for i := max(start, skip); i < end; i++ {
			u = append(u, mk.msg(buf[i-start], i))
		}
		if err := send(u); err != nil {
			return err
		}
	}
	return nil
}

// sliceReader is cutUnits' next over messages in memory.
func sliceReader(msgs []message) func(dst []message, k int) ([]message, error) {
	return func(dst []message, k int) ([]message, error) {
		dst = append(dst, msgs[:k]...)
		msgs = msgs[k:]
		return dst, nil
	}
}

// spoolReader reads a spool file's messages in order.
type spoolReader struct {
	file *spoolFile
	r    *bufio.Reader
	done int // messages read
}

// read appends the next k messages to dst.
func (r *spoolReader) read(dst []message, k int) ([]message, error) {
	for range k {
		var f [3][]byte // subject, line, token
		for j := range f {
			var err error
			if f[j], err = r.field(); err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return dst, fmt.Errorf("spool file in %s: reading message %d of %d: %w", r.file.dir, r.done+1, r.file.n, err)
			}
		}
		m := message{subject: string(f[0]), data: f[1], token: f[2]}
		if err := r.record(&m); err != nil {
			return dst, fmt.Errorf("spool file in %s: reading message %d of %d: %w", r.file.dir, r.done+1, r.file.n, err)
		}
		dst = append(dst, m)
		r.done++
	}
	return dst, nil
}

// The bits of a spooled message's flags.
const (
	flagDebezium = 1 << iota
	flagSnapshot
	flagProgress
	flagKey
)

func flagsOf(m message) uint64 {
	var f uint64
	if m.dbz {
		f |= flagDebezium
	}
	if m.snap {
		f |= flagSnapshot
	}
	if m.progress {
		f |= flagProgress
	}
	if m.key != nil {
		f |= flagKey
	}
	return f
}

// record reads the flags after m's token and, for a record, its index
// and key.
func (r *spoolReader) record(m *message) error {
	f, err := binary.ReadUvarint(r.r)
	if err != nil || f&flagDebezium == 0 {
		return noEOF(err)
	}
	m.dbz, m.snap, m.progress = true, f&flagSnapshot != 0, f&flagProgress != 0
	i, err := binary.ReadUvarint(r.r)
	if err != nil {
		return noEOF(err)
	}
	m.index = int(i)
	key, err := r.field()
	if f&flagKey != 0 {
		m.key = key
	}
	return noEOF(err)
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// field reads one field, after its length.
func (r *spoolReader) field() ([]byte, error) {
	n, err := binary.ReadUvarint(r.r)
	if err != nil {
		return nil, err
	}
	if n > uint64(r.file.size) {
		return nil, fmt.Errorf("a field of %d bytes in a file of %d", n, r.file.size)
	}
	b := make([]byte, n)
	_, err = io.ReadFull(r.r, b)
	return b, err
}
