package binlogstream_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/internal/fakeprimary"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// The wire tests run the streamer on the production Source, a go-mysql
// BinlogSyncer, against a fake primary on 127.0.0.1 that serves encoded
// binlogs over the real protocol.

var wireUsers = th.Table{ID: 301, Schema: "wire", Name: "users", Columns: []th.Column{
	{Name: "id", Type: th.Int}, {Name: "name", Type: th.Varchar(64)},
}}

func wireRows(from, n int) []th.Row {
	out := make([]th.Row, n)
	for i := range out {
		out[i] = th.Row{int32(from + i), fmt.Sprintf("w-%d", from+i)}
	}
	return out
}

type wireScenario struct {
	name string
	bl   *th.Binlog
}

// wireScenarios are small on purpose: every run over the wire costs a
// connection, a registration and a KILL connection.
func wireScenarios(t *testing.T) []wireScenario {
	var out []wireScenario
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		out = append(out,
			wireScenario{string(f) + "/seed001", th.Seed001(f)},
			wireScenario{string(f) + "/split-rotate-ddl", th.NewBuilder(f, th.MaxRowsPerEvent(2)).
				Txn(func(t *th.Txn) { t.Insert(wireUsers, wireRows(1, 5)...) }).
				Rotate().
				DDL("wire", "ALTER TABLE users ADD COLUMN x INT").
				Txn(func(t *th.Txn) {
					t.Update(wireUsers, wireRows(1, 1)[0], wireRows(7, 1)[0], wireRows(2, 1)[0], wireRows(8, 1)[0])
				}).Build()},
		)
	}
	compressed, err := th.CompressTransactions(th.NewBuilder(th.MySQL, th.MaxRowsPerEvent(2)).
		Txn(func(t *th.Txn) { t.Insert(wireUsers, wireRows(1, 5)...) }).
		DDL("wire", "ALTER TABLE users ADD COLUMN x INT").
		Txn(func(t *th.Txn) { t.Delete(wireUsers, wireRows(1, 3)...) }).Build())
	require.NoError(t, err)
	return append(out, wireScenario{"mysql/transaction-payload", compressed})
}

func (sc wireScenario) start() binlogstream.ResumePosition {
	return binlogstream.StartAt(binlogstream.Position{File: sc.bl.Files[0].Name, Offset: 4})
}

func startPrimary(t *testing.T, bl *th.Binlog) *fakeprimary.Primary {
	t.Helper()
	p, err := fakeprimary.Start(bl)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	return p
}

func wireSource(t *testing.T, p *fakeprimary.Primary) binlogstream.Source {
	t.Helper()
	src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{
		DSN:      binlogstream.DSN{User: p.User(), Password: p.Password(), Host: p.Host(), Port: p.Port()},
		ServerID: 4242,
		Flavor:   string(p.Binlog().Flavor),
	})
	require.NoError(t, err)
	return src
}

type wireRun struct {
	entries []string
	tokens  []binlogstream.ResumePosition
	types   []replication.EventType
	inner   int // events inside Transaction_payload events
	events  int
	last    binlogstream.ResumePosition
	err     error
	stats   binlogstream.Stats
}

// runWire streams from start until stop events are delivered (then
// cancels, as a crash after that event) or Run fails.
func runWire(t *testing.T, src binlogstream.Source, start binlogstream.ResumePosition, stop int) wireRun {
	t.Helper()
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{
		Source: src, Start: start,
		ReconnectBackoff: time.Millisecond, MaxReconnectBackoff: 5 * time.Millisecond,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var r wireRun
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		r.events++
		r.entries = append(r.entries, entries(ev)...)
		r.tokens = append(r.tokens, ev.Resume)
		r.types = append(r.types, ev.Header.EventType)
		if pe, ok := ev.Event.(*replication.TransactionPayloadEvent); ok {
			r.inner += len(pe.Events)
		}
		if r.events == stop {
			cancel()
		}
		return nil
	})
	r.err = s.Run(ctx)
	r.last = s.ResumePosition()
	r.stats = s.Stats()
	require.NoError(t, s.Close())
	require.NotErrorIs(t, r.err, context.DeadlineExceeded, "the run timed out")
	return r
}

