package publish

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/tailline"
)

// The headers of a transaction published as more than one unit (atomic
// batch, or message on a stream without atomic batches). A consumer
// holds the whole transaction once it has TxnCountHeader messages with
// its TxnHeader.
const (
	// TxnHeader is the transaction's identity: the MsgID of its first line.
	TxnHeader = "Binlog-Txn"
	// TxnIndexHeader is the message's place in the transaction, from 0.
	TxnIndexHeader = "Binlog-Txn-Index"
	// TxnCountHeader is how many messages the transaction has.
	TxnCountHeader = "Binlog-Txn-Count"
	// TxnFromHeader is the resume token right before the transaction
	// (the previous message's, or where the stream started): a publisher
	// that finds the stream ending inside a transaction reads it again
	// from there and leaves out the messages already stored.
	TxnFromHeader = "Binlog-Txn-From"
)

// PublisherHeader, on the last message of each publish, names the
// publisher instance that stored it: after a publish whose answer was
// lost, a publisher tells its own stored batch from another's.
const PublisherHeader = "Binlog-Publisher"

// MaxBatch is the most messages an atomic batch holds (the server's limit).
const MaxBatch = 1000

// The headers of a FormatDebezium message, whose payload is the
// record's value (empty for a tombstone).
const (
	// ResumeHeader is the resume token right after the record.
	ResumeHeader = "Binlog-Resume"
	// KeyHeader is the record's key, a JSON object; absent for a record
	// without one (a table without a primary key).
	KeyHeader = "Binlog-Key"
	// SnapshotHeader is "begun" on the records published once a snapshot
	// read was, while the snapshot is in progress: a publisher resuming
	// there marks no further read "first".
	SnapshotHeader = "Binlog-Snapshot"
	// ProgressHeader is "true" on a progress message (--tables): no
	// record, only the position past other tables' events, on the
	// subject PREFIX._._.
	ProgressHeader = "Binlog-Progress"
)

// message is one line or record on its way to the stream.
type message struct {
	subject string
	data    []byte // the line, with its newline, or the record's value
	token   []byte // the resume token after it, in data for a line
	// A FormatDebezium record's: dbz marks one; key is its key (nil
	// without); index its place among its row change's records (a
	// primary-key change gives three, all with one token); snap that a
	// snapshot read was published before it (SnapshotHeader); progress
	// that it is a progress message.
	dbz, snap, progress bool
	key                 []byte
	index               int
}

// msgID is m's Nats-Msg-Id: MsgID of its token, and for a record after
// the first of its row change (which share the token) of the token and
// its index.
func (m *message) msgID() string {
	if m.index == 0 {
		return MsgID(m.token)
	}
	return MsgID(append(append(bytes.Clone(m.token), '#'), strconv.Itoa(m.index)...))
}

// units cuts a transaction into what is published at once: batches of up
// to max messages (1 on a stream without atomic batches), each message
// with its Nats-Msg-Id, and the transaction headers on every message when
// there is more than one unit. from is the token right before the
// transaction. skip leaves out the first skip messages (stored already).
// It is cutUnits with every unit kept.
func units(txn []message, from []byte, max, skip int) [][]*nats.Msg {
	var out [][]*nats.Msg
	_ = cutUnits(len(txn), sliceReader(txn), txn[0].token, from, max, skip, func(u []*nats.Msg) error {
		out = append(out, u)
		return nil
	})
	return out
}

// marker makes the messages of a transaction of n messages; with an id
// (the transaction is split) each carries the transaction headers.
type marker struct {
	id   string
	n    int
	from string
}

// msg is the message of m, the transaction's i-th.
func (mk marker) msg(m message, i int) *nats.Msg {
	msg := nats.NewMsg(m.subject)
	msg.Data = m.data
	msg.Header.Set(jetstream.MsgIDHeader, m.msgID())
	if m.dbz {
		msg.Header.Set(ResumeHeader, string(m.token))
		if m.key != nil {
			msg.Header.Set(KeyHeader, string(m.key))
		}
		if m.snap {
			msg.Header.Set(SnapshotHeader, "begun")
		}
		if m.progress {
			msg.Header.Set(ProgressHeader, "true")
		}
	}
	if mk.id != "" {
		msg.Header.Set(TxnHeader, mk.id)
		msg.Header.Set(TxnIndexHeader, strconv.Itoa(i))
		msg.Header.Set(TxnCountHeader, strconv.Itoa(mk.n))
		msg.Header.Set(TxnFromHeader, mk.from)
	}
	return msg
}

// resumePoint is where a publisher continues a stream.
type resumePoint struct {
	// From is the position to stream from, Token its token.
	From  binlogstream.ResumePosition
	Token []byte
	// Skip is how many messages of the first transaction from From the
	// stream holds already.
	Skip int
	// Format is the stream's; SnapshotBegun that a Debezium snapshot
	// read is stored (SnapshotHeader).
	Format        Format
	SnapshotBegun bool
}

// resumeAfter is where to continue a stream whose last message under
// the prefix has this payload and these headers: after its line, or,
// when it ends a unit inside a transaction, from before the transaction
// with the stored messages skipped.
func resumeAfter(data []byte, hdr nats.Header) (resumePoint, error) {
	pt, err := resumeAt(data, hdr)
	if err != nil {
		return pt, err
	}
	pt.Format = FormatLines
	if hdr.Get(ResumeHeader) != "" {
		pt.Format, pt.SnapshotBegun = FormatDebezium, hdr.Get(SnapshotHeader) != ""
	}
	return pt, nil
}

func resumeAt(data []byte, hdr nats.Header) (resumePoint, error) {
	tok, ok := []byte(hdr.Get(ResumeHeader)), true
	if len(tok) == 0 {
		tok, ok = tailline.Token(data)
	}
	if !ok {
		return resumePoint{}, fmt.Errorf("its payload is not a binlog-tail line with a resume token, and it has no %s header", ResumeHeader)
	}
	if c := hdr.Get(TxnCountHeader); c != "" {
		n, err1 := strconv.Atoi(c)
		i, err2 := strconv.Atoi(hdr.Get(TxnIndexHeader))
		if err := errors.Join(err1, err2); err != nil || i < 0 || i >= n {
			return resumePoint{}, fmt.Errorf("bad %s/%s headers %q/%q", TxnIndexHeader, TxnCountHeader, hdr.Get(TxnIndexHeader), c)
		}
		if i+1 < n {
			tok = []byte(hdr.Get(TxnFromHeader))
			from, err := binlogstream.ParseResumePosition(string(tok))
			if err != nil {
				return resumePoint{}, fmt.Errorf("%s: %w", TxnFromHeader, err)
			}
			return resumePoint{From: from, Token: tok, Skip: i + 1}, nil
		}
	}
	from, err := binlogstream.ParseResumePosition(string(tok))
	if err != nil {
		return resumePoint{}, err
	}
	return resumePoint{From: from, Token: tok}, nil
}
