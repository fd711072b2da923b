package binlogbuild

import (
	"context"
	"errors"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// RawDump is a dump of a FakeSource that hands out the bytes a server
// writes to the wire (each event without the protocol's OK byte) instead
// of decoded events, so a fake server can send them over a real
// connection. It is the same dump as a Stream from OpenFile or OpenGTID:
// same preamble, same GTID filtering, same growth on Append; FailStream
// and the heartbeat options of the source do not apply to it (the server
// that uses it does its own).
type RawDump struct{ st *fakeStream }

// OpenRawFile starts a dump at pos as OpenFile does. A server refusal
// (error 1236) comes back from the first Next.
func (s *FakeSource) OpenRawFile(ctx context.Context, pos mysql.Position) (*RawDump, error) {
	st, err := s.OpenFile(ctx, pos)
	if err != nil {
		return nil, err
	}
	return &RawDump{st: st.(*fakeStream)}, nil
}

// OpenRawGTID starts a GTID dump after set as OpenGTID does.
func (s *FakeSource) OpenRawGTID(ctx context.Context, set mysql.GTIDSet) (*RawDump, error) {
	st, err := s.OpenGTID(ctx, set)
	if err != nil {
		return nil, err
	}
	return &RawDump{st: st.(*fakeStream)}, nil
}

// Next returns the next event to send (the binlog's own bytes or a fresh
// preamble event: not to be modified), blocking while the dump is caught
// up, until the binlog grows, ctx is done (ctx.Err()) or the dump is
// closed (ErrStreamClosed). A server error is a *mysql.MyError and is
// sticky. Not safe for concurrent use.
func (d *RawDump) Next(ctx context.Context) ([]byte, error) {
	if d.st.err != nil {
		return nil, d.st.err
	}
	select {
	case <-d.st.closed:
		return nil, ErrStreamClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return d.st.nextRaw(ctx)
}

// TryNext returns the next event if one is ready without waiting; ok is
// false when the dump is caught up (then call Next to wait).
func (d *RawDump) TryNext() (raw []byte, ok bool, err error) {
	if d.st.err != nil {
		return nil, false, d.st.err
	}
	raw, err = d.st.nextRaw(canceled)
	if errors.Is(err, context.Canceled) {
		return nil, false, nil
	}
	return raw, err == nil, err
}

// Heartbeat returns a heartbeat event (artificial, log_pos the offset the
// dump has reached in its current file) to send while idle. Call it from
// the goroutine that calls Next.
func (d *RawDump) Heartbeat() []byte { return d.st.heartbeat() }

// Close ends the dump; a blocked Next returns ErrStreamClosed. Safe to call
// from any goroutine, more than once.
func (d *RawDump) Close() error { return d.st.Close() }

// canceled is a done context: nextRaw returns at once when it would wait.
var canceled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()