// deliveries is how many events the streamer delivers for the whole
// binlog: a Transaction_payload is delivered as its inner events (the
// builder's description lists them, separated by ';').
func (sc wireScenario) deliveries() int {
	n := 0
	for _, e := range sc.bl.Events {
		if e.Type == replication.TRANSACTION_PAYLOAD_EVENT {
			n += strings.Count(e.Desc, ";") + 1
		} else {
			n++
		}
	}
	return n
}

// wireBaseline streams the whole binlog over the wire and checks it
// against the same binlog streamed from a FakeSource.
func wireBaseline(t *testing.T, sc wireScenario, src binlogstream.Source) wireRun {
	t.Helper()
	n := sc.deliveries()
	full := runWire(t, src, sc.start(), n)
	require.ErrorIs(t, full.err, context.Canceled)
	require.Equal(t, n, full.events, "every event of the binlog is delivered once")
	ref := runWire(t, th.NewFakeSource(sc.bl), sc.start(), n)
	require.Equal(t, ref.entries, full.entries, "the wire delivers what the in-process fake delivers")
	if n == len(sc.bl.Events) {
		for i, e := range sc.bl.Events {
			require.Equal(t, e.Type, full.types[i], "event %s", e)
		}
	}
	return full
}

// TestWireCrashAtEveryEvent: stop after k events, keep only the token,
// resume with a new streamer and a new connection; the concatenation
// equals the uninterrupted run.
func TestWireCrashAtEveryEvent(t *testing.T) {
	for _, sc := range wireScenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel() // each scenario has its own primary
			p := startPrimary(t, sc.bl)
			src := wireSource(t, p)
			full := wireBaseline(t, sc, src)
			n := sc.deliveries()
			for k := 1; k < n; k++ {
				first := runWire(t, src, sc.start(), k)
				require.ErrorIs(t, first.err, context.Canceled)
				require.Equal(t, k, first.events)
				tok, err := binlogstream.ParseResumePosition(first.last.String())
				require.NoError(t, err)
				rest := runWire(t, src, tok, n-k)
				require.ErrorIs(t, rest.err, context.Canceled, "k=%d", k)
				require.Equal(t, full.entries, append(append([]string(nil), first.entries...), rest.entries...), "crash after event %d", k)
			}
		})
	}
}

// TestWireReconnectAtEveryEvent: the primary cuts the first dump after
// every possible number of sent events (fake Rotate and FDE included) and
// the reconnect's dump halfway again; the streamer reconnects by itself
// and delivers exactly the uninterrupted run.
func TestWireReconnectAtEveryEvent(t *testing.T) {
	for _, sc := range wireScenarios(t) {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel() // each scenario has its own primary
			p := startPrimary(t, sc.bl)
			src := wireSource(t, p)
			full := wireBaseline(t, sc, src)
			n := sc.deliveries()
			sent := len(sc.bl.Events) + len(sc.bl.Files) // what one dump from the start sends
			for drop := 1; drop < sent; drop++ {
				dumps := len(p.Dumps())
				p.InjectFaults(fakeprimary.Fault{AfterEvents: drop}, fakeprimary.Fault{AfterEvents: drop/2 + 1})
				r := runWire(t, src, sc.start(), n)
				p.ClearFaults()
				require.ErrorIs(t, r.err, context.Canceled, "drop after %d", drop)
				require.Equal(t, full.entries, r.entries, "drop after %d sent events", drop)
				assert.GreaterOrEqual(t, len(p.Dumps())-dumps, 2, "drop after %d: the streamer reconnected", drop)
				assert.Positive(t, r.stats.Reconnects, "drop after %d", drop)
			}
		})
	}
}

