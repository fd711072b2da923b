package binlogstream_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// withHole rewrites a one-file binlog as if hole bytes of events the dump leaves
// out (as MariaDB leaves out Annotate_rows for a client that does not ask
// for them) stood before event i: every later event's header LogPos is its
// offset plus the hole, modulo 2^32, as a server past 4 GiB writes it. The
// bytes a dump sends are the same; only the positions pass 4 GiB.
func withHole(t *testing.T, bl *th.Binlog, i int, hole uint64) *th.Binlog {
	t.Helper()
	require.Len(t, bl.Files, 1)
	f := bl.Files[0]
	data := append([]byte(nil), f.Data...)
	for _, e := range bl.Events[i:] {
		raw := data[e.Start:e.End]
		require.Equal(t, e.End, binary.LittleEndian.Uint32(raw[13:]))
		copy(raw, th.PatchLogPos(raw, uint32(uint64(e.End)+hole), bl.Checksum))
	}
	out := *bl
	out.Files = []th.File{{Name: f.Name, Data: data, StartGTIDs: f.StartGTIDs}}
	return &out
}

// TestWirePast4GiB: over the wire, a file whose positions pass 4 GiB
// (LogPos wraps) is followed in 64 bits, tokens past 4 GiB are exact, and
// a resume whose dump would have to start past 4 GiB is refused with
// ErrOffsetTooLarge (COM_BINLOG_DUMP carries 32 bits), not wrapped.
func TestWirePast4GiB(t *testing.T) {
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		t.Run(string(f), func(t *testing.T) {
			bl := th.NewBuilder(f, th.MaxRowsPerEvent(2)).
				Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 3)...) }).
				Txn(func(t *th.Txn) { t.Insert(users, userRows(10, 6)...) }).
				Txn(func(t *th.Txn) { t.Delete(users, userRows(1, 3)...) }).Build()
			// The hole comes before the second transaction's first event.
			second := 0
			for i, e := range bl.Events {
				if e.Group == 2 {
					second = i
					break
				}
			}
			require.Positive(t, second)
			// Just under 4 GiB: the wrapped LogPos is then below where the
			// event would end without the hole, which is how a tracker can
			// tell a wrap from a gap (a gap of 4 GiB or more cannot be).
			const hole = 1<<32 - 64
			big := withHole(t, bl, second, hole)
			sc := wireScenario{name: string(f), bl: big}
			p := startPrimary(t, big)
			src := wireSource(t, p)
			n := len(big.Events)
			full := runWire(t, src, sc.start(), n)
			require.Equal(t, n, full.events)
			for i, e := range big.Events {
				want := uint64(e.End)
				if i >= second {
					want += hole
				}
				require.Equal(t, want, full.tokens[i].Streamed.Offset, "event %s", e)
			}
			ref := runWire(t, th.NewFakeSource(bl), sc.start(), n)
			require.Equal(t, len(ref.entries), len(full.entries))

			for k := 1; k < n; k++ {
				first := runWire(t, src, sc.start(), k)
				tok, err := binlogstream.ParseResumePosition(first.last.String())
				require.NoError(t, err)
				rest := runWire(t, src, tok, n-k)
				if tok.Safe.Offset > 1<<32-1 {
					require.ErrorIs(t, rest.err, binlogstream.ErrOffsetTooLarge, "k=%d", k)
					assert.Zero(t, rest.events)
					continue
				}
				require.ErrorIs(t, rest.err, context.Canceled, "k=%d", k)
				require.Equal(t, full.entries, append(append([]string(nil), first.entries...), rest.entries...), "crash after event %d", k)
			}
			// A token past 4 GiB really occurs, with its safe point there too.
			last := full.tokens[n-1]
			assert.Greater(t, last.Safe.Offset, uint64(1<<32))
		})
	}
}
