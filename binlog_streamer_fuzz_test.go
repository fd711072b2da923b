package binlogstream_test

import (
	"context"
	"testing"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// fuzzBinlog turns bytes into a binlog: a flavor, a rows-per-event split,
// then one operation per byte.
func fuzzBinlog(data []byte) (*th.Binlog, []byte) {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		c := data[0]
		data = data[1:]
		return c
	}
	f := th.MySQL
	if next()%2 == 1 {
		f = th.MariaDB
	}
	opts := []th.Option{th.MaxRowsPerEvent(int(next()%4) + 1)}
	compress := false
	if c := next(); c%5 == 1 {
		opts = append(opts, th.ZeroLogPos())
	} else if c%5 == 2 && f == th.MariaDB {
		opts = append(opts, th.CompressedRows())
	} else if c%5 == 3 && f == th.MySQL {
		compress = true // every transaction in a Transaction_payload
	}
	b := th.NewBuilder(f, opts...)
	id := 1
	rows := func(n int) []th.Row { r := userRows(id, n); id += n; return r }
	ops := int(next()%12) + 1
	for i := 0; i < ops; i++ {
		c := next()
		n := int(c>>4)%5 + 1
		switch c % 9 {
		case 0:
			b.Txn(func(t *th.Txn) { t.Insert(users, rows(n)...) })
		case 1:
			b.Txn(func(t *th.Txn) { t.Update(users, rows(1)[0], rows(1)[0]) })
		case 2:
			b.Txn(func(t *th.Txn) { t.Delete(users, rows(n)...) })
		case 3:
			b.Txn(func(t *th.Txn) {
				t.MultiTable(th.Inserted(users, rows(n)...), th.Inserted(orders, orderRows(id, n)...))
			})
		case 4:
			b.DDL("app", "ALTER TABLE users ADD COLUMN c INT")
		case 5:
			b.Rotate()
		case 6:
			b.EmptyTxn()
		case 7:
			b.RolledBack(func(t *th.Txn) { t.Insert(orders, orderRows(id, n)...) })
		case 8:
			b.Txn(func(t *th.Txn) {
				t.Insert(users, rows(n)...)
				t.Delete(users, rows(1)...)
			})
		}
	}
	bl := b.Build()
	if compress {
		c, err := th.CompressTransactions(bl)
		if err != nil {
			panic(err)
		}
		bl = c
	}
	return bl, data
}

// FuzzCrashResume checks the streamer against the naive reference model,
// a re-scan from the start: for a random binlog, crashes after random
// events (between rows too) and connection drops, the concatenated
// deliveries equal one uninterrupted pass.
func FuzzCrashResume(f *testing.F) {
	f.Add([]byte{0, 1, 0, 5, 0x30, 0x13, 0x04, 0x25, 0x50, 3, 2, 1, 9, 7})
	f.Add([]byte{1, 2, 2, 8, 0x33, 0x15, 0x18, 0x22, 0x46, 0x57, 0x60, 0x71, 5, 4, 3, 2, 1})
	f.Add([]byte{1, 0, 1, 11, 0x40, 0x43, 0x45, 0x47, 0x48, 0x41, 0x42, 0x40, 0x43, 0x40, 0x43, 0x40, 0xff, 0x10, 0x80})
	f.Add([]byte{0, 3, 0, 3, 0x43, 0x43, 0x43, 200, 100, 50})
	f.Add([]byte{0, 1, 3, 6, 0x30, 0x13, 0x48, 0x45, 0x23, 0x07, 2, 0x41, 3, 0x42, 1, 0x83, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		bl, rest := fuzzBinlog(data)
		sc := scenario{bl: bl}
		last := bl.Files[len(bl.Files)-1]
		end := binlogstream.Position{File: last.Name, Offset: uint64(len(last.Data))}
		full := stream(t, sc.source(), sc.start(), -1, func(_ int, ev binlogstream.Event) error {
			if r := ev.Resume; r.Streamed == end && r.Rows == 0 && r.Inner == 0 {
				return errStopHere // everything delivered
			}
			return nil
		})
		n := full.events
		if full.err != context.Canceled || n < len(bl.Events) {
			t.Fatalf("uninterrupted run delivered %d events (binlog has %d): %v", n, len(bl.Events), full.err)
		}
		var got []string
		tok := sc.start()
		delivered := 0
		for i := 0; delivered < n; i++ {
			step := n - delivered
			var c byte
			if i < len(rest) {
				c = rest[i]
				step = int(c)%(n-delivered) + 1
			}
			src := sc.source()
			if c&0x80 != 0 {
				src.FailStream(0, int(c%17)+1) // and the connection drops once
			}
			var mid binlogstream.ResumePosition
			r := stream(t, src, roundTrip(t, tok), step, func(k int, ev binlogstream.Event) error {
				// Sometimes crash between two rows of the last event.
				if k == step && c&0x40 != 0 && binlogstream.RowChanges(ev.BinlogEvent) > 1 {
					mid = ev.ResumeAfterRows(1)
					return errCrash
				}
				return nil
			})
			got = append(got, r.entries...)
			delivered += r.events
			tok = r.last
			if !mid.IsZero() {
				got = append(got, full.entries[len(got)])
				tok = mid
			} else if r.err != context.Canceled {
				t.Fatalf("step %d: %v", i, r.err)
			}
		}
		if len(got) != len(full.entries) {
			t.Fatalf("got %d entries, want %d", len(got), len(full.entries))
		}
		for i := range got {
			if got[i] != full.entries[i] {
				t.Fatalf("entry %d: got %q, want %q", i, got[i], full.entries[i])
			}
		}
	})
}

var errCrash = crashError("crash")

type crashError string

func (e crashError) Error() string { return string(e) }