// TestWireNaiveResumeFails: seed 001's checkpoint (the end of the 4th
// Write_rows of a statement, after its Table_map) fails over the wire with
// go-mysql's table-map error, wrapped in *DecodeError; the streamer's own
// position for the same moment resumes fine.
func TestWireNaiveResumeFails(t *testing.T) {
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		t.Run(string(f), func(t *testing.T) {
			bl := th.Seed001(f, th.AnonymousGTID())
			fourth, ok := bl.Nth(th.RowsEventType(f, th.Insert, false), 5)
			require.True(t, ok)
			require.True(t, fourth.MidStatement)
			p := startPrimary(t, bl)
			src := wireSource(t, p)

			naive := binlogstream.StartAt(binlogstream.Position{File: fourth.File, Offset: uint64(fourth.End)})
			r := runWire(t, src, naive, -1)
			requireTableMapError(t, r.err, fourth)
			assert.Zero(t, r.events)
			assert.False(t, binlogstream.IsRetryable(r.err))
			assert.Equal(t, []string{fmt.Sprintf("%s:%d", fourth.File, fourth.End)}, p.Dumps(), "no retry")

			sc := wireScenario{bl: bl}
			full := runWire(t, src, sc.start(), len(bl.Events))
			k := fourth.Index + 1
			first := runWire(t, src, sc.start(), k)
			require.Less(t, first.last.Safe.Offset, first.last.Streamed.Offset)
			tok, err := binlogstream.ParseResumePosition(first.last.String())
			require.NoError(t, err)
			rest := runWire(t, src, tok, len(bl.Events)-k)
			assert.Equal(t, full.entries, append(first.entries, rest.entries...))
		})
	}
}

// TestWireTransactionPayload: the inner events of a compressed
// transaction are delivered one by one; they share the payload's binlog
// position, so their resume positions count inner events (and rows inside
// one), and a resume inside the payload, even between two rows of an
// inner event, is exact.
func TestWireTransactionPayload(t *testing.T) {
	sc := wireScenarios(t)[4]
	require.Equal(t, "mysql/transaction-payload", sc.name)
	p := startPrimary(t, sc.bl)
	src := wireSource(t, p)
	n := sc.deliveries()
	full := runWire(t, src, sc.start(), n)
	require.Equal(t, n, full.events)
	var payloads []th.EventInfo
	for _, e := range sc.bl.Events {
		if e.Type == replication.TRANSACTION_PAYLOAD_EVENT {
			payloads = append(payloads, e)
		}
	}
	require.Len(t, payloads, 2)
	inner := 0
	for i, tok := range full.tokens {
		if tok.Inner == 0 {
			continue
		}
		inner++
		assert.True(t, tok.Streamed.Offset == uint64(payloads[0].Start) || tok.Streamed.Offset == uint64(payloads[1].Start),
			"delivery %d: a position inside a payload is at its start", i)
	}
	// BEGIN, Table_map, 3 + 2 Rows, Xid: all but the last inner event of
	// each payload leave a position inside it.
	assert.Equal(t, (6-1)+(5-1), inner)
	assert.Equal(t, 0, full.inner, "no Transaction_payload is delivered whole")

	// A crash between two rows of an inner rows event.
	tested := 0
	for k := 1; k <= n; k++ {
		var mid binlogstream.ResumePosition
		s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: sc.start()})
		require.NoError(t, err)
		var head []string
		i := 0
		s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
			if i++; i == k {
				if binlogstream.RowChanges(ev.BinlogEvent) < 2 {
					return errStopHere
				}
				mid = ev.ResumeAfterRows(1)
				head = append(head, entries(ev)[0])
				return errStopHere
			}
			head = append(head, entries(ev)...)
			return nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = s.Run(ctx)
		cancel()
		require.ErrorIs(t, err, errStopHere)
		require.NoError(t, s.Close())
		if mid.IsZero() {
			continue
		}
		rest := runWire(t, src, mid, n-k+1)
		require.Equal(t, full.entries, append(head, rest.entries...), "crash after row 1 of delivery %d", k)
		tested++
	}
	assert.Positive(t, tested)
}
